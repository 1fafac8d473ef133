//! `lobster check [--format human|json|sarif|github] [--steps DIR]… [--policy FILE] [PATHS…]`
//! for CI: components (`.wasm`), bundles (directories with `manifest.toml`,
//! or the manifest itself), lock files (with their registry pins, resolved
//! and verified) and workflow files. Every problem is listed as
//! `path[:line]: message` (or as SARIF / GitHub annotations,
//! [`super::check_format`]); exit 0 only when everything passes.

use super::output::{human_error, write_once};
use super::trust_args::{self, Format};
use crate::kernel::Policy;
use crate::policy::lock::{LockFile, LOCK_FILE};
use crate::policy::Finding;
use crate::registry::{Admitter, Fetcher, Reference};
use crate::sandbox::bundle::{self, component_findings, MANIFEST};
use crate::sandbox::Admission;
use crate::sandbox::{ArtifactCache, StepPath, StepResolver};
use crate::state::StateStore;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// `lobster help check`.
pub const CHECK_HELP: &str = "lobster check — validate steps, bundles and lock files (for CI)

Usage:
  lobster check [--format human|json|sarif|github] [--steps DIR]... [--policy FILE] [PATH...]

PATH is a component (.wasm), a bundle (a directory with manifest.toml, or
the manifest), a lock file (lobster.lock), a workflow file (.lobster, .yaml,
.yml, .json; validated as `lobster run` would: every stage name and its
flags, and every `uses:` component and its `with:` keys, resolved on the
step path; and checked against the operator policy: --policy FILE, else
LOBSTER_POLICY) or a directory (its
components, bundles, lock file and .lobster workflows). Without PATH: the current directory.
What only a run can decide (a templated sub-workflow path, cwd or uses:)
is printed as `warning: FILE:LINE: … decided at run time` and does not fail.
Components must implement lobster:step or wasi:cli/command and import only
what the host provides (wasi:sockets passes: it is linked with every use
refused; never wasi:http or unknown interfaces); bundles must match their manifest; components must match their
pin in ./lobster.lock; lock entries must match the step path (--steps DIRs,
LOBSTER_STEP_PATH, ./steps); registry pins ([oci] in lobster.lock) are
resolved at their registry (a tag that moved since it was pinned is a
problem) and fetched by their pinned digest into the local cache, verified.
Under a policy with [signers] require_signed, every component needs a
signature (FILE.minisig) by a listed key; a signature that does not verify
is always a problem.

Formats: human (default: `path[:line]: message` lines and a summary), json
({ok, checked, problems, decidedAtRunTime}), sarif (SARIF 2.1.0 for
code-scanning upload: one result per problem, rule ids lobster/component,
lobster/bundle, lobster/lock, lobster/workflow, lobster/signature,
lobster/registry; run-time decisions as warnings), github (GitHub Actions
annotations `::error file=F,line=N,title=RULE::MESSAGE`, then the summary).
Exit codes: 0 everything passes, 1 problems found, 2 bad arguments (and
for a policy file that does not parse).
";

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
        } else if super::workflow_file::has_workflow_extension(path) {
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

/// Run `lobster check …`; returns the exit code.
pub fn check(argv: &[String]) -> i32 {
    let args = match trust_args::parse("check", argv, &["--format", "--steps", "--policy"]) {
        Ok(a) => a,
        Err(e) => {
            write_once("", &human_error(&e, None));
            return e.exit_code();
        }
    };
    if args.help {
        write_once(CHECK_HELP, "");
        return 0;
    }
    let cwd = std::env::current_dir().unwrap_or_default();
    let policy = match Policy::from_flag_or_env(args.policy.as_deref(), &cwd) {
        Ok(p) => p,
        Err(e) => {
            write_once("", &human_error(&e, None));
            return e.exit_code();
        }
    };
    let extra: Vec<PathBuf> = args.steps.iter().map(PathBuf::from).collect();
    let lock_path = cwd.join(LOCK_FILE);
    let state = StateStore::from_env();
    let admission = Arc::new(Admitter::new(
        Arc::new(crate::policy::Authority::new(policy.clone(), cwd.clone())),
        state.dir(),
    ));
    let mut checker = Checker {
        cache: ArtifactCache::in_state_dir(state.dir()),
        admission,
        path: StepPath::from_env(&cwd, &extra),
        pins: None,
        policy,
        cwd: cwd.clone(),
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
    let paths: Vec<String> = if args.words.is_empty() {
        vec![".".into()]
    } else {
        args.words
    };
    for p in &paths {
        checker.check(Path::new(p));
    }
    let ok = checker.findings.is_empty();
    let code = i32::from(!ok);
    let n = checker.checked.len();
    let summary = format!(
        "lobster check: {n} file{} checked, {} problem{}\n",
        if n == 1 { "" } else { "s" },
        checker.findings.len(),
        if checker.findings.len() == 1 { "" } else { "s" }
    );
    let text = match args.format {
        Format::Json => {
            let doc = json!({
                "ok": ok,
                "checked": checker.checked.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
                "problems": checker.findings,
                "decidedAtRunTime": checker.warnings,
            });
            format!(
                "{}\n",
                serde_json::to_string_pretty(&doc).unwrap_or_default()
            )
        }
        Format::Sarif => {
            let log = super::check_format::sarif(&checker.findings, &checker.warnings, &cwd, code);
            format!(
                "{}\n",
                serde_json::to_string_pretty(&log).unwrap_or_default()
            )
        }
        Format::Github => {
            super::check_format::github(&checker.findings, &checker.warnings, &cwd, &summary)
        }
        Format::Human => {
            let mut text: String = checker.findings.iter().map(|f| format!("{f}\n")).collect();
            for w in &checker.warnings {
                text.push_str(&format!("warning: {w}\n"));
            }
            text.push_str(&summary);
            text
        }
    };
    write_once(&text, "");
    code
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
