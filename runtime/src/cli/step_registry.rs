//! `lobster step publish|pull|sign`: steps in OCI registries, signed.
//! Parses and prints; the work is `crate::registry::ship`.

use super::output::finish_text;
use super::trust_args;
use crate::error::{Error, Result};
use crate::policy::Policy;
use crate::registry::Admitter;
use crate::registry::{ship, Cache, Client, Fetcher, Reference};
use crate::sandbox::ArtifactCache;
use crate::signing;
use crate::state::StateStore;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The registry part of `lobster help step`.
pub const REGISTRY_HELP: &str = "
  lobster step publish FILE|BUNDLE oci://HOST[:PORT]/REPO:TAG [--policy FILE]
  lobster step pull oci://HOST[:PORT]/REPO[:TAG][@sha256:DIGEST] [-o FILE|DIR] [--policy FILE]
  lobster step sign --key NAME.key FILE|BUNDLE|oci://REF [--policy FILE]

publish: pushes a component (or a bundle: its component, with manifest.toml
as the annotation dev.lobster.bundle.manifest) in the OCI layout the
WebAssembly tools use (config application/vnd.wasm.config.v0+json, one
application/wasm layer), and its signature (FILE.minisig) under the tag
sha256-<manifest hex>.sig. Prints the reference with its digest: name that
in a workflow (uses: oci://…:TAG@sha256:…) or pin it with `lobster lock`.

pull: fetches a step (a tag is resolved) into the local cache, verified by
digest, and writes it to FILE (default ./<repo>.wasm), or a bundle to DIR
(an existing directory or a name ending in .bundle); its signature lands
beside it as FILE.minisig.

sign: signs a component, a bundle's component, or a step in a registry
(the signature is pushed under sha256-<hex>.sig) with a key from
`lobster keys new NAME`. Signatures are minisign's: `minisign -V -p NAME.pub
-m FILE` verifies them.

Registries are https:// unless the policy (--policy FILE, else
LOBSTER_POLICY) lists them in insecure_registries; its registry_ca_file adds
CAs. Credentials come from LOBSTER_REGISTRY_AUTH (host=user:token,...) or
docker's config.json, each only for its own registry.
";

/// Run `lobster step publish|pull|sign ARGS`; returns the exit code.
pub fn step_registry(command: &str, argv: &[String]) -> i32 {
    let result = trust_args::parse(
        &format!("step {command}"),
        argv,
        &["--policy", "--out", "--key"],
    )
    .and_then(|args| {
        if args.help {
            return Ok(REGISTRY_HELP.trim_start().to_string());
        }
        let cwd = std::env::current_dir()?;
        let policy = Policy::from_flag_or_env(args.policy.as_deref(), &cwd)?;
        match command {
            "publish" => publish(&args.words, &policy),
            "pull" => pull(&args.words, args.out.as_deref(), &policy),
            _ => sign(&args.words, args.key.as_deref(), &policy),
        }
    });
    finish_text(result)
}

fn reference(text: &str) -> Result<Reference> {
    Reference::parse(text, false).map_err(|e| Error::parse(e.to_string()))
}

fn fetcher(policy: &Policy) -> Result<Fetcher> {
    let access = Admitter::access(policy).map_err(|e| Error::runtime(e.to_string()))?;
    Ok(Fetcher::new(
        Cache::in_state_dir(StateStore::from_env().dir()),
        access,
    ))
}

fn seconds(t: Instant) -> String {
    format!("{:.2}s", t.elapsed().as_secs_f64())
}

fn publish(words: &[String], policy: &Policy) -> Result<String> {
    let [source, target] = words else {
        return Err(Error::parse(
            "lobster step publish: expected FILE|BUNDLE oci://HOST[:PORT]/REPO:TAG",
        )
        .with_hint("`lobster help step`"));
    };
    let r = reference(target)?;
    let cache = ArtifactCache::in_state_dir(StateStore::from_env().dir());
    let src = ship::read_source(Path::new(source), &cache).map_err(Error::runtime)?;
    let access = Admitter::access(policy).map_err(|e| Error::runtime(e.to_string()))?;
    let started = Instant::now();
    let published = ship::publish(&Client::new(access), &src, &r).map_err(Error::runtime)?;
    let signed = match &src.signature {
        Some(s) => format!(
            "signature by {} pushed under {}",
            s.signer_name().unwrap_or_else(|| s.key_id().to_string()),
            crate::registry::reference::signature_tag(
                published.reference.digest.as_deref().unwrap_or_default()
            )
        ),
        None => "unsigned (sign it: lobster step sign --key NAME.key FILE)".to_string(),
    };
    Ok(format!(
        "published {source} as {}\n  {} bytes, blake3 {}, in {}; {signed}\n",
        published.reference,
        published.size,
        published.blake3,
        seconds(started)
    ))
}

fn pull(words: &[String], out: Option<&str>, policy: &Policy) -> Result<String> {
    let [source] = words else {
        return Err(Error::parse(
            "lobster step pull: expected one reference oci://HOST[:PORT]/REPO:TAG",
        )
        .with_hint("`lobster help step`"));
    };
    let r = reference(source)?;
    let started = Instant::now();
    let written = ship::pull(&fetcher(policy)?, &r, out.map(Path::new))
        .map_err(|e| Error::runtime(e.to_string()))?;
    let mut text = format!(
        "pulled {} to {}\n  blake3 {}, {} in {}\n",
        written.fetched.reference,
        written
            .bundle
            .as_ref()
            .unwrap_or(&written.component)
            .display(),
        written.fetched.entry.blake3,
        if written.fetched.pulled {
            "from the registry"
        } else {
            "from the local cache"
        },
        seconds(started),
    );
    text.push_str(&format!(
        "  signature: {}\n",
        signing::sidecar::describe(
            &written.component,
            &written.fetched.entry.blake3,
            &policy.signers,
        )
    ));
    Ok(text)
}

fn sign(words: &[String], key: Option<&str>, policy: &Policy) -> Result<String> {
    let (Some(key), [target]) = (key, words) else {
        return Err(Error::parse(
            "lobster step sign: expected --key NAME.key FILE|BUNDLE|oci://REF",
        )
        .with_hint("create a key with `lobster keys new NAME`"));
    };
    let key = signing::SecretKey::read(Path::new(key)).map_err(|e| Error::parse(e.to_string()))?;
    if crate::registry::is_reference(target) {
        let r = reference(target)?;
        let (signed, sig) =
            ship::sign_in_registry(&fetcher(policy)?, &r, &key).map_err(Error::runtime)?;
        return Ok(format!(
            "signed {signed} as {} (key {}); the signature is in the registry under {}\n",
            key.name,
            sig.key_id(),
            crate::registry::reference::signature_tag(signed.digest.as_deref().unwrap_or_default())
        ));
    }
    let (written, sig) = ship::sign_file(&PathBuf::from(target), &key).map_err(Error::runtime)?;
    Ok(format!(
        "signed {target} as {} (key {}): {}\n",
        key.name,
        sig.key_id(),
        written.display()
    ))
}
