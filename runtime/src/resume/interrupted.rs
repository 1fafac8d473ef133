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
//! it again only when what runs after its gate may run again — pure steps,
//! or brokered calls the journal answers ([`crate::policy::recovery`]): then it carries the state, and a resume
//! that finds its claimer dead claims the record instead
//! ([`super::claim`]).
//!
//! The files store keeps the record as a key of its own. The PostgreSQL
//! store needs none: the claimed row itself (status `resuming`, who claimed
//! it, when, and the resume state) is the record, and a row whose lease
//! expired reads as — and is marked — `interrupted`.

//!
//! The record is typed ([`InterruptedRecord`]); its JSON is what every
//! version wrote — the same fields in the same order, fields this version
//! does not know kept and written back after them
//! (`runtime/tests/fixtures/interrupted/` holds records written by older
//! code; the tests read and write back every one byte for byte).

use crate::error::Error;
use crate::state::StateStore;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The store key of the record for `state_key`.
pub fn record_key(state_key: &str) -> String {
    format!("interrupted_{state_key}")
}

/// The record of a claimed run (see the module docs). Field order is the
/// order it has always been written in.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InterruptedRecord {
    /// The paused run's state key.
    pub state_key: String,
    /// Always `interrupted`: what the record says once its claimer is gone.
    pub status: String,
    /// The kind of gate it was paused at: `approval` or `input`.
    pub halt: String,
    /// Where: `step N (id)` of a workflow, `stage N` of a pipeline.
    pub at: String,
    /// The ids of the workflow steps done before the gate (none for a
    /// pipeline).
    #[serde(default)]
    pub done: Vec<String>,
    /// When the resume claimed it (ISO 8601).
    pub claimed_at: String,
    /// The claimer's process id.
    pub pid: u64,
    /// The claimed state, when the run may run again (see
    /// [`crate::policy::recovery`]: pure after its gate, or brokered calls
    /// the journal answers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<Value>,
    /// Fields this version does not know (a newer version wrote them):
    /// written back as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl InterruptedRecord {
    /// Read a record from its stored JSON; `None` for a value that is not
    /// one.
    pub fn from_value(value: Value) -> Option<InterruptedRecord> {
        serde_json::from_value(value).ok()
    }

    /// The record as stored JSON.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("an interrupted record is plain JSON")
    }

    /// The state it carries when its run may run again (see
    /// [`record_for`]).
    pub fn rerun_state(&self) -> Option<&Value> {
        self.state
            .as_ref()
            .filter(|s| crate::state::is_rerun_safe(s))
    }

    /// The stored record of `state_key`, if there is one this version can
    /// read.
    pub fn load(store: &StateStore, state_key: &str) -> Option<InterruptedRecord> {
        InterruptedRecord::from_value(store.get(&record_key(state_key)).ok()??)
    }
}

/// What to record for the claimed `state` (a pipeline or workflow resume
/// state as stored).
pub fn record_for(state_key: &str, state: &Value) -> InterruptedRecord {
    let index = state.get("resumeAtIndex").and_then(Value::as_u64);
    let halt = match state.get("haltType").and_then(Value::as_str) {
        // States write `input_request`; `input` is accepted as well.
        Some("input_request" | "input") => "input",
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
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default(),
        ),
        // Pipelines: `resumeAtIndex` is the 0-based next stage, so the gate
        // is stage `resumeAtIndex` counted from 1.
        None => (
            format!("stage {}", index.map_or("?".to_string(), |i| i.to_string())),
            Vec::new(),
        ),
    };
    InterruptedRecord {
        state_key: state_key.to_string(),
        status: "interrupted".to_string(),
        halt: halt.to_string(),
        at,
        done,
        claimed_at: super::approval_id::now_iso(),
        pid: u64::from(std::process::id()),
        state: crate::state::is_rerun_safe(state).then(|| state.clone()),
        extra: Map::new(),
    }
}

/// The error `lobster resume` gives for a token whose state is gone, when a
/// record says why; `None` when there is no record.
pub fn error_for(store: &StateStore, state_key: &str) -> Option<Error> {
    if let Some(pg) = store.pg().ok()? {
        let key = crate::state::key_to_file_name(state_key).ok()?;
        let row = pg.run_status(&key).ok()??;
        let state: Value = serde_json::from_str(&row.body).unwrap_or(Value::Null);
        let InterruptedRecord { halt, at, .. } = record_for(state_key, &state);
        let when = row.claimed_at.unwrap_or_else(|| "?".into());
        let by = row.claimed_by.unwrap_or_else(|| "?".into());
        return match row.status.as_str() {
            "resuming" => Some(
                Error::runtime(format!(
                    "this run is being resumed right now (after {halt} at {at}, by {by} since {when})"
                ))
                .with_hint(if row.rerun {
                    format!(
                        "wait for that resume to finish; what runs after the gate may run again, so if that resume died the run can be resumed once its lease ends ({})",
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
    let record = InterruptedRecord::load(store, state_key)?;
    let rerun = record.rerun_state().is_some();
    let InterruptedRecord {
        pid,
        halt,
        at,
        claimed_at: when,
        ..
    } = record;
    // A rerun record of this very process is a resume still going on here
    // (a claim is never taken over from its own process).
    let own = pid == u64::from(std::process::id());
    if (!own && pid_alive(pid)) || (own && rerun) {
        let hint = if rerun {
            "wait for that resume to finish; what runs after the gate may run again, so if that process dies the run can be resumed"
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
    use serde_json::json;

    #[test]
    fn records_name_the_gate_and_what_was_done() {
        let wf = json!({"resumeAtIndex": 2, "stepId": "gate", "haltType": "approval",
            "steps": {"a": {"id": "a"}}});
        let r = record_for("workflow_resume_x", &wf);
        assert_eq!(r.at, "step 2 (gate)");
        assert_eq!(r.done, ["a"]);
        assert_eq!(r.state, None);
        let p = json!({"resumeAtIndex": 1, "haltType": "input", "rerunSafe": true});
        let r = record_for("pipeline_resume_x", &p);
        assert_eq!(r.at, "stage 1");
        assert_eq!(r.halt, "input");
        assert_eq!(r.rerun_state(), Some(&p));
    }

    /// The records older code wrote (`runtime/tests/fixtures/interrupted/`,
    /// by its `capture.sh`).
    fn fixtures() -> Vec<(String, String)> {
        crate::state::fixtures::json_fixtures("interrupted", 4)
    }

    #[test]
    fn every_record_older_code_wrote_reads_and_writes_back_byte_for_byte() {
        for (name, text) in fixtures() {
            let value: Value = serde_json::from_str(&text).unwrap();
            let rec = InterruptedRecord::from_value(value.clone())
                .unwrap_or_else(|| panic!("{name} cannot be read"));
            assert!(rec.extra.is_empty(), "{name}: today's fields are all known");
            assert_eq!(rec.status, "interrupted", "{name}");
            // The store writes a value pretty-printed, with a newline.
            assert_eq!(
                crate::value::to_js_json_pretty(&rec.to_value()) + "\n",
                text,
                "{name}: written back differently"
            );
            // What this version writes for the same state has the same shape.
            let state = rec.state.clone().unwrap_or(json!({}));
            let again = record_for(&rec.state_key, &state).to_value();
            let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
            assert_eq!(keys(&again), keys(&value), "{name}");
        }
        let read = |name: &str| {
            let (_, text) = fixtures().into_iter().find(|(n, _)| n == name).unwrap();
            InterruptedRecord::from_value(serde_json::from_str(&text).unwrap()).unwrap()
        };
        let w = read("workflow-approval");
        assert_eq!(
            (w.halt.as_str(), w.at.as_str()),
            ("approval", "step 2 (gate)")
        );
        assert_eq!(w.done, ["plan", "gate"]);
        // Older code wrote `approval` for an input gate too (it looked for a
        // `haltType` of `input`, but states write `input_request`): the
        // stored record is read as written; new records say `input`.
        let old_input = read("pipeline-input");
        assert_eq!(old_input.halt, "approval");
        let state = json!({"resumeAtIndex": 1, "haltType": "input_request"});
        assert_eq!(record_for("pipeline_resume_x", &state).halt, "input");
        assert!(read("pipeline-approval").rerun_state().is_none());
        assert!(read("pipeline-rerun").rerun_state().is_some());
    }

    #[test]
    fn a_newer_version_s_fields_are_kept_after_the_known_ones() {
        let (_, text) = fixtures().remove(0);
        let mut value: Value = serde_json::from_str(&text).unwrap();
        value["fromANewerNode"] = json!({"x": 1});
        let rec = InterruptedRecord::from_value(value.clone()).unwrap();
        assert_eq!(rec.extra.len(), 1);
        assert_eq!(
            crate::value::to_js_json(&rec.to_value()),
            crate::value::to_js_json(&value)
        );
    }

    #[test]
    fn a_dead_claimant_reads_as_interrupted() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::new(dir.path());
        assert!(error_for(&store, "pipeline_resume_x").is_none());
        let mut r = record_for("pipeline_resume_x", &json!({"resumeAtIndex": 2}));
        r.pid = u64::from(u32::MAX); // no such process
        store
            .set(&record_key("pipeline_resume_x"), &r.to_value())
            .unwrap();
        let e = error_for(&store, "pipeline_resume_x").unwrap().to_string();
        assert!(e.contains("interrupted after approval at stage 2"), "{e}");
    }
}
