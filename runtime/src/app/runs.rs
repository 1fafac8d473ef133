//! Reading run journals for a door (`lobster runs`, `approvals`, `verify`):
//! the runs a filter keeps, the ones waiting at a gate, one run's journal
//! (or why there is none), its export with a checkpoint signed by the
//! operator's journal key, pruning, and checking an export's signature.
//! Doors render what these return; a run in a JSON list is one shape for
//! every door ([`RunRow`]).

use crate::error::{Error, Result};
use crate::journal::verify::{verify_text, Checkpoint, CheckpointLine, Problem, Verdict};
use crate::signing::{self, PublicKey, SecretKey};
use crate::state::journal::{RunFilter, RunSummary};
use crate::state::StateStore;
use serde::Serialize;
use std::time::Duration;

/// How many settled runs `prune` keeps when not told (`--keep`).
pub const DEFAULT_KEEP: usize = 10_000;

/// A run as a JSON run list shows it (`lobster runs list --json`, `GET
/// /v1/runs`): one shape for every door, so the lists cannot drift apart.
/// The keys, in this order: `runId`, `name`, `door`, `status`,
/// `startedAt`, `endedAt` (null while going on), then the door's own
/// fields (`E`: the command line's [`WithDuration`], nothing for serve),
/// `gate` (the pending gate's short id, or null), `events`, `head`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunRow<'a, E: Serialize = ()> {
    run_id: &'a str,
    name: &'a str,
    door: &'a str,
    status: &'a str,
    started_at: &'a str,
    ended_at: Option<&'a str>,
    #[serde(flatten)]
    extra: E,
    gate: Option<&'a str>,
    events: u64,
    head: &'a str,
}

impl<'a> RunRow<'a> {
    /// `s` as listed, with no field of a door's own.
    pub fn of(s: &'a RunSummary) -> Self {
        RunRow::with(s, ())
    }
}

impl<'a, E: Serialize> RunRow<'a, E> {
    /// `s` as listed, with the door's own fields `extra` after `endedAt`.
    pub fn with(s: &'a RunSummary, extra: E) -> Self {
        RunRow {
            run_id: &s.run_id,
            name: &s.name,
            door: &s.door,
            status: &s.status,
            started_at: &s.started_at,
            ended_at: s.ended_at.as_deref(),
            extra,
            gate: s.gate.as_deref(),
            events: s.events,
            head: &s.head,
        }
    }
}

/// The command line's own field of a listed run: `durationMs`, how long it
/// took ([`duration_ms`]; null while it is going on).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WithDuration {
    duration_ms: Option<i64>,
}

impl WithDuration {
    /// `s`'s duration.
    pub fn of(s: &RunSummary) -> Self {
        WithDuration {
            duration_ms: duration_ms(s),
        }
    }
}

/// Milliseconds from a run's start to its end (`None` while it is going
/// on, or when a time does not read as RFC 3339).
pub fn duration_ms(s: &RunSummary) -> Option<i64> {
    let a = chrono::DateTime::parse_from_rfc3339(&s.started_at).ok()?;
    let b = chrono::DateTime::parse_from_rfc3339(s.ended_at.as_deref()?).ok()?;
    Some((b - a).num_milliseconds())
}

/// The runs waiting at a gate (approval or input), newest first.
pub fn pending(store: &StateStore) -> Result<Vec<RunSummary>> {
    let mut runs = Vec::new();
    for status in ["needs_approval", "needs_input"] {
        runs.extend(store.journal_runs(&RunFilter {
            status: Some(status.into()),
            ..RunFilter::default()
        })?);
    }
    runs.sort_by(|a, b| b.started_at.cmp(&a.started_at));
    Ok(runs)
}

/// The journal of run `id`, or an error that says it was pruned (with its
/// tombstone) or that the store has none.
pub fn journal_of(store: &StateStore, id: &str) -> Result<String> {
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

/// The operator's journal key (`flag`, i.e. `--journal-key FILE`, else
/// `LOBSTER_JOURNAL_KEY`), if one is named. It must be kept outside the
/// state store: whoever can write the store must not be able to re-sign.
pub fn journal_key(flag: Option<&str>, store: &StateStore) -> Result<Option<SecretKey>> {
    let path = match flag {
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
    SecretKey::read(&real)
        .map(Some)
        .map_err(|e| Error::parse(format!("the journal key {path}: {e}")))
}

/// Run `id`'s journal as exported: its whole events (a torn tail is left
/// out) followed by a checkpoint line (events, head hash), signed with the
/// operator's journal key when one is named ([`journal_key`] of
/// `key_flag`). A journal that does not verify is not exported.
pub fn export(store: &StateStore, id: &str, key_flag: Option<&str>) -> Result<String> {
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
    let signature = match journal_key(key_flag, store)? {
        Some(key) => Some(
            signing::sign(
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
    Ok(format!("{whole}{line}\n"))
}

/// Remove the journals of settled runs started before `cutoff` (RFC 3339,
/// as [`since`] gives it) and of all but the newest `keep`; how many were
/// pruned. Each leaves a tombstone.
pub fn prune(store: &StateStore, cutoff: &str, keep: usize) -> Result<usize> {
    Ok(store.journal_prune(cutoff, keep)?.len())
}

/// What `verify` says of the checkpoint's signature (its problem, if any,
/// goes into `v`): checked against `key` when given — then a checkpoint
/// without a good signature by it does not verify.
pub fn check_signature(v: &mut Verdict, key: Option<&PublicKey>) -> String {
    use crate::signing::Verdict as Sig;
    let line = v.events as usize + 1;
    let Some(cp) = v.checkpoint.clone() else {
        if key.is_some() {
            v.problem.get_or_insert(Problem {
                seq: None,
                line,
                message: "no checkpoint: --key needs an export with a signed checkpoint (lobster runs export --journal-key)".into(),
            });
        }
        return String::new();
    };
    let Some(text) = cp.signature.as_deref() else {
        if key.is_some() {
            v.problem.get_or_insert(Problem {
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
        v.problem.get_or_insert(Problem {
            seq: None,
            line,
            message,
        });
        String::new()
    };
    let sig = match signing::Signature::parse(text, "the checkpoint's signature") {
        Ok(s) => s,
        Err(e) => return bad(v, e.to_string()),
    };
    match signing::verify(
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

/// An RFC 3339 time, or a duration back from now (`30s`, `15m`, `24h`, `7d`).
pub fn since(text: &str) -> Result<String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(ended: Option<&str>, gate: Option<&str>) -> RunSummary {
        RunSummary {
            run_id: "r1".into(),
            name: "wf.lobster".into(),
            door: "cli".into(),
            status: "ok".into(),
            started_at: "2026-12-02T06:00:00.000Z".into(),
            ended_at: ended.map(str::to_string),
            gate: gate.map(str::to_string),
            head: "ab".into(),
            events: 4,
        }
    }

    #[test]
    fn every_door_lists_a_run_with_the_same_keys_in_the_same_order() {
        let ended = summary(Some("2026-12-02T06:00:01.250Z"), None);
        assert_eq!(
            serde_json::to_string(&RunRow::of(&ended)).unwrap(),
            r#"{"runId":"r1","name":"wf.lobster","door":"cli","status":"ok","startedAt":"2026-12-02T06:00:00.000Z","endedAt":"2026-12-02T06:00:01.250Z","gate":null,"events":4,"head":"ab"}"#
        );
        assert_eq!(
            serde_json::to_string(&RunRow::with(&ended, WithDuration::of(&ended))).unwrap(),
            r#"{"runId":"r1","name":"wf.lobster","door":"cli","status":"ok","startedAt":"2026-12-02T06:00:00.000Z","endedAt":"2026-12-02T06:00:01.250Z","durationMs":1250,"gate":null,"events":4,"head":"ab"}"#
        );
        // Going on (paused at a gate): no end, no duration, both null.
        let paused = summary(None, Some("0a1b2c3d"));
        assert_eq!(
            serde_json::to_string(&RunRow::with(&paused, WithDuration::of(&paused))).unwrap(),
            r#"{"runId":"r1","name":"wf.lobster","door":"cli","status":"ok","startedAt":"2026-12-02T06:00:00.000Z","endedAt":null,"durationMs":null,"gate":"0a1b2c3d","events":4,"head":"ab"}"#
        );
    }
}
