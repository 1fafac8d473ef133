//! `lobster check [--format human|json|sarif|github] [--steps DIR]… [--policy FILE] [PATHS…]`
//! for CI. The door parses the flags and loads the operator policy;
//! `crate::app::check` checks components, bundles, lock files and workflow
//! files; every problem is printed as `path[:line]: message` (or as JSON,
//! SARIF or GitHub annotations, [`super::check_format`]); exit 0 only when
//! everything passes.

use super::output::{human_error, write_once};
use super::trust_args::{self, Format};
use crate::kernel::Policy;
use serde_json::json;
use std::path::PathBuf;

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
    let paths: Vec<String> = if args.words.is_empty() {
        vec![".".into()]
    } else {
        args.words
    };
    let report = crate::app::check::check(policy, &extra, &cwd, &paths);
    let ok = report.ok();
    let code = i32::from(!ok);
    let n = report.checked.len();
    let summary = format!(
        "lobster check: {n} file{} checked, {} problem{}\n",
        if n == 1 { "" } else { "s" },
        report.findings.len(),
        if report.findings.len() == 1 { "" } else { "s" }
    );
    let text = match args.format {
        Format::Json => {
            let doc = json!({
                "ok": ok,
                "checked": report.checked.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
                "problems": report.findings,
                "decidedAtRunTime": report.warnings,
            });
            format!(
                "{}\n",
                serde_json::to_string_pretty(&doc).unwrap_or_default()
            )
        }
        Format::Sarif => {
            let log = super::check_format::sarif(&report.findings, &report.warnings, &cwd, code);
            format!(
                "{}\n",
                serde_json::to_string_pretty(&log).unwrap_or_default()
            )
        }
        Format::Github => {
            super::check_format::github(&report.findings, &report.warnings, &cwd, &summary)
        }
        Format::Human => {
            let mut text: String = report.findings.iter().map(|f| format!("{f}\n")).collect();
            for w in &report.warnings {
                text.push_str(&format!("warning: {w}\n"));
            }
            text.push_str(&summary);
            text
        }
    };
    write_once(&text, "");
    code
}
