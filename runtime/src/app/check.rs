//! What `lobster check` checks, for CI: components (`.wasm`), bundles
//! (directories with `manifest.toml`, or the manifest itself), lock files
//! (with their registry pins, resolved and verified) and workflow files,
//! each as a run would judge it. Every problem is a [`Finding`]
//! (`path[:line]: message` with a rule id); what only a run can decide is
//! a warning. The door renders the [`CheckReport`].

use crate::kernel::Policy;
use crate::policy::lock::{LockFile, LOCK_FILE};
use crate::policy::Finding;
use crate::registry::{Admitter, Fetcher, Reference};
use crate::sandbox::bundle::{self, component_findings, MANIFEST};
use crate::sandbox::Admission;
use crate::sandbox::{ArtifactCache, StepPath, StepResolver};
use crate::state::StateStore;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What a check found.
#[derive(Debug, Default)]
pub struct CheckReport {
    /// The files checked, in order.
    pub checked: Vec<PathBuf>,
    /// The problems (each fails the check).
    pub findings: Vec<Finding>,
    /// What only the run can decide (printed, not failing the check).
    pub warnings: Vec<Finding>,
}

impl CheckReport {
    /// Whether everything passes.
    pub fn ok(&self) -> bool {
        self.findings.is_empty()
    }
}

/// Check `paths` (files or directories) under `policy`, from `cwd`, with
/// the step path of `cwd` and `steps` (`--steps` directories): every
/// component's signature and imports, every bundle against its manifest,
/// every lock entry against the step path and its registry, every workflow
/// as `lobster run` would validate it; and each component and workflow
/// step against its pin in `cwd`'s `lobster.lock`.
pub fn check(policy: Policy, steps: &[PathBuf], cwd: &Path, paths: &[String]) -> CheckReport {
    let lock_path = cwd.join(LOCK_FILE);
    let state = StateStore::from_env();
    let admission = Arc::new(Admitter::new(
        Arc::new(crate::policy::Authority::new(
            policy.clone(),
            cwd.to_path_buf(),
        )),
        state.dir(),
    ));
    let mut checker = Checker {
        cache: ArtifactCache::in_state_dir(state.dir()),
        admission,
        path: StepPath::from_env(cwd, steps),
        pins: None,
        policy,
        cwd: cwd.to_path_buf(),
        checked: Vec::new(),
        findings: Vec::new(),
        warnings: Vec::new(),
    };
    if lock_path.is_file() {
        match LockFile::load(&lock_path) {
            Ok(l) => checker.pins = Some((PathBuf::from(LOCK_FILE), l)),
            Err(e) => checker
                .findings
                .push(Finding::new(LOCK_FILE, e.to_string())),
        }
    }
    for p in paths {
        checker.check(Path::new(p));
    }
    CheckReport {
        checked: checker.checked,
        findings: checker.findings,
        warnings: checker.warnings,
    }
}

/// The state of one check: what it was given and what it found.
struct Checker {
    cache: ArtifactCache,
    /// The run's admission under `policy` (signatures, registries).
    admission: Arc<Admitter>,
    path: StepPath,
    pins: Option<(PathBuf, LockFile)>,
    /// `--policy` / `LOBSTER_POLICY` (the default policy without either).
    policy: Policy,
    cwd: PathBuf,
    checked: Vec<PathBuf>,
    findings: Vec<Finding>,
    /// What only the run can decide (printed, not failing the check).
    warnings: Vec<Finding>,
}

impl Checker {
    /// Check `path` by its kind (a directory: the files in it a check reads).
    fn check(&mut self, path: &Path) {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if path.is_dir() {
            if path.join(MANIFEST).is_file() {
                self.bundle(path);
            } else {
                self.dir(path);
            }
        } else if name == MANIFEST {
            self.bundle(path);
        } else if name.ends_with(".wasm") {
            self.component(path);
        } else if name.ends_with(".lock") {
            self.lock(path);
        } else if crate::workflow::has_workflow_extension(path) {
            self.workflow(path);
        } else if !path.exists() {
            self.findings
                .push(Finding::new(path, "no such file or directory"));
        } else {
            self.findings.push(Finding::new(
                path,
                "not a component (.wasm), bundle (manifest.toml) or lock file (.lock)",
            ));
        }
    }

    /// The components, bundles, lock file and workflows in `dir`.
    fn dir(&mut self, dir: &Path) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            self.findings
                .push(Finding::new(dir, "cannot read the directory"));
            return;
        };
        let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        for p in paths {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let wanted = (p.is_dir() && p.join(MANIFEST).is_file())
                || (p.is_file()
                    && (name.ends_with(".wasm")
                        || name == LOCK_FILE
                        || name.ends_with(".lobster")));
            if wanted {
                self.check(&p);
            }
        }
    }

    /// A workflow file, through the workflow layer's validator (every
    /// sub-workflow named by a literal path too); its messages read
    /// `file:line:col: message`, one problem a line, each a finding.
    fn workflow(&mut self, path: &Path) {
        self.checked.push(path.to_path_buf());
        // With the step path, so every stage name (built-in or step) and
        // its flags are resolved as the run would.
        let resolver = StepResolver::new(self.path.clone(), self.cache.clone())
            .with_admission(self.admission.clone());
        let registry = Arc::new(crate::commands::builtin().with_steps(resolver));
        // A workflow that fails validation with the step path (an unknown
        // stage, say) is still walked for what the policy refuses when it
        // loads without it, so one check reports both.
        let loaded = crate::workflow::load_plan(path, Some(&registry));
        let (mut invalid, walkable) = match loaded {
            Ok(ok) => (String::new(), Ok(ok)),
            Err(e) => (
                e.to_string(),
                crate::workflow::load_plan(path, None).map_err(|_| ()),
            ),
        };
        let lines = match walkable {
            Err(()) => invalid,
            Ok((wf, _)) => {
                let authority =
                    crate::policy::Authority::new(self.policy.clone(), self.cwd.clone());
                let found = crate::workflow::policy::walk(&wf, &registry, &authority, &self.cache);
                for line in &found.deferred {
                    self.warnings.push(match locate(line) {
                        Some((file, at, rest)) => {
                            Finding::new(Path::new(file), rest).at_line(Some(at))
                        }
                        None => Finding::new(path, line.as_str()),
                    });
                }
                let mut lines = found.refused;
                lines.extend(found.broken);
                lines.extend(self.unpinned(&wf, registry.clone()));
                if !invalid.is_empty() {
                    lines.insert(0, std::mem::take(&mut invalid));
                }
                lines.join("\n")
            }
        };
        for line in lines.lines().filter(|l| !l.trim().is_empty()) {
            let finding = match locate(line) {
                Some((file, at, rest)) => Finding::new(Path::new(file), rest).at_line(Some(at)),
                None => Finding::new(path, line),
            };
            let rule = rule_of(&finding.message, "lobster/workflow");
            self.findings.push(finding.rule(rule));
        }
    }

    /// The workflow's literal steps that do not match their pin in
    /// `./lobster.lock`, worded as the run refuses them (the run reads the
    /// same file, so `check WORKFLOW` alone must too).
    fn unpinned(
        &self,
        wf: &crate::workflow::model::Workflow,
        registry: Arc<crate::kernel::Registry>,
    ) -> Vec<String> {
        let Some((lock_path, lock)) = &self.pins else {
            return Vec::new();
        };
        let ctx =
            crate::kernel::Context::builder(crate::kernel::Mode::Tool, StateStore::from_env())
                .policy(self.policy.clone())
                .registry(registry)
                .build();
        crate::workflow::policy::workflow_steps(wf, &ctx)
            .into_iter()
            .filter_map(|(name, digest)| {
                let pinned = lock.pin(&name).filter(|p| **p != digest)?;
                Some(format!(
                    "step {name} does not match its pin in {} (pinned blake3 {}, the component now is {})",
                    lock_path.display(),
                    crate::policy::enforce::short(pinned),
                    crate::policy::enforce::short(&digest)
                ))
            })
            .collect()
    }

    /// A bundle: it matches its manifest, and its component's signature.
    fn bundle(&mut self, path: &Path) {
        self.checked.push(path.to_path_buf());
        let found = bundle::verify(path, &self.cache);
        let clean = found.is_empty();
        self.findings
            .extend(found.into_iter().map(|f| f.rule("lobster/bundle")));
        if clean {
            let (dir, _) = bundle::locate(path);
            self.signature(&dir.join(bundle::COMPONENT));
        }
    }

    /// The signature of the component at `path`, judged by the policy.
    fn signature(&mut self, path: &Path) {
        let Ok(bytes) = std::fs::read(path) else {
            return;
        };
        let digest = crate::sandbox::digest_of(&bytes);
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if let Err(e) = self
            .admission
            .admit(&name, path, &digest, &mut || Ok(bytes.clone()))
        {
            self.findings
                .push(Finding::new(path, e.to_string()).rule("lobster/signature"));
        }
    }

    /// A component: its signature, what it imports and exports, and its
    /// pin in `./lobster.lock`.
    fn component(&mut self, path: &Path) {
        self.checked.push(path.to_path_buf());
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) => {
                self.findings
                    .push(Finding::new(path, format!("cannot read: {e}")));
                return;
            }
        };
        // Judged before anything compiles it, as a run would.
        self.signature(path);
        if self.findings.last().is_some_and(|f| f.path == path) {
            return;
        }
        let found = component_findings(&bytes, path, &self.cache);
        let clean = found.is_empty();
        self.findings
            .extend(found.into_iter().map(|f| f.rule("lobster/component")));
        if !clean {
            return;
        }
        let Some((lock_path, lock)) = &self.pins else {
            return;
        };
        let Ok(c) = crate::sandbox::load_bytes(&bytes, path, &self.cache) else {
            return;
        };
        let name = match c.meta() {
            Some(m) => m.name.clone(),
            None => path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
        };
        if let Some(pinned) = lock.pin(&name).filter(|p| *p != c.digest()) {
            self.findings.push(
                Finding::new(
                    path,
                    format!(
                        "step {name} has blake3 {}, but {} pins {pinned}",
                        c.digest(),
                        lock_path.display()
                    ),
                )
                .rule("lobster/lock"),
            );
        }
    }

    /// A lock file: its registry pins and every step it pins, against the
    /// step path (or, for a `uses:` component, its file).
    fn lock(&mut self, path: &Path) {
        self.checked.push(path.to_path_buf());
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) => {
                self.findings
                    .push(Finding::new(path, format!("cannot read: {e}")));
                return;
            }
        };
        let lock = match LockFile::parse(&text, path) {
            Ok(l) => l,
            Err(e) => {
                self.findings.push(Finding::new(path, e.to_string()));
                return;
            }
        };
        let resolver = StepResolver::new(self.path.clone(), self.cache.clone())
            .with_admission(self.admission.clone());
        let before = self.findings.len();
        for (name, pin) in &lock.oci {
            let at = LockFile::line_of(&text, name);
            if let Err(message) = self.registry_pin(name, pin) {
                self.findings.push(
                    Finding::new(path, message)
                        .at_line(at)
                        .rule("lobster/registry"),
                );
            }
        }
        for (name, pinned) in &lock.steps {
            let at = LockFile::line_of(&text, name);
            if name.ends_with(".wasm") {
                // A workflow's `uses:` component, by its path.
                let file = path.parent().unwrap_or(Path::new(".")).join(name);
                let now = std::fs::read(&file).map(|b| crate::sandbox::digest_of(&b));
                let message = match now {
                    Ok(d) if d == *pinned => continue,
                    Ok(d) => format!(
                        "step {name} is pinned to blake3 {pinned}, but {} has {d}",
                        file.display()
                    ),
                    Err(e) => format!("step {name} is pinned but cannot be read: {e}"),
                };
                self.findings.push(Finding::new(path, message).at_line(at));
                continue;
            }
            match resolver.resolve(name) {
                Ok(Some(step)) if step.digest() == pinned => {}
                Ok(Some(step)) => self.findings.push(
                    Finding::new(
                        path,
                        format!(
                            "step {name} is pinned to blake3 {pinned}, but {} has {}",
                            step.path().display(),
                            step.digest()
                        ),
                    )
                    .at_line(at),
                ),
                Ok(None) => self.findings.push(
                    Finding::new(
                        path,
                        format!("step {name} is pinned but not on the step path"),
                    )
                    .at_line(at),
                ),
                Err(e) => self
                    .findings
                    .push(Finding::new(path, format!("step {name}: {e}")).at_line(at)),
            }
        }
        for f in &mut self.findings[before..] {
            if f.rule == crate::policy::finding::DEFAULT_RULE {
                f.rule = rule_of(&f.message, "lobster/lock");
            }
        }
    }

    /// A registry pin of the lock: its tag still points to the pinned
    /// digest, the step fetches and verifies by that digest, and its
    /// signature passes the policy.
    fn registry_pin(&self, name: &str, pin: &crate::policy::lock::OciPin) -> Result<(), String> {
        let r = Reference::parse(name, true).map_err(|e| e.to_string())?;
        self.policy
            .allows_registry(&r.registry, &r.repository)
            .then_some(())
            .ok_or_else(|| {
                format!(
                    "step {name} is from registry {}/{}, which the policy's registries do not list",
                    r.registry, r.repository
                )
            })?;
        let access = Admitter::access(&self.policy).map_err(|e| e.to_string())?;
        let fetcher = Fetcher::new(
            crate::registry::Cache::in_state_dir(StateStore::from_env().dir()),
            access,
        );
        let now = fetcher
            .client()
            .manifest(&r)
            .map_err(|e| format!("step {name}: {e}"))?
            .0;
        if now != pin.digest {
            return Err(format!(
                "step {name}: its tag moved: it now points to {now}, but lobster.lock pins {} (review the new step, then `lobster lock` again; runs keep using the pinned digest)",
                pin.digest
            ));
        }
        let want = crate::registry::Pin {
            digest: pin.digest.clone(),
            blake3: pin.blake3.clone(),
        };
        let fetched = fetcher
            .fetch(&r, Some(&want), false)
            .map_err(|e| format!("step {name}: {e}"))?;
        let bytes = std::fs::read(&fetched.entry.path).map_err(|e| format!("step {name}: {e}"))?;
        let digest = crate::sandbox::digest_of(&bytes);
        self.admission
            .admit(
                name,
                &fetched.entry.path,
                &digest,
                &mut || Ok(bytes.clone()),
            )
            .map_err(|e| e.to_string())
    }
}

/// The rule of a message some other layer wrote: signature and registry
/// refusals are recognised by their wording, the rest is `default`.
fn rule_of(message: &str, default: &'static str) -> &'static str {
    if message.contains("signed") || message.contains("signature") {
        "lobster/signature"
    } else if message.contains("oci://") || message.contains("registry") {
        "lobster/registry"
    } else {
        default
    }
}

/// Split `file:line:col: message` into its file, line and message.
fn locate(line: &str) -> Option<(&str, usize, &str)> {
    // The first `:<digits>:<digits>: ` ends the file name (which may
    // itself contain colons).
    for (i, _) in line.match_indices(':') {
        let rest = &line[i + 1..];
        let digits = |s: &str| s.bytes().take_while(u8::is_ascii_digit).count();
        let n = digits(rest);
        if n == 0 || !rest[n..].starts_with(':') {
            continue;
        }
        let col_part = &rest[n + 1..];
        let m = digits(col_part);
        if m == 0 || !col_part[m..].starts_with(": ") {
            continue;
        }
        let at = rest[..n].parse().ok()?;
        return Some((&line[..i], at, col_part[m + 2..].trim()));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::locate;

    #[test]
    fn locates_file_line_and_message() {
        assert_eq!(
            locate("a:b/wf.lobster:12:5: step x: bad"),
            Some(("a:b/wf.lobster", 12, "step x: bad"))
        );
        assert_eq!(locate("no location: here"), None);
    }
}
