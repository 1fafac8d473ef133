//! Reading run journals: `lobster runs list|show|export|prune`,
//! `lobster approvals` (the pending gates) and `lobster verify FILE`. The
//! door parses the flags; `crate::app::runs` reads the journals and
//! `runs_render` prints them.

use super::output::finish;
use super::runs_render::{render_list, timeline, verdict_text};
use crate::app::runs as journals;
use crate::error::{Error, Result};
use crate::journal::verify::verify_text;
use crate::state::journal::{status_filter, RunFilter};
use crate::state::StateStore;

/// `lobster help runs`.
pub const RUNS_HELP: &str = "lobster runs — the journal every run leaves

Usage:
  lobster runs list [--status S] [--since T] [--limit N] [--json]
  lobster runs show ID [--json]
  lobster runs export ID [--journal-key FILE] > run.jsonl
  lobster runs prune --older-than DURATION [--keep N]
  lobster approvals [--json]            (the runs waiting at a gate)
  (runs and approvals take --tenant NAME: a `lobster serve` tenant's runs,
   with LOBSTER_STATE_DIR / --store naming the server's store)
  lobster verify FILE [--run ID] [--key PUB]   (check an exported journal offline)
  lobster replay ID|FILE                (run it again offline: lobster help replay)

Every run (lobster run, resume, call, mcp, serve) appends events to a
hash-chained journal in the state store: its start (the request in full,
policy digest, trust, grants, components by digest, env names — never
values), each stage or step (digests, fuel, wall time, the limit it hit; a
host process's exit code and output), gates, decisions (who, through which
door), brokered calls (intent before the request leaves, then the answer),
errors and its end. Human mode prints the run's id on stderr.

list     newest first: id, status, started, duration, pending gate, name.
         --status running|needs_approval|needs_input|ok|error|cancelled|pruned;
         --since an RFC 3339 time or a duration back from now (30m, 24h, 7d).
show     the run's timeline (--json: the journal's records).
export   the journal followed by a checkpoint (events, head hash) that
         `lobster verify` checks; redirect it to a file. With the
         operator's journal key (--journal-key FILE or LOBSTER_JOURNAL_KEY,
         a `lobster keys new` key kept outside the store) the checkpoint is
         signed (minisign format); `verify --key NAME.pub` then requires
         that signature.
prune    remove the journals of settled runs started before now minus
         DURATION, and of all but the newest N settled runs (--keep,
         default 10000); each leaves a tombstone (status pruned, head hash).
verify   checks every event's hash and place in the chain, and the
         checkpoint if there is one; names the first bad event. Exit 0 when
         it verifies, 1 when not.

A stage or step named runs, approvals, verify or replay still runs through
`lobster run '…'`: these words are subcommands first.
";

/// Parsed flags: words, `--json`, and flags with values.
struct Flags {
    words: Vec<String>,
    json: bool,
    help: bool,
    values: Vec<(String, String)>,
}

fn parse(command: &str, argv: &[String], takes: &[&str]) -> Result<Flags> {
    let mut f = Flags {
        words: Vec::new(),
        json: false,
        help: false,
        values: Vec::new(),
    };
    let mut i = 0;
    while i < argv.len() {
        let tok = &argv[i];
        i += 1;
        match tok.as_str() {
            "--json" => f.json = true,
            "-h" | "--help" => f.help = true,
            t if t.starts_with("--") => {
                let (name, inline) = match t.split_once('=') {
                    Some((n, v)) => (n, Some(v.to_string())),
                    None => (t, None),
                };
                if !takes.contains(&name) {
                    let mut known = takes.to_vec();
                    known.extend(["--json", "--help"]);
                    return Err(super::subcommands::unknown_flag(command, name, &known));
                }
                let value = match inline {
                    Some(v) => v,
                    None => {
                        let v = argv.get(i).cloned().ok_or_else(|| {
                            Error::parse(format!("lobster {command} {name} requires a value"))
                        })?;
                        i += 1;
                        v
                    }
                };
                f.values.push((name.to_string(), value));
            }
            _ => f.words.push(tok.clone()),
        }
    }
    Ok(f)
}

impl Flags {
    fn value(&self, name: &str) -> Option<&str> {
        self.values
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// `lobster runs …`.
pub fn runs(argv: &[String]) -> i32 {
    finish(runs_in(&StateStore::from_env(), argv))
}

/// The store `--tenant NAME` names (a `lobster serve` tenant's, under the
/// same root: [`StateStore::for_serve_tenant`], the gateway's own rule),
/// else `store` itself.
fn tenant_store(store: &StateStore, f: &Flags) -> Result<StateStore> {
    match f.value("--tenant") {
        Some(name) => store.for_serve_tenant(name),
        None => Ok(store.clone()),
    }
}

/// `lobster approvals`: the runs waiting at a gate.
pub fn approvals(argv: &[String]) -> i32 {
    finish((|| {
        let f = parse("approvals", argv, &["--tenant"])?;
        if f.help {
            return Ok((RUNS_HELP.to_string(), 0));
        }
        let store = tenant_store(&StateStore::from_env(), &f)?;
        Ok((render_list(&journals::pending(&store)?, f.json), 0))
    })())
}

/// `lobster verify FILE [--run ID]`.
pub fn verify(argv: &[String]) -> i32 {
    finish((|| {
        let f = parse("verify", argv, &["--run", "--key"])?;
        if f.help || f.words.is_empty() {
            return Ok((RUNS_HELP.to_string(), 0));
        }
        let key = match f.value("--key") {
            Some(path) => Some(
                crate::signing::PublicKey::read(std::path::Path::new(path)).map_err(|e| {
                    Error::parse(format!("--key {path}: {e}")).with_hint(
                        "pass the operator's journal public key (NAME.pub of `lobster keys new`)",
                    )
                })?,
            ),
            None => None,
        };
        let [file] = f.words.as_slice() else {
            return Err(Error::parse("lobster verify takes one file"));
        };
        let text = std::fs::read_to_string(file)
            .map_err(|e| Error::parse(format!("cannot read {file}: {e}")))?;
        let mut v = verify_text(&text, f.value("--run"));
        let signed = journals::check_signature(&mut v, key.as_ref());
        Ok(verdict_text(file, &v, &signed))
    })())
}

fn runs_in(store: &StateStore, argv: &[String]) -> Result<(String, i32)> {
    let f = parse(
        "runs",
        argv,
        &[
            "--status",
            "--since",
            "--limit",
            "--older-than",
            "--keep",
            "--tenant",
            "--journal-key",
        ],
    )?;
    if f.help || f.words.is_empty() {
        return Ok((RUNS_HELP.to_string(), 0));
    }
    let store = &tenant_store(store, &f)?;
    match f.words[0].as_str() {
        "list" => {
            let limit = match f.value("--limit") {
                Some(n) => Some(n.parse::<usize>().map_err(|_| {
                    Error::parse(format!("--limit must be a whole number, got {n:?}"))
                })?),
                None => None,
            };
            let filter = RunFilter {
                status: f
                    .value("--status")
                    .map(|s| status_filter(s).map_err(|e| Error::parse(format!("--status: {e}"))))
                    .transpose()?,
                since: f.value("--since").map(journals::since).transpose()?,
                before: None,
                limit,
            };
            Ok((render_list(&store.journal_runs(&filter)?, f.json), 0))
        }
        "show" => {
            let id = one_id(&f)?;
            let text = journals::journal_of(store, id)?;
            if f.json {
                return Ok((text, 0));
            }
            let summary = store.journal_summary(id)?;
            Ok((timeline(summary, id, &text), 0))
        }
        "export" => {
            let id = one_id(&f)?;
            let key = f.value("--journal-key");
            Ok((journals::export(store, id, key)?, 0))
        }
        "prune" => {
            let older = f.value("--older-than").ok_or_else(|| {
                Error::parse("lobster runs prune requires --older-than DURATION (e.g. 30d)")
            })?;
            let cutoff = journals::since(older)?;
            let keep = match f.value("--keep") {
                Some(n) => n.parse::<usize>().map_err(|_| {
                    Error::parse(format!("--keep must be a whole number, got {n:?}"))
                })?,
                None => journals::DEFAULT_KEEP,
            };
            let pruned = journals::prune(store, &cutoff, keep)?;
            Ok((format!("pruned {pruned} run journal(s)\n"), 0))
        }
        other => Err(Error::parse(format!("unknown runs subcommand: {other}"))
            .with_hint("lobster runs list|show ID|export ID|prune (see lobster help runs)")),
    }
}

/// The one run id after `show` or `export`.
fn one_id(f: &Flags) -> Result<&str> {
    match f.words.as_slice() {
        [_, id] => Ok(id.as_str()),
        _ => Err(Error::parse(format!(
            "lobster runs {} takes one run id (see lobster runs list)",
            f.words[0]
        ))),
    }
}
