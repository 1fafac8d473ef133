//! Reading run journals: `lobster runs list|show|export|prune`,
//! `lobster approvals` (the pending gates) and `lobster verify FILE`.

use super::output::finish;
use crate::error::{Error, Result};
use crate::journal::verify::{verify_text, Checkpoint, CheckpointLine, Verdict};
use crate::state::journal::{RunFilter, RunSummary};
use crate::state::StateStore;
use serde_json::{json, Value};
use std::time::Duration;

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
         --status ok|error|cancelled|running|needs_approval|needs_input|pruned;
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
/// same root), else `store` itself.
fn tenant_store(store: &StateStore, f: &Flags) -> StateStore {
    match f.value("--tenant") {
        Some(name) => store.for_tenant(name),
        None => store.clone(),
    }
}

/// The operator's journal key (`--journal-key FILE`, else
/// `LOBSTER_JOURNAL_KEY`), if one is named. It must be kept outside the
/// state store: whoever can write the store must not be able to re-sign.
fn journal_key(f: &Flags, store: &StateStore) -> Result<Option<crate::signing::SecretKey>> {
    let path = match f.value("--journal-key") {
        Some(p) => p.to_string(),
        None => match std::env::var("LOBSTER_JOURNAL_KEY") {
            Ok(p) if !p.is_empty() => p,
            _ => return Ok(None),
        },
    };
    let real = std::fs::canonicalize(&path)
        .map_err(|e| Error::parse(format!("cannot read the journal key {path}: {e}")))?;
    if let Ok(dir) = std::fs::canonicalize(store.dir()) {
        if real.starts_with(&dir) {
            return Err(Error::parse(format!(
                "the journal key {path} is inside the state store ({}): whoever can write the store could re-sign",
            dir.display()
            ))
            .with_hint("keep the key elsewhere (lobster keys new NAME --dir /etc/lobster)"));
        }
    }
    crate::signing::SecretKey::read(&real)
        .map(Some)
        .map_err(|e| Error::parse(format!("the journal key {path}: {e}")))
}

/// `lobster approvals`: the runs waiting at a gate.
pub fn approvals(argv: &[String]) -> i32 {
    finish((|| {
        let f = parse("approvals", argv, &["--tenant"])?;
        if f.help {
            return Ok((RUNS_HELP.to_string(), 0));
        }
        let store = tenant_store(&StateStore::from_env(), &f);
        let mut runs = Vec::new();
        for status in ["needs_approval", "needs_input"] {
            runs.extend(store.journal_runs(&RunFilter {
                status: Some(status.into()),
                ..RunFilter::default()
            })?);
        }
        runs.sort_by(|a, b| b.started_at.cmp(&a.started_at));
        Ok((render_list(&runs, f.json), 0))
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
        let signed = check_signature(&mut v, key.as_ref());
        Ok(verdict_text(file, &v, &signed))
    })())
}

/// What `verify` says of the checkpoint's signature (its problem, if any,
/// goes into `v`): checked against `key` when given — then a checkpoint
/// without a good signature by it does not verify.
fn check_signature(v: &mut Verdict, key: Option<&crate::signing::PublicKey>) -> String {
    use crate::signing::Verdict as Sig;
    let line = v.events as usize + 1;
    let Some(cp) = v.checkpoint.clone() else {
        if key.is_some() {
            v.problem.get_or_insert(crate::journal::verify::Problem {
                seq: None,
                line,
                message: "no checkpoint: --key needs an export with a signed checkpoint (lobster runs export --journal-key)".into(),
            });
        }
        return String::new();
    };
    let Some(text) = cp.signature.as_deref() else {
        if key.is_some() {
            v.problem.get_or_insert(crate::journal::verify::Problem {
                seq: None,
                line,
                message: "the checkpoint is not signed (exported without a journal key)".into(),
            });
        }
        return " (unsigned)".into();
    };
    let Some(key) = key else {
        return " (signed; pass --key PUB to check the signature)".into();
    };
    let bad = |v: &mut Verdict, message: String| {
        v.problem.get_or_insert(crate::journal::verify::Problem {
            seq: None,
            line,
            message,
        });
        String::new()
    };
    let sig = match crate::signing::Signature::parse(text, "the checkpoint's signature") {
        Ok(s) => s,
        Err(e) => return bad(v, e.to_string()),
    };
    match crate::signing::verify(
        &cp.checkpoint.signed_bytes(),
        &sig,
        std::slice::from_ref(key),
    ) {
        Sig::Trusted(signer) => format!(", signed by {signer}"),
        Sig::UnknownKey(signer) => bad(
            v,
            format!(
                "the checkpoint is signed by {signer}, not by the key given ({})",
                key.id()
            ),
        ),
        Sig::Invalid { reason, .. } => bad(
            v,
            format!("the checkpoint's signature does not verify: {reason}"),
        ),
    }
}

fn verdict_text(file: &str, v: &Verdict, signed: &str) -> (String, i32) {
    let run = v.run.as_deref().unwrap_or("(unknown)");
    match &v.problem {
        Some(p) => (
            format!(
                "{file}: NOT VERIFIED (run {run}): line {}: {}\n",
                p.line, p.message
            ),
            1,
        ),
        None => {
            let end = match &v.ended {
                Some(s) => format!("ended {s}"),
                None => "no end recorded (still going, killed, or cut)".into(),
            };
            let cp = if v.checkpoint.is_some() {
                format!(", checkpoint matches{signed}")
            } else {
                ", no checkpoint".to_string()
            };
            let capped = if v.capped { ", capped" } else { "" };
            (
                format!(
                    "{file}: verified: run {run}, {} events, head {}, {end}{cp}{capped}\n",
                    v.events, v.head
                ),
                0,
            )
        }
    }
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
    let store = &tenant_store(store, &f);
    match f.words[0].as_str() {
        "list" => {
            let limit = match f.value("--limit") {
                Some(n) => Some(n.parse::<usize>().map_err(|_| {
                    Error::parse(format!("--limit must be a whole number, got {n:?}"))
                })?),
                None => None,
            };
            let filter = RunFilter {
                status: f.value("--status").map(str::to_string),
                since: f.value("--since").map(since).transpose()?,
                before: None,
                limit,
            };
            Ok((render_list(&store.journal_runs(&filter)?, f.json), 0))
        }
        "show" => {
            let id = one_id(&f)?;
            let text = journal_of(store, id)?;
            if f.json {
                return Ok((text, 0));
            }
            Ok((timeline(store, id, &text)?, 0))
        }
        "export" => {
            let id = one_id(&f)?;
            let text = journal_of(store, id)?;
            let v = verify_text(&text, Some(id));
            if let Some(p) = v.problem.as_ref().filter(|_| !v.torn_tail) {
                return Err(Error::runtime(format!(
                    "run {id}'s journal does not verify (line {}: {}); not exported",
                    p.line, p.message
                ))
                .with_hint(format!("lobster runs show {id}")));
            }
            // Only the whole events: a torn tail is not exported.
            let whole: String = text
                .lines()
                .take(v.events as usize)
                .map(|l| format!("{l}\n"))
                .collect();
            let checkpoint = Checkpoint {
                run: id.to_string(),
                events: v.events,
                head: v.head.clone(),
                at: crate::journal::now_rfc3339(),
            };
            let signature = match journal_key(&f, store)? {
                Some(key) => Some(
                    crate::signing::sign(
                        &key,
                        &checkpoint.signed_bytes(),
                        &format!("run {id} checkpoint"),
                    )
                    .map_err(|e| Error::runtime(format!("cannot sign the checkpoint: {e}")))?
                    .text()
                    .to_string(),
                ),
                None => None,
            };
            let cp = CheckpointLine {
                checkpoint,
                signature,
            };
            let line = serde_json::to_string(&cp).unwrap_or_default();
            Ok((format!("{whole}{line}\n"), 0))
        }
        "prune" => {
            let older = f.value("--older-than").ok_or_else(|| {
                Error::parse("lobster runs prune requires --older-than DURATION (e.g. 30d)")
            })?;
            let cutoff = since(older)?;
            let keep = match f.value("--keep") {
                Some(n) => n.parse::<usize>().map_err(|_| {
                    Error::parse(format!("--keep must be a whole number, got {n:?}"))
                })?,
                None => 10_000,
            };
            let pruned = store.journal_prune(&cutoff, keep)?;
            Ok((format!("pruned {} run journal(s)\n", pruned.len()), 0))
        }
        other => Err(Error::parse(format!("unknown runs subcommand: {other}"))
            .with_hint("lobster runs list|show ID|export ID|prune (see lobster help runs)")),
    }
}

fn one_id(f: &Flags) -> Result<&str> {
    match f.words.as_slice() {
        [_, id] => Ok(id.as_str()),
        _ => Err(Error::parse(format!(
            "lobster runs {} takes one run id (see lobster runs list)",
            f.words[0]
        ))),
    }
}

fn journal_of(store: &StateStore, id: &str) -> Result<String> {
    store.journal_text(id)?.ok_or_else(|| {
        let pruned = store
            .journal_summary(id)
            .ok()
            .flatten()
            .filter(|s| s.status == "pruned");
        match pruned {
            Some(s) => Error::runtime(format!(
                "run {id} was pruned; its tombstone keeps {} events, head {}",
                s.events, s.head
            )),
            None => Error::runtime(format!("no journal for run {id} in {}", store.describe()))
                .with_hint("lobster runs list shows the runs"),
        }
    })
}

/// An RFC 3339 time, or a duration back from now (`30s`, `15m`, `24h`, `7d`).
fn since(text: &str) -> Result<String> {
    if let Some(d) = parse_duration(text) {
        let at = chrono::Utc::now() - chrono::Duration::from_std(d).unwrap_or_default();
        return Ok(at.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string());
    }
    chrono::DateTime::parse_from_rfc3339(text)
        .map(|t| {
            t.with_timezone(&chrono::Utc)
                .format("%Y-%m-%dT%H:%M:%S%.3fZ")
                .to_string()
        })
        .map_err(|_| {
            Error::parse(format!(
                "{text:?} is neither a duration (30m, 24h, 7d) nor an RFC 3339 time"
            ))
        })
}

/// `N` followed by `s`, `m`, `h` or `d`.
pub fn parse_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    let (n, unit) = text.split_at(text.len().checked_sub(1)?);
    let n: u64 = n.parse().ok()?;
    let secs = match unit {
        "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        "d" => n * 86_400,
        _ => return None,
    };
    Some(Duration::from_secs(secs))
}

fn millis_between(a: &str, b: &str) -> Option<i64> {
    let a = chrono::DateTime::parse_from_rfc3339(a).ok()?;
    let b = chrono::DateTime::parse_from_rfc3339(b).ok()?;
    Some((b - a).num_milliseconds())
}

fn render_list(runs: &[RunSummary], json: bool) -> String {
    if json {
        let rows: Vec<Value> = runs
            .iter()
            .map(|s| {
                json!({
                    "runId": s.run_id,
                    "name": s.name,
                    "door": s.door,
                    "status": s.status,
                    "startedAt": s.started_at,
                    "endedAt": s.ended_at,
                    "durationMs": s.ended_at.as_deref().and_then(|e| millis_between(&s.started_at, e)),
                    "gate": s.gate,
                    "events": s.events,
                    "head": s.head,
                })
            })
            .collect();
        return format!(
            "{}\n",
            serde_json::to_string_pretty(&rows).unwrap_or_default()
        );
    }
    let mut out = format!(
        "{:<32}  {:<14}  {:<24}  {:>9}  {:<8}  {}\n",
        "RUN", "STATUS", "STARTED", "DURATION", "GATE", "NAME"
    );
    for s in runs {
        let duration = s
            .ended_at
            .as_deref()
            .and_then(|e| millis_between(&s.started_at, e))
            .map(|ms| format!("{ms}ms"))
            .unwrap_or_else(|| "-".into());
        let name: String = s.name.chars().take(60).collect();
        out.push_str(&format!(
            "{:<32}  {:<14}  {:<24}  {:>9}  {:<8}  {}\n",
            s.run_id,
            s.status,
            s.started_at,
            duration,
            s.gate.as_deref().unwrap_or("-"),
            name.replace('\n', " ")
        ));
    }
    out
}

fn timeline(store: &StateStore, id: &str, text: &str) -> Result<String> {
    let v = verify_text(text, Some(id));
    let mut out = String::new();
    if let Some(s) = store.journal_summary(id)? {
        out.push_str(&format!(
            "run {id}  {}  {}  started {}  via {}\n",
            s.status, s.name, s.started_at, s.door
        ));
    }
    match &v.problem {
        None => out.push_str(&format!("journal: {} events, chain verifies\n", v.events)),
        Some(p) => out.push_str(&format!("journal: DOES NOT VERIFY: {}\n", p.message)),
    }
    for line in text.lines() {
        let Ok(rec) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let e = &rec["event"];
        let s = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("");
        let n = |k: &str| e.get(k).and_then(Value::as_u64);
        let short = |d: &str| d.chars().take(12).collect::<String>();
        let detail = match s("kind") {
            "run_started" => format!(
                "{} {} (trust {}, policy {})",
                e["request"]["kind"].as_str().unwrap_or(""),
                e["request"]["file"]
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| e["request"]["text"]
                        .as_str()
                        .unwrap_or("")
                        .chars()
                        .take(80)
                        .collect()),
                s("trust"),
                short(s("policy_digest"))
            ),
            "step" => {
                let mut d = format!(
                    "{} {} {}ms",
                    s("step_kind"),
                    s("id"),
                    n("wall_ms").unwrap_or(0)
                );
                if !s("name").is_empty() && s("name") != s("id") {
                    d = format!(
                        "{} {} {}ms",
                        s("step_kind"),
                        s("name"),
                        n("wall_ms").unwrap_or(0)
                    );
                }
                if let Some(c) = e.get("component").and_then(Value::as_str) {
                    d.push_str(&format!(" component {}", short(c)));
                }
                if let Some(f) = n("fuel") {
                    d.push_str(&format!(" fuel {f}"));
                }
                if let Some(c) = e.get("exit_code").and_then(Value::as_i64) {
                    d.push_str(&format!(" exit {c}"));
                }
                if let Some(l) = e.get("limit").and_then(Value::as_str) {
                    d.push_str(&format!(" hit {l}"));
                }
                if e.get("ok") == Some(&Value::Bool(false)) {
                    d.push_str(" FAILED");
                }
                d
            }
            "gate_opened" => format!(
                "{} at step {}: {:?}{}",
                s("gate"),
                s("step"),
                s("prompt"),
                e.get("approval_id")
                    .and_then(Value::as_str)
                    .map(|id| format!(" (id {id})"))
                    .unwrap_or_default()
            ),
            "decision" => format!(
                "{} by {} via {}",
                s("decision"),
                e.get("approver")
                    .and_then(Value::as_str)
                    .unwrap_or("(unnamed)"),
                s("door")
            ),
            "call_intent" => format!(
                "{} {} request {}",
                s("target"),
                s("name"),
                short(s("request_digest"))
            ),
            "call_answer" => format!(
                "answer to {}{}",
                short(s("request_digest")),
                if e.get("replayed") == Some(&Value::Bool(true)) {
                    " (replayed)"
                } else {
                    ""
                }
            ),
            "error" => s("message").to_string(),
            "run_ended" => format!("{} after {}ms", s("status"), n("wall_ms").unwrap_or(0)),
            "run_resumed" => format!("via {}", s("door")),
            "capped" => "journal capped: later events omitted".to_string(),
            other => other.to_string(),
        };
        out.push_str(&format!(
            "{:>4}  {:<12}  {}\n",
            rec["seq"].as_u64().unwrap_or(0),
            s("kind"),
            detail
        ));
    }
    Ok(out)
}
