//! The one authority of a run: it holds the operator policy and the run's
//! working directory (where every granted directory resolves) and judges
//! each capability a run asks for, at the moment the run uses it.
//!
//! Plan-time walkers (the pipeline planner, the workflow walker in
//! `workflow::policy`, `lobster check`) ask the same questions early to
//! give positioned errors; the code that then uses the capability (loading
//! a component or a sub-workflow, choosing a step's working directory,
//! building a step's environment, spawning a host process) asks again with
//! the value it really uses, so a templated path, a step's output or a file
//! rewritten mid-run is judged exactly like a literal.
//!
//! The authority knows nothing of workflow files, pipelines or commands: it
//! judges [`Request`]s. Adding a capability means adding a request kind and
//! its arm in [`Authority::judge`].

use super::grants::{Access, Grants};
use super::policy::Policy;
use super::root::{self, Confinement, Opened, Refused};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// One capability a run asks for.
#[derive(Debug, Clone, Copy)]
pub enum Request<'a> {
    /// Start a host process (a `run:` step, an `exec` stage).
    HostProcess,
    /// Grant `dir` (relative to the run's working directory) to steps.
    Dir {
        /// The directory as asked for.
        dir: &'a Path,
        /// Read-only or read-write.
        access: Access,
    },
    /// Hand the environment variable `name` to steps.
    EnvName {
        /// The variable.
        name: &'a str,
    },
    /// Read the host's value of `name` while expanding a step's `env:`.
    HostEnv {
        /// The variable.
        name: &'a str,
    },
    /// Run `dir` (as written, relative to `base`) as a working directory.
    Cwd {
        /// The directory as written (rendered when templated).
        dir: &'a str,
        /// What a relative `dir` is relative to (a workflow's directory).
        base: &'a Path,
    },
    /// Load and run a WebAssembly component that imports `imports`.
    Component {
        /// Every interface the component imports.
        imports: &'a [String],
    },
    /// Load the workflow file at `path` (a sub-workflow).
    WorkflowFile {
        /// The file.
        path: &'a Path,
    },
    /// Use a component from an OCI registry (an `oci://` stage name or `uses:`).
    Registry {
        /// `host[:port]`.
        registry: &'a str,
        /// The repository.
        repository: &'a str,
    },
    /// Compile and run a component whose signature check said `verdict`
    /// (`None`: it has no signature), before it is compiled.
    Signed {
        /// What the signature check said.
        verdict: Option<SignatureCheck<'a>>,
    },
    /// Hand `grants` to a step as it starts: every directory and name must
    /// be allowed by the policy and be part of the run's grants (at most
    /// their access), so no code path can widen what the operator granted.
    HandOver {
        /// What the step is about to receive.
        grants: &'a Grants,
    },
}

/// What checking a component's signature against the policy's
/// `[signers] keys` found (the check is `crate::signing`'s; the judgement,
/// [`Request::Signed`], is the authority's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignatureCheck<'a> {
    /// Made by a listed key over exactly these bytes.
    Trusted {
        /// Who signed (name and key id).
        signer: &'a str,
    },
    /// Made by a key the policy does not list.
    UnknownKey {
        /// Who it claims to be (name and key id).
        signer: &'a str,
    },
    /// Claims a listed key but does not verify.
    Invalid {
        /// The listed signer it names.
        signer: &'a str,
        /// Why it failed.
        reason: &'a str,
    },
}

/// Why a request is refused: the reason completes a sentence naming the
/// request ("step x runs a host shell command, which {reason}").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The reason, e.g. `the untrusted policy forbids`.
    pub reason: String,
}

impl Refusal {
    fn new(reason: impl Into<String>) -> Self {
        Refusal {
            reason: reason.into(),
        }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason)
    }
}

/// The operator policy, the run's working directory and the run's grants;
/// see the module docs.
#[derive(Debug, Clone)]
pub struct Authority {
    policy: Arc<Policy>,
    /// The run's working directory, canonical when it exists.
    workdir: PathBuf,
    /// What the operator granted the run (`--allow-*`, or a paused run's
    /// record): the most any step may be handed.
    grants: Grants,
    /// The run's other roots and whether it is a serve tenant's.
    confinement: Arc<Confinement>,
}

impl Default for Authority {
    fn default() -> Self {
        Authority::new(
            Policy::default(),
            std::env::current_dir().unwrap_or_default(),
        )
    }
}

impl Authority {
    /// The authority of a run under `policy` in working directory `workdir`.
    pub fn new(policy: Policy, workdir: PathBuf) -> Self {
        Authority::shared(Arc::new(policy), workdir)
    }

    /// [`Authority::new`] over a policy shared with other runs.
    pub fn shared(policy: Arc<Policy>, workdir: PathBuf) -> Self {
        let workdir = workdir.canonicalize().unwrap_or(workdir);
        Authority {
            policy,
            workdir,
            grants: Grants::default(),
            confinement: Arc::default(),
        }
    }

    /// The same policy, directory and grants, confined by `confinement`.
    pub fn with_confinement(&self, confinement: Arc<Confinement>) -> Self {
        Authority {
            confinement,
            ..self.clone()
        }
    }

    /// The run's roots beyond its working directory, and whether it is a
    /// serve tenant's.
    pub fn confinement(&self) -> &Arc<Confinement> {
        &self.confinement
    }

    /// Whether the files the run names are confined to its roots: under
    /// the untrusted policy, and always for a serve tenant's run.
    pub fn confined(&self) -> bool {
        self.policy.untrusted() || self.confinement.tenant
    }

    /// How messages name `path`: relative to the root it lies under for a
    /// tenant (never a server path), else as given.
    pub fn shown(&self, path: &Path) -> String {
        if !self.confinement.tenant {
            return path.display().to_string();
        }
        let roots = std::iter::once(&self.workdir).chain(&self.confinement.read_only);
        if let Some(shown) = root::shown_plainly(path, roots.clone()) {
            return shown;
        }
        roots
            .filter(|r| path.starts_with(r))
            .map(|r| root::relative_to(path, r))
            .next()
            .unwrap_or_else(|| root::relative_to(path, Path::new("/nowhere")))
    }

    /// Open the file at `full` (a path the workflow author named, joined
    /// to the directory it is relative to) as the run may read it: beneath
    /// the run's roots when [`Authority::confined`] (a tenant's catalog and
    /// step directories are roots too), else anywhere. The caller reads
    /// the returned handle, never the path again.
    pub fn open_file(&self, full: &Path) -> Result<Opened, Refused> {
        if !self.confined() {
            let file = std::fs::File::open(full).map_err(|e| {
                if e.kind() == std::io::ErrorKind::NotFound {
                    Refused::Missing
                } else {
                    Refused::Unreadable(e)
                }
            })?;
            if !file.metadata().map_err(Refused::Unreadable)?.is_file() {
                return Err(Refused::WrongKind);
            }
            let path = full.canonicalize().unwrap_or_else(|_| full.to_path_buf());
            return Ok(Opened {
                file,
                path,
                root: PathBuf::from("/"),
            });
        }
        let mut roots = vec![self.workdir.as_path()];
        if self.confinement.tenant {
            roots.extend(self.confinement.read_only.iter().map(PathBuf::as_path));
        }
        root::open_file(&roots, full)
    }

    /// Why the workflow file written `written` (at `full`) was not opened,
    /// completing "… workflow file {written} {reason}": one answer for a
    /// tenant whatever the cause, the cause for the operator.
    pub fn file_refusal(&self, full: &Path, why: &Refused) -> Refusal {
        if self.confinement.tenant {
            return Refusal::new(why.toward_tenant());
        }
        Refusal::new(match why {
            Refused::Missing => format!("not found: {}", full.display()),
            Refused::WrongKind => "is not a regular file".to_string(),
            // Before "outside": a device named by its absolute path is
            // refused for what it is (the operator's own files).
            Refused::Outside if std::fs::metadata(full).is_ok_and(|m| !m.is_file()) => {
                "is not a regular file".to_string()
            }
            Refused::Outside => format!(
                "leads outside the run's working directory {}; the untrusted policy loads sub-workflows only from inside it",
                self.workdir.display()
            ),
            Refused::Unreadable(e) => format!("cannot be read ({e})"),
        })
    }

    /// The same policy and directory with the run's `grants`.
    pub fn with_grants(&self, grants: Grants) -> Self {
        Authority {
            grants,
            ..self.clone()
        }
    }

    /// The run's grants (the most a step may be handed).
    pub fn grants(&self) -> &Grants {
        &self.grants
    }

    /// The operator policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The operator policy, shared.
    pub fn shared_policy(&self) -> Arc<Policy> {
        self.policy.clone()
    }

    /// The run's working directory: granted directories resolve here,
    /// whatever a step's `cwd:` says.
    pub fn workdir(&self) -> &Path {
        &self.workdir
    }

    /// Judge `request`: `Ok` grants it.
    pub fn judge(&self, request: &Request) -> Result<(), Refusal> {
        let untrusted = self.policy.untrusted();
        match *request {
            Request::HostProcess if untrusted => Err(Refusal::new("the untrusted policy forbids")),
            Request::HostProcess => Ok(()),
            Request::Dir { dir, .. } => match self.policy.allowed_roots() {
                Some(roots) if !roots.iter().any(|r| inside_root(&self.workdir, dir, r)) => {
                    Err(Refusal::new(format!(
                        "is outside the allowed roots [{}]",
                        roots.join(", ")
                    )))
                }
                _ => Ok(()),
            },
            Request::EnvName { name }
                if untrusted
                    && super::credential::secret_env_names(&self.policy)
                        .iter()
                        .any(|s| s == name) =>
            {
                Err(Refusal::new(
                    "holds a credential (a gateway token or model key), which the untrusted policy never hands to a step",
                ))
            }
            Request::EnvName { name } if !self.policy.allows_env(name) => {
                Err(Refusal::new(format!(
                    "is not among the allowed variables [{}]",
                    self.policy.env.as_deref().unwrap_or_default().join(", ")
                )))
            }
            Request::EnvName { .. } => Ok(()),
            Request::HostEnv { .. } if untrusted => Err(Refusal::new(
                "the untrusted policy keeps the host environment out of env: values",
            )),
            Request::HostEnv { .. } => Ok(()),
            Request::Cwd { dir, base } => self.resolve_cwd(dir, base).map(|_| ()),
            Request::Component { imports } => {
                let refused: Vec<&str> = imports
                    .iter()
                    .filter(|i| import_problem(i).is_some())
                    .map(String::as_str)
                    .collect();
                if untrusted && !refused.is_empty() {
                    return Err(Refusal::new(format!(
                        "imports {}, which the untrusted policy refuses",
                        refused.join(", ")
                    )));
                }
                Ok(())
            }
            Request::HandOver { grants } => self.hand_over(grants),
            Request::Registry {
                registry,
                repository,
            } => {
                if self.policy.allows_registry(registry, repository) {
                    Ok(())
                } else {
                    let listed = match &self.policy.registries {
                        Some(l) => format!("the policy's registries [{}]", l.join(", ")),
                        None => "the untrusted policy, which lists no registries".to_string(),
                    };
                    Err(Refusal::new(format!(
                        "is from registry {registry}/{repository}, which is not among {listed}"
                    )))
                }
            }
            Request::Signed { verdict } => self.judge_signature(verdict),
            // The author names sub-workflows: confined runs load them from
            // inside their roots only (opened beneath them), so a path
            // cannot make the run read (and quote in its errors) a host
            // file elsewhere.
            Request::WorkflowFile { path } => match self.open_file(path) {
                Ok(_) => Ok(()),
                Err(why) => Err(self.file_refusal(path, &why)),
            },
        }
    }

    fn judge_signature(&self, verdict: Option<SignatureCheck>) -> Result<(), Refusal> {
        let required = self.policy.signers.require_signed;
        match verdict {
            Some(SignatureCheck::Trusted { .. }) => Ok(()),
            // Tampering is refused whether or not signatures are required.
            Some(SignatureCheck::Invalid { signer, reason }) => Err(Refusal::new(format!(
                "has a signature by trusted signer {signer} that does not verify: {reason}"
            ))),
            Some(SignatureCheck::UnknownKey { signer }) if required => Err(Refusal::new(format!(
                "is signed by {signer}, which is not among the policy's [signers] keys"
            ))),
            None if required => Err(Refusal::new(
                "is not signed, and the policy requires signed steps ([signers] require_signed)",
            )),
            _ => Ok(()),
        }
    }

    fn hand_over(&self, grants: &Grants) -> Result<(), Refusal> {
        for d in &grants.dirs {
            let shown = d.host.display();
            self.judge(&Request::Dir {
                dir: &d.host,
                access: d.access,
            })
            .map_err(|r| Refusal::new(format!("directory {shown} {r}")))?;
            let granted = self
                .grants
                .dirs
                .iter()
                .any(|g| g.host == d.host && g.guest == d.guest && g.access >= d.access);
            if !granted {
                return Err(Refusal::new(format!(
                    "directory {shown} at {} ({:?}) is more than the run was granted",
                    d.guest, d.access
                )));
            }
        }
        for name in &grants.env {
            self.judge(&Request::EnvName {
                name: name.as_str(),
            })
            .map_err(|r| Refusal::new(format!("variable {name} {r}")))?;
            if !self.grants.env.contains(name) {
                return Err(Refusal::new(format!(
                    "variable {name} is more than the run was granted"
                )));
            }
        }
        Ok(())
    }

    /// Judge a working directory and return it as the run will use it:
    /// `dir` is taken relative to `base` and must stay inside the run's
    /// working directory, lexically and as opened beneath it (a symlink
    /// leading out is refused); an absolute `dir` is refused.
    pub fn resolve_cwd(&self, dir: &str, base: &Path) -> Result<PathBuf, Refusal> {
        let inside = if self.confinement.tenant {
            "stay inside the run's working directory".to_string()
        } else {
            format!(
                "stay inside the run's working directory {}",
                self.workdir.display()
            )
        };
        if Path::new(dir).is_absolute() {
            return Err(Refusal::new(format!(
                "is absolute; a cwd is relative to the workflow's directory and must {inside}"
            )));
        }
        let base = base.canonicalize().unwrap_or_else(|_| base.to_path_buf());
        let joined = base.join(dir);
        let full = normalize(&joined);
        let outside = || {
            let to = if self.confinement.tenant {
                String::new()
            } else {
                format!(" to {}", full.display())
            };
            Refusal::new(format!("leads{to}; a cwd must {inside}"))
        };
        if !full.starts_with(&self.workdir) {
            return Err(outside());
        }
        let Ok(rel) = joined.strip_prefix(&self.workdir) else {
            return Err(outside());
        };
        match root::open_dir(&self.workdir, rel) {
            Ok(opened) => Ok(opened.path),
            // Not there yet: as written, once `..` is applied (the open
            // already refused any link met on the way).
            Err(Refused::Missing) => Ok(full),
            Err(Refused::Outside) => {
                let through = if self.confinement.tenant {
                    String::new()
                } else {
                    " out of it".to_string()
                };
                Err(Refusal::new(format!(
                    "leads through a link{through}; a cwd must {inside}"
                )))
            }
            Err(Refused::WrongKind) => Err(Refusal::new("is not a directory")),
            Err(Refused::Unreadable(e)) => Err(Refusal::new(format!("cannot be opened ({e})"))),
        }
    }
}

/// `p` with `.` dropped and `..` applied to the parts before it.
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Whether relative path `dir` names `root` or lies below it, by its
/// components alone (`./a` and `a/` are `a`; `.` holds everything).
pub fn lexically_inside(dir: &Path, root: &Path) -> bool {
    normal_parts(dir).starts_with(&normal_parts(root))
}

fn normal_parts(p: &Path) -> Vec<&std::ffi::OsStr> {
    p.components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s),
            _ => None,
        })
        .collect()
}

/// Interface prefixes a step may import.
pub const ALLOWED_IMPORTS: &[&str] = &[
    "lobster:step/",
    "wasi:cli/",
    "wasi:io/",
    "wasi:clocks/",
    "wasi:random/",
    "wasi:filesystem/",
    // Linked with every use refused by the host (see the module docs).
    "wasi:sockets/",
];

/// Why `name` may not be imported, or `None` when it may.
pub fn import_problem(name: &str) -> Option<String> {
    if ALLOWED_IMPORTS.iter().any(|p| name.starts_with(p)) {
        return None;
    }
    Some(if name.starts_with("wasi:http/") {
        format!("imports {name} (HTTP), which Lobster never grants")
    } else {
        format!("imports {name}, an interface the Lobster host does not provide")
    })
}

/// Whether granted directory `dir` lies inside `root` (both relative to
/// `workdir`): lexically (no `..`), and as opened beneath the root's own
/// directory handle where both exist (a symlink inside `root` leading out
/// of it is refused).
pub fn inside_root(workdir: &Path, dir: &Path, root: &str) -> bool {
    let root_path = PathBuf::from(root);
    if dir.is_absolute()
        || dir.components().any(|c| c == Component::ParentDir)
        || !lexically_inside(dir, &root_path)
    {
        return false;
    }
    let root_parts: PathBuf = normal_parts(&root_path).into_iter().collect();
    let below: PathBuf = normal_parts(dir)
        .into_iter()
        .skip(normal_parts(&root_path).len())
        .collect();
    match root::open_dir(workdir, &root_parts) {
        Ok(opened) => root::existing_part_inside(&opened.path, &below),
        Err(Refused::Outside) => false,
        // A root that does not exist holds nothing yet.
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn untrusted(dir: &Path) -> Authority {
        let policy = Policy::parse(
            "trust = \"untrusted\"\nroots = [\"mail\"]\nenv = [\"LANG\"]\n",
            Path::new("p.toml"),
        )
        .unwrap();
        Authority::new(policy, dir.to_path_buf())
    }

    #[test]
    fn cwd_stays_inside_the_working_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let w = tmp.path().join("w");
        std::fs::create_dir_all(w.join("sub")).unwrap();
        std::fs::create_dir_all(tmp.path().join("out")).unwrap();
        std::os::unix::fs::symlink(tmp.path().join("out"), w.join("link")).unwrap();
        let a = untrusted(&w);
        let real = w.canonicalize().unwrap();
        assert_eq!(a.resolve_cwd("sub", &w).unwrap(), real.join("sub"));
        assert_eq!(a.resolve_cwd("sub/..", &w).unwrap(), real);
        assert_eq!(a.resolve_cwd("..", &w.join("sub")).unwrap(), real);
        for bad in ["..", "../out", "sub/../../out", "link", "link/x", "link/.."] {
            let e = a.resolve_cwd(bad, &w).unwrap_err();
            assert!(e.reason.contains("must stay inside"), "{bad}: {e}");
        }
        let e = a.resolve_cwd("/tmp", &w).unwrap_err();
        assert!(e.reason.starts_with("is absolute"), "{e}");
        // A workflow outside the working directory has no cwd inside it.
        assert!(a.resolve_cwd(".", &tmp.path().join("out")).is_err());
        // A file where a cwd should be is named as such; a missing one is
        // allowed (it may be made before it is used).
        std::fs::write(w.join("notes"), "").unwrap();
        let e = a.resolve_cwd("notes", &w).unwrap_err();
        assert_eq!(e.reason, "is not a directory");
        assert_eq!(a.resolve_cwd("later", &w).unwrap(), real.join("later"));
    }

    #[test]
    fn requests_are_judged_by_trust() {
        let tmp = tempfile::tempdir().unwrap();
        let a = untrusted(tmp.path());
        assert!(a.judge(&Request::HostProcess).is_err());
        assert!(a.judge(&Request::HostEnv { name: "HOME" }).is_err());
        assert!(a.judge(&Request::EnvName { name: "LANG" }).is_ok());
        assert!(a.judge(&Request::EnvName { name: "TOKEN" }).is_err());
        // A variable holding a credential is never handed to an untrusted
        // step, even where the policy's list would allow the name.
        let wide = Policy::parse(
            "trust = \"untrusted\"\nenv = [\"*\"]\n[gateway]\nurl = \"http://127.0.0.1:1\"\ntoken_env = \"GW_SECRET\"\n",
            Path::new("p.toml"),
        )
        .unwrap();
        let w = Authority::new(wide, tmp.path().to_path_buf());
        assert!(w.judge(&Request::EnvName { name: "LANG" }).is_ok());
        for secret in ["GW_SECRET", "OPENCLAW_TOKEN", "LOBSTER_LLM_API_KEY"] {
            let e = w.judge(&Request::EnvName { name: secret }).unwrap_err();
            assert!(e.reason.contains("holds a credential"), "{secret}: {e}");
        }
        let dir = |d: &'static str| Request::Dir {
            dir: Path::new(d),
            access: Access::Read,
        };
        assert!(a.judge(&dir("mail/sub")).is_ok());
        for d in ["mail/../x", "../mail", "/mail", "mailbox"] {
            assert!(a.judge(&dir(d)).is_err(), "{d}");
        }
        // wasi:sockets is linked with every use refused, so it passes;
        // an interface the host does not provide is refused.
        let sockets = ["wasi:sockets/tcp@0.2.0".to_string()];
        assert!(a.judge(&Request::Component { imports: &sockets }).is_ok());
        let http = [
            "wasi:sockets/tcp@0.2.0".to_string(),
            "wasi:http/outgoing-handler@0.2.0".to_string(),
        ];
        let e = a.judge(&Request::Component { imports: &http }).unwrap_err();
        assert_eq!(
            e.reason,
            "imports wasi:http/outgoing-handler@0.2.0, which the untrusted policy refuses"
        );
        let trusted = Authority::new(Policy::default(), tmp.path().to_path_buf());
        assert!(trusted.judge(&Request::HostProcess).is_ok());
        assert!(trusted.judge(&Request::HostEnv { name: "HOME" }).is_ok());
        assert!(trusted
            .judge(&Request::Component { imports: &http })
            .is_ok());
        assert!(trusted
            .judge(&Request::WorkflowFile { path: tmp.path() })
            .is_err());
        let outside = tempfile::NamedTempFile::new_in(std::env::temp_dir()).unwrap();
        let inside = tmp.path().join("in.lobster");
        std::fs::write(&inside, "steps: []\n").unwrap();
        assert!(a.judge(&Request::WorkflowFile { path: &inside }).is_ok());
        let e = a
            .judge(&Request::WorkflowFile {
                path: outside.path(),
            })
            .unwrap_err();
        assert!(
            e.reason.contains("outside the run's working directory"),
            "{e}"
        );
        assert!(trusted
            .judge(&Request::WorkflowFile {
                path: outside.path()
            })
            .is_ok());
    }
}
