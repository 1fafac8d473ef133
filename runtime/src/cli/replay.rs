//! `lobster replay ID|FILE`: the door of [`crate::app::replay`] — flags in,
//! `identical` or the first divergence out, with its exit code.

use super::output::finish;
use crate::app::replay::{load, replay as run_replay, ReplayOptions, ReplayReport};
use crate::error::{Error, Result};
use crate::state::StateStore;
use serde_json::json;
use std::path::PathBuf;

/// The exit code of a replay that diverged (0: identical; 1 and 2: it
/// could not be replayed, as for any other error).
pub const DIVERGED: i32 = 3;

/// `lobster help replay`.
pub const REPLAY_HELP: &str = "lobster replay — run a finished run again, offline, from its journal

Usage:
  lobster replay ID|FILE [--rerun-host] [--steps DIR] [--cwd DIR] [--policy FILE]
                         [--tenant NAME] [--json]

ID is a run in the state store (lobster runs list); FILE a journal written
by `lobster runs export`. The journal's chain is verified first: one that
does not verify, or a run that has not settled, is not replayed.

The replay runs the recorded request (the pipeline, or the workflow file if
it is unchanged, else its recorded text, with its args) with the recorded
clock, random seed and grants, in the run's working directory (--cwd DIR:
another one; granted directories under the run's move with it). Components
come from the step path (--steps, LOBSTER_STEP_PATH, ./steps) and are
compared by digest step by step. Brokered tool and model calls are answered
from the journal and never sent; host lines and a pipeline's exec stages
get their recorded output and exit code (--rerun-host: they run again; one
whose output the journal did not keep in full — a host line past 1 MiB, an
exec stage past 64 KiB, or one the next stage stopped reading, like
`exec … | head` — is not replayable without it); each gate gets the
decision the run recorded. Writable directories are copied first: a replay
writes none of your files. Its own state is a scratch store, removed after.

It prints `identical`, or the first divergence: the step, what differs
(component, input, output, ok, exit code, a step missing or extra, the run's
end) and the expected and actual digests. --json prints the same as JSON.

Exit status: 0 identical, 3 diverged, 1 or 2 when it cannot be replayed
(an unknown id, a file that is not a journal, a journal that does not
verify, a component missing from the step path).

A stage or step named replay still runs through `lobster run '…'`.
";

/// `lobster replay …`.
pub fn replay(argv: &[String]) -> i32 {
    finish(replay_in(argv))
}

fn replay_in(argv: &[String]) -> Result<(String, i32)> {
    let mut opts = ReplayOptions::default();
    let mut json = false;
    let mut tenant: Option<String> = None;
    let mut words = Vec::new();
    let mut it = argv.iter();
    while let Some(tok) = it.next() {
        let (name, inline) = match tok.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (tok.as_str(), None),
        };
        let mut value = || -> Result<String> {
            match inline.clone() {
                Some(v) => Ok(v),
                None => it
                    .next()
                    .cloned()
                    .ok_or_else(|| Error::parse(format!("lobster replay {name} requires a value"))),
            }
        };
        match name {
            "-h" | "--help" => return Ok((REPLAY_HELP.to_string(), 0)),
            "--json" => json = true,
            "--rerun-host" => opts.rerun_host = true,
            "--steps" => opts.steps.push(value()?),
            "--cwd" => opts.cwd = Some(PathBuf::from(value()?)),
            "--policy" => opts.policy = Some(value()?),
            "--tenant" => tenant = Some(value()?),
            t if t.starts_with("--") => {
                let known = super::subcommands::find("replay").map_or(&[][..], |s| s.flags);
                return Err(super::subcommands::unknown_flag("replay", t, known));
            }
            _ => words.push(tok.clone()),
        }
    }
    let [target] = words.as_slice() else {
        return Err(
            Error::parse("lobster replay takes one run id or journal file")
                .with_hint("lobster replay ID|FILE (see lobster help replay)"),
        );
    };
    let store = StateStore::from_env();
    let store = match &tenant {
        Some(name) => store.for_serve_tenant(name)?,
        None => store,
    };
    let recorded = load(&store, target)?;
    let report = run_replay(recorded, &opts)?;
    let code = if report.divergence.is_some() {
        DIVERGED
    } else {
        0
    };
    Ok((render(&report, json), code))
}

fn render(r: &ReplayReport, json: bool) -> String {
    if json {
        let v = json!({
            "runId": r.run_id,
            "result": if r.divergence.is_some() { "diverged" } else { "identical" },
            "steps": r.steps,
            "divergence": r.divergence,
            "error": r.error,
        });
        return format!("{}\n", serde_json::to_string_pretty(&v).unwrap_or_default());
    }
    match &r.divergence {
        None => format!(
            "replay of run {}: identical ({} steps)\n",
            r.run_id, r.steps
        ),
        Some(d) => {
            let mut out = format!("replay of run {}: diverged: {d}\n", r.run_id);
            if let Some(e) = &r.error {
                out.push_str(&format!("the replay ended with an error: {e}\n"));
            }
            out
        }
    }
}
