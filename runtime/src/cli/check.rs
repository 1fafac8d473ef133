//! `lobster check [--format json] [--steps DIR]… [--policy FILE] [PATHS…]` for CI:
//! components (`.wasm`), bundles (directories with `manifest.toml`, or the
//! manifest itself), lock files and workflow files. Every problem is listed as
//! `path[:line]: message`; exit 0 only when everything passes.

use super::output::{human_error, write_once};
use super::trust_args;
use crate::kernel::Policy;
use crate::policy::lock::{LockFile, LOCK_FILE};
use crate::policy::Finding;
use crate::sandbox::bundle::{self, component_findings, MANIFEST};
use crate::sandbox::{ArtifactCache, StepPath, StepResolver};
use crate::state::StateStore;
use serde_json::json;
use std::path::{Path, PathBuf};

/// `lobster help check`.
pub const CHECK_HELP: &str = "lobster check — validate steps, bundles and lock files (for CI)

Usage:
  lobster check [--format human|json] [--steps DIR]... [--policy FILE] [PATH...]

PATH is a component (.wasm), a bundle (a directory with manifest.toml, or
the manifest), a lock file (lobster.lock), a workflow file (.lobster, .yaml,
.yml, .json; validated as `lobster run` would, and checked against the
operator policy: --policy FILE, else LOBSTER_POLICY) or a directory (its
components, bundles, lock file and .lobster workflows). Without PATH: the current directory.
What only a run can decide (a templated sub-workflow path, cwd or uses:)
is printed as `warning: FILE:LINE: … decided at run time` and does not fail.
Components must implement lobster:step or wasi:cli/command and import only
what the host provides (wasi:sockets passes: it is linked with every use
refused; never wasi:http or unknown interfaces); bundles must match their manifest; components must match their
pin in ./lobster.lock; lock entries must match the step path (--steps DIRs,
LOBSTER_STEP_PATH, ./steps).
Exit codes: 0 everything passes, 1 problems found, 2 bad arguments.
";

struct Checker {
    cache: ArtifactCache,
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
        let lines = match crate::workflow::load_plan(path, None) {
            Err(e) => e.to_string(),
            Ok((wf, _)) => {
                let resolver = StepResolver::new(self.path.clone(), self.cache.clone());
                let registry = crate::commands::builtin().with_steps(resolver);
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
                found.refused.join("\n")
            }
        };
        for line in lines.lines().filter(|l| !l.trim().is_empty()) {
            self.findings.push(match locate(line) {
                Some((file, at, rest)) => Finding::new(Path::new(file), rest).at_line(Some(at)),
                None => Finding::new(path, line),
            });
        }
    }

    fn bundle(&mut self, path: &Path) {
        self.checked.push(path.to_path_buf());
        self.findings.extend(bundle::verify(path, &self.cache));
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
        let found = component_findings(&bytes, path, &self.cache);
        let clean = found.is_empty();
        self.findings.extend(found);
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
            self.findings.push(Finding::new(
                path,
                format!(
                    "step {name} has blake3 {}, but {} pins {pinned}",
                    c.digest(),
                    lock_path.display()
                ),
            ));
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
        let resolver = StepResolver::new(self.path.clone(), self.cache.clone());
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
    let mut checker = Checker {
        cache: ArtifactCache::in_state_dir(StateStore::from_env().dir()),
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
    if args.json {
        let doc = json!({
            "ok": ok,
            "checked": checker.checked.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
            "problems": checker.findings,
            "decidedAtRunTime": checker.warnings,
        });
        write_once(
            &format!(
                "{}\n",
                serde_json::to_string_pretty(&doc).unwrap_or_default()
            ),
            "",
        );
    } else {
        let mut text: String = checker.findings.iter().map(|f| format!("{f}\n")).collect();
        for w in &checker.warnings {
            text.push_str(&format!("warning: {w}\n"));
        }
        let n = checker.checked.len();
        text.push_str(&format!(
            "lobster check: {n} file{} checked, {} problem{}\n",
            if n == 1 { "" } else { "s" },
            checker.findings.len(),
            if checker.findings.len() == 1 { "" } else { "s" }
        ));
        write_once(&text, "");
    }
    i32::from(!ok)
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
