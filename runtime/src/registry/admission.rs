//! The run's [`crate::sandbox::Admission`]: what its authority says about
//! each component before it is compiled, and how `oci://` names become
//! files.
//!
//! - **Registries.** An `oci://` name is judged (`Request::Registry`: the
//!   policy's `registries`), its digest taken from the name or from its
//!   pin in the run's `lobster.lock` (a run never follows a tag), and it is
//!   fetched through the local cache ([`crate::registry::Fetcher`]) with the
//!   operator's credentials and TLS settings.
//! - **The cache.** A cached component (`components/<blake3>.wasm`) whose
//!   bytes no longer hash to its name is refused (and removed): the cache
//!   is checked at every load, not only when it is filled.
//! - **Signatures.** The signature beside the file (`FILE.minisig`) is
//!   verified against the policy's `[signers] keys` and judged
//!   (`Request::Signed`): a signature by a trusted key that does not verify
//!   is always refused; with `require_signed`, so are unsigned components
//!   and unknown signers.
//!
//! Every refusal names the step (or the reference) and the fix, and
//! happens before the component is compiled.

use super::{Access, Cache, Credentials, Fetcher, Pin, Reference, RegistryError};
use crate::kernel::{Authority, Request, SignatureCheck};
use crate::policy::lock::{LockFile, LOCK_FILE};
use crate::registry;
use crate::sandbox::{Admission, SandboxError};
use crate::signing::{self, Verdict};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// See the module docs.
pub struct Admitter {
    authority: Arc<Authority>,
    cache: Cache,
    resolve_tags: bool,
    fetched: Mutex<Vec<(String, Pin)>>,
}

impl Admitter {
    /// The admission of a run under `authority` (the run's policy over the
    /// run's working directory: grants play no part in what is admitted),
    /// caching pulled components in `state_dir` (see [`Cache::in_state_dir`]).
    pub fn new(authority: Arc<Authority>, state_dir: &Path) -> Admitter {
        Admitter {
            authority,
            cache: Cache::in_state_dir(state_dir),
            resolve_tags: false,
            fetched: Mutex::new(Vec::new()),
        }
    }

    /// Resolve a reference that names no digest at its registry, ignoring
    /// `lobster.lock` (for `lobster lock`, which pins anew), instead of
    /// refusing it.
    pub fn resolving_tags(mut self) -> Admitter {
        self.resolve_tags = true;
        self
    }

    /// Every reference fetched so far, with the digest and blake3 used
    /// (what `lobster lock` pins).
    pub fn fetched(&self) -> Vec<(String, Pin)> {
        self.fetched.lock().map(|v| v.clone()).unwrap_or_default()
    }

    /// The registry access the operator configured: the policy's
    /// `insecure_registries` and `registry_ca_file`, and the credentials
    /// of the process environment and docker's config file.
    pub fn access(policy: &crate::kernel::Policy) -> Result<Access, RegistryError> {
        let credentials =
            Credentials::from_operator(|k| std::env::var(k).ok(), &policy.insecure_registries)
                .map_err(|e| RegistryError::Config(e.to_string()))?;
        Ok(Access {
            insecure: policy.insecure_registries.clone(),
            ca_file: policy.registry_ca_file(),
            credentials,
        })
    }

    /// The pin `lobster.lock` (in the run's working directory) has for `r`.
    fn pin_of(&self, r: &Reference) -> Result<Option<Pin>, SandboxError> {
        let path = self.authority.workdir().join(LOCK_FILE);
        if !path.is_file() {
            return Ok(None);
        }
        let lock = LockFile::load(&path).map_err(|e| SandboxError::Refused {
            message: e.to_string(),
            hint: format!("fix or remove {LOCK_FILE}"),
        })?;
        Ok(lock.oci_pin(&r.unpinned()).map(|p| Pin {
            digest: p.digest.clone(),
            blake3: p.blake3.clone(),
        }))
    }

    fn fetch_ref(&self, name: &str) -> Result<PathBuf, SandboxError> {
        let refuse = |message: String, hint: &str| SandboxError::Refused {
            message,
            hint: hint.to_string(),
        };
        let r = Reference::parse(name, true).map_err(|e| {
            refuse(
                e.to_string(),
                "name a registry step as oci://HOST[:PORT]/REPO:TAG@sha256:DIGEST",
            )
        })?;
        self.authority
            .judge(&Request::Registry {
                registry: &r.registry,
                repository: &r.repository,
            })
            .map_err(|reason| {
                refuse(
                    format!("policy refuses step {name}: it {reason}"),
                    "ask the operator to add the registry to the policy's registries, or use a step from a listed registry",
                )
            })?;
        // `lobster lock` pins anew: what the reference names now.
        let pin = if self.resolve_tags {
            None
        } else {
            self.pin_of(&r)?
        };
        let access = Admitter::access(self.authority.policy()).map_err(|e| {
            refuse(
                format!("step {name}: {e}"),
                "fix the operator's registry settings",
            )
        })?;
        let fetcher = Fetcher::new(self.cache.clone(), access);
        let fetched = fetcher
            .fetch(&r, pin.as_ref(), self.resolve_tags)
            .map_err(|e| refuse(e.to_string(), fetch_hint(&e)))?;
        if let Ok(mut v) = self.fetched.lock() {
            v.push((
                r.unpinned(),
                Pin {
                    digest: fetched.entry.manifest_digest.clone(),
                    blake3: fetched.entry.blake3.clone(),
                },
            ));
        }
        Ok(fetched.entry.path)
    }
}

fn fetch_hint(e: &RegistryError) -> &'static str {
    match e {
        RegistryError::Unpinned(_) => {
            "pin it with `lobster lock WORKFLOW` (which records its digest in lobster.lock) or name its digest: oci://…:TAG@sha256:…"
        }
        RegistryError::PinConflict { .. } => {
            "review the step, then run `lobster lock` again to pin the digest you want"
        }
        RegistryError::Digest { .. } => {
            "the registry's copy is not what was published or pinned: republish it, or ask the registry's owner"
        }
        RegistryError::Unauthorized { .. } => {
            "give the operator's credential for that registry in LOBSTER_REGISTRY_AUTH (host=user:token) or docker's config.json"
        }
        _ => "check the reference and that the registry is reachable",
    }
}

impl Admission for Admitter {
    fn fetch(&self, name: &str) -> Option<Result<PathBuf, SandboxError>> {
        registry::is_reference(name).then(|| self.fetch_ref(name))
    }

    fn admit(
        &self,
        name: &str,
        path: &Path,
        digest: &str,
        bytes: &mut dyn FnMut() -> std::io::Result<Vec<u8>>,
    ) -> Result<(), SandboxError> {
        if self.cache.holds(path) {
            if let Some(expected) = registry::cache::expected_blake3(path).filter(|e| *e != digest)
            {
                let _ = std::fs::remove_file(path);
                return Err(SandboxError::Refused {
                    message: format!(
                        "the cached component of {name} ({}) has blake3 {digest}, not {expected}: the cache was altered; it was removed",
                        path.display()
                    ),
                    hint: "run again to pull it from the registry".into(),
                });
            }
        }
        let policy = self.authority.policy();
        let signature = signing::sidecar::read(path).map_err(|e| SandboxError::Refused {
            message: format!("policy refuses step {name}: {e}"),
            hint: "remove or replace the broken signature file".into(),
        })?;
        let keys = signing::trusted_keys(&policy.signers);
        let verdict = signature
            .as_ref()
            .map(|s| signing::signature::verify_digest(digest, &mut *bytes, s, &keys));
        let shown = verdict.as_ref().map(|v| match v {
            Verdict::Trusted(s) | Verdict::UnknownKey(s) | Verdict::Invalid { signer: s, .. } => {
                s.to_string()
            }
        });
        let check = match (&verdict, shown.as_deref()) {
            (Some(Verdict::Trusted(_)), Some(signer)) => Some(SignatureCheck::Trusted { signer }),
            (Some(Verdict::UnknownKey(_)), Some(signer)) => {
                Some(SignatureCheck::UnknownKey { signer })
            }
            (Some(Verdict::Invalid { reason, .. }), Some(signer)) => {
                Some(SignatureCheck::Invalid { signer, reason })
            }
            _ => None,
        };
        self.authority
            .judge(&Request::Signed { verdict: check })
            .map_err(|reason| SandboxError::Refused {
                message: format!(
                    "policy refuses step {name}: its component {} {reason}",
                    path.display()
                ),
                hint: signature_hint(verdict.as_ref()).into(),
            })
    }
}

fn signature_hint(verdict: Option<&Verdict>) -> &'static str {
    match verdict {
        None => "sign it with `lobster step sign --key NAME.key FILE` (the signature goes beside it as FILE.minisig), with a key the policy's [signers] keys lists",
        Some(Verdict::UnknownKey(_)) => "add the signer's key line (the second line of its .pub file) to the policy's [signers] keys, or use a component signed by a listed key",
        _ => "the component or its signature changed after signing: get the signed component again, or sign it again",
    }
}
