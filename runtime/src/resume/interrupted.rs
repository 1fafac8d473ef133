//! The record a resume leaves while it runs, so that a resume killed after
//! it claimed the state is not lost silently.
//!
//! A claim (see [`super::claim`]) spends the token at once: at most once,
//! whatever happens next. While the claimed run goes on, the state store
//! holds `interrupted_<state key>.json` — where the run was paused, what it
//! had done, who claimed it and when. A resume that finishes (with a result,
//! an error or a new pause) removes it; one that was killed (SIGKILL, power
//! loss, the watchdog's exit after a signal) leaves it, and `lobster resume`
//! of the same token then answers "interrupted after approval at step N"
//! instead of "not found". The record is data about the run and a way to run
//! it again only when every step after its gate is pure
//! ([`crate::policy::recovery`]): then it carries the state, and a resume
//! that finds its claimer dead claims the record instead
//! ([`super::claim`]).
//!
//! The files store keeps the record as a key of its own. The PostgreSQL
//! store needs none: the claimed row itself (status `resuming`, who claimed
//! it, when, and the resume state) is the record, and a row whose lease
//! expired reads as — and is marked — `interrupted`.

use crate::error::Error;
use crate::state::StateStore;
use serde_json::{json, Value};

/// The store key of the record for `state_key`.
pub fn record_key(state_key: &str) -> String {
    format!("interrupted_{state_key}")
}

/// What to record for the claimed `state` (a pipeline or workflow resume
/// state as stored).
pub fn record_for(state_key: &str, state: &Value) -> Value {
    let index = state.get("resumeAtIndex").and_then(Value::as_u64);
    let halt = match state.get("haltType").and_then(Value::as_str) {
        Some("input") => "input",
        _ => "approval",
    };
    let (at, done) = match state.get("stepId").and_then(Value::as_str) {
        // Workflows: `resumeAtIndex` is the 1-based position of the gated step.
        Some(step) => (
            format!(
                "step {} ({step})",
                index.map_or("?".to_string(), |i| i.to_string())
            ),
            state
                .get("steps")
                .and_then(Value::as_object)
                .map(|m| m.keys().cloned().map(Value::String).collect())
                .unwrap_or_default(),
        ),
        // Pipelines: `resumeAtIndex` is the 0-based next stage, so the gate
        // is stage `resumeAtIndex` counted from 1.
        None => (
            format!("stage {}", index.map_or("?".to_string(), |i| i.to_string())),
            Vec::new(),
        ),
    };
    let mut record = json!({
        "stateKey": state_key,
        "status": "interrupted",
        "halt": halt,
        "at": at,
        "done": done,
        "claimedAt": super::approval_id::now_iso(),
        "pid": std::process::id(),
    });
    if crate::state::is_rerun_safe(state) {
        record["state"] = state.clone();
    }
    record
}

/// The state a record carries when its run may run again (see
/// [`record_for`]).
pub fn rerun_state(record: &Value) -> Option<&Value> {
    record
        .get("state")
        .filter(|s| crate::state::is_rerun_safe(s))
}

/// The error `lobster resume` gives for a token whose state is gone, when a
/// record says why; `None` when there is no record.
pub fn error_for(store: &StateStore, state_key: &str) -> Option<Error> {
    if let Some(pg) = store.pg().ok()? {
        let key = crate::state::key_to_file_name(state_key).ok()?;
        let row = pg.run_status(&key).ok()??;
        let state: Value = serde_json::from_str(&row.body).unwrap_or(Value::Null);
        let record = record_for(state_key, &state);
        let (halt, at) = (
            record["halt"].as_str().unwrap_or("?").to_string(),
            record["at"].as_str().unwrap_or("?").to_string(),
        );
        let when = row.claimed_at.unwrap_or_else(|| "?".into());
        let by = row.claimed_by.unwrap_or_else(|| "?".into());
        return match row.status.as_str() {
            "resuming" => Some(
                Error::runtime(format!(
                    "this run is being resumed right now (after {halt} at {at}, by {by} since {when})"
                ))
                .with_hint(if row.rerun {
                    format!(
                        "wait for that resume to finish; every step after the gate is pure, so if that resume died the run can be resumed again once its lease ends ({})",
                        row.lease_until.unwrap_or_else(|| "?".into())
                    )
                } else {
                    "wait for that resume to finish; a token runs at most once".to_string()
                }),
            ),
            "interrupted" => Some(
                Error::runtime(format!(
                    "this run was interrupted after {halt} at {at}: the resume that claimed it at {when} ({by}) did not finish and its lease expired"
                ))
                .with_hint(format!(
                    "a token runs at most once, so it will not run again; check what the run did, then start it anew (row {key} of lobster_runs, tenant {})",
                    pg.tenant
                )),
            ),
            _ => None,
        };
    }
    let record = store.get(&record_key(state_key)).ok().flatten()?;
    let text = |k: &str| {
        record
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string()
    };
    let pid = record.get("pid").and_then(Value::as_u64).unwrap_or(0);
    let (halt, at, when) = (text("halt"), text("at"), text("claimedAt"));
    let rerun = rerun_state(&record).is_some();
    // A rerun record of this very process is a resume still going on here
    // (a claim is never taken over from its own process).
    let own = pid == u64::from(std::process::id());
    if (!own && pid_alive(pid)) || (own && rerun) {
        let hint = if rerun {
            "wait for that resume to finish; every step after the gate is pure, so if that process dies the run can be resumed again"
        } else {
            "wait for that resume to finish; a token runs at most once"
        };
        return Some(
            Error::runtime(format!(
                "this run is being resumed right now (after {halt} at {at}, by process {pid} since {when})"
            ))
            .with_hint(hint),
        );
    }
    Some(
        Error::runtime(format!(
            "this run was interrupted after {halt} at {at}: the resume that claimed it at {when} (process {pid}) did not finish"
        ))
        .with_hint(format!(
            "a token runs at most once, so it will not run again; check what the run did, then start it anew (record: {})",
            store
                .path_for(&record_key(state_key))
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        )),
    )
}

/// Whether process `pid` exists (signal 0).
pub(crate) fn pid_alive(pid: u64) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    // SAFETY: kill with signal 0 only checks that the process exists.
    pid > 0 && unsafe { libc::kill(pid, 0) } == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_name_the_gate_and_what_was_done() {
        let wf = json!({"resumeAtIndex": 2, "stepId": "gate", "haltType": "approval",
            "steps": {"a": {"id": "a"}}});
        let r = record_for("workflow_resume_x", &wf);
        assert_eq!(r["at"], "step 2 (gate)");
        assert_eq!(r["done"], json!(["a"]));
        let p = json!({"resumeAtIndex": 1, "haltType": "input"});
        let r = record_for("pipeline_resume_x", &p);
        assert_eq!(r["at"], "stage 1");
        assert_eq!(r["halt"], "input");
    }

    #[test]
    fn a_dead_claimant_reads_as_interrupted() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::new(dir.path());
        assert!(error_for(&store, "pipeline_resume_x").is_none());
        let mut r = record_for("pipeline_resume_x", &json!({"resumeAtIndex": 2}));
        r["pid"] = json!(u32::MAX); // no such process
        store.set(&record_key("pipeline_resume_x"), &r).unwrap();
        let e = error_for(&store, "pipeline_resume_x").unwrap().to_string();
        assert!(e.contains("interrupted after approval at stage 2"), "{e}");
    }
}
