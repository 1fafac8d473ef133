//! The typed records against records older code wrote
//! (`runtime/tests/fixtures/run-records/`, see its README).

use super::*;
use crate::value::to_js_json_pretty;
use serde_json::json;

/// The records of `sub` (`files`, `pg`, `runlog`, ...).
fn fixtures(sub: &str) -> Vec<(String, String)> {
    crate::state::fixtures::json_fixtures(&format!("run-records/{sub}"), 2)
}

/// Parse `text` as the record its fixture name says, and write it back as
/// the store writes a value.
fn round_trip(name: &str, text: &str) -> (Value, String) {
    let value: Value = serde_json::from_str(text).unwrap();
    let again = if name.starts_with("pending-") {
        PendingEntry::from_value(value.clone()).unwrap().to_value()
    } else if name == "heartbeat" {
        serde_json::from_value::<NodeBeat>(value.clone())
            .unwrap()
            .to_value()
    } else {
        let rec = RunRecord::from_value(value.clone()).unwrap();
        assert!(rec.extra.is_empty(), "{name}: today's fields are all known");
        rec.to_value()
    };
    assert_eq!(again, value, "{name}");
    (again, to_js_json_pretty(&value))
}

#[test]
fn every_stored_record_of_older_code_reads_and_writes_back_byte_for_byte() {
    for sub in ["files", "pg"] {
        for (name, text) in fixtures(sub) {
            let (again, _) = round_trip(&name, &text);
            // The stores write a value pretty-printed, with a newline
            // (psql printed the PostgreSQL rows without their last one).
            assert_eq!(
                to_js_json_pretty(&again).trim_end(),
                text.trim_end(),
                "{sub}/{name}: written back differently"
            );
        }
    }
}

#[test]
fn every_run_log_line_of_older_code_reads_and_writes_back_byte_for_byte() {
    for (name, text) in fixtures("runlog") {
        let rec = RunRecord::from_value(serde_json::from_str(&text).unwrap()).unwrap();
        assert_eq!(
            serde_json::to_string(&rec).unwrap(),
            text.trim_end(),
            "{name}"
        );
    }
}

#[test]
fn statuses_and_shapes_are_the_ones_older_code_wrote() {
    let read = |sub: &str, name: &str| {
        let (_, text) = fixtures(sub).into_iter().find(|(n, _)| n == name).unwrap();
        RunRecord::from_value(serde_json::from_str(&text).unwrap()).unwrap()
    };
    for (name, status) in [
        ("running", RunStatus::Running),
        ("ok", RunStatus::Ok),
        ("failed", RunStatus::Failed),
        ("needs_approval", RunStatus::NeedsApproval),
        ("needs_input", RunStatus::NeedsInput),
        ("cancelled", RunStatus::Cancelled),
        ("interrupted", RunStatus::Interrupted),
    ] {
        for sub in ["files", "pg"] {
            assert_eq!(read(sub, name).status, status, "{sub}/{name}");
        }
    }
    let queued = read("pg", "queued");
    assert_eq!((queued.queued, queued.node), (Some(true), None));
    let resuming = read("pg", "resuming");
    let gate = resuming.gate.as_deref().expect("a resume keeps its gate");
    assert_eq!(gate.status, RunStatus::NeedsApproval);
    assert!(gate.gate_token().is_some() && resuming.decided_by.is_some());
    let interrupted = read("files", "interrupted-resume");
    assert!(interrupted.gate.is_some() && interrupted.reason.is_some());
}

#[test]
fn a_paused_record_lists_the_entry_older_code_listed() {
    for sub in ["files", "pg"] {
        for (record, entry) in [
            ("needs_approval", "pending-approval"),
            ("needs_input", "pending-input"),
        ] {
            let all = fixtures(sub);
            let text = |n: &str| &all.iter().find(|(name, _)| name == n).unwrap().1;
            let rec = RunRecord::from_value(serde_json::from_str(text(record)).unwrap()).unwrap();
            let want: Value = serde_json::from_str(text(entry)).unwrap();
            assert_eq!(
                rec.pending_entry().unwrap().to_value(),
                want,
                "{sub}/{record}"
            );
            assert_eq!(rec.approval_id().is_some(), record == "needs_approval");
        }
    }
    let ok = RunRecord::new("x", RunStatus::Ok);
    assert!(ok.pending_entry().is_none());
}

#[test]
fn what_a_newer_node_wrote_survives_a_read_modify_write_here() {
    let (_, text) = fixtures("pg")
        .into_iter()
        .find(|(n, _)| n == "resuming")
        .unwrap();
    let mut newer: Value = serde_json::from_str(&text).unwrap();
    newer["status"] = json!("paused_elsewhere");
    newer["lease"] = json!({"holder": "c-node", "until": "2027-01-01T00:00:00Z"});
    newer["gate"]["claim"] = json!({"by": "c-node", "n": 3});
    let mut rec = RunRecord::from_value(newer.clone()).unwrap();
    assert_eq!(rec.status, RunStatus::Other("paused_elsewhere".into()));
    assert_eq!(rec.extra["lease"]["holder"], "c-node");
    // This node marks it interrupted, as `current_record` does.
    rec.status = RunStatus::Interrupted;
    rec.updated_at = Some("2026-12-02T01:00:00.000Z".into());
    rec.reason = Some("stopped".into());
    let written = rec.to_value();
    let mut want = newer;
    want["status"] = json!("interrupted");
    want["updatedAt"] = json!("2026-12-02T01:00:00.000Z");
    want["reason"] = json!("stopped");
    assert_eq!(written, want);
    // Unknown fields go after the known ones, in the order they came.
    let keys: Vec<&String> = written.as_object().unwrap().keys().collect();
    assert_eq!(keys.last().unwrap().as_str(), "lease");
    // An unknown status is written back as it was.
    let other = RunRecord::from_value(json!({"runId": "r", "status": "held"})).unwrap();
    assert_eq!(other.to_value(), json!({"runId": "r", "status": "held"}));
}

#[test]
fn a_record_that_is_not_one_says_which_run_it_is() {
    let err = RunRecord::from_value(json!({"runId": "abc", "status": 3}))
        .unwrap_err()
        .to_string();
    assert!(err.contains("run record abc cannot be read"), "{err}");
    assert!(RunRecord::from_value(json!({"status": "ok"})).is_err());
}

/// The gate a paused record asks about reads typed from what older code
/// stored; a record at no approval gate asks nothing.
#[test]
fn a_stored_approval_gate_reads_typed() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/run-records/files/needs_approval.json"
    ))
    .unwrap();
    let rec = RunRecord::from_value(serde_json::from_str(&text).unwrap()).unwrap();
    let asked = rec.asked_approval();
    assert_eq!(asked.prompt, "Send both?");
    assert_eq!(asked.items, [json!(1), json!(2)]);
    assert_eq!(asked.approval_id.as_deref(), Some("9c643d01"));
    assert_eq!(asked.approval_id.as_deref(), rec.approval_id());
    assert_eq!(asked.resume_token.as_deref(), rec.gate_token());
    assert!(asked.capabilities.is_empty() && asked.preview.is_none());
    let ok = RunRecord::new("r", RunStatus::Ok);
    assert_eq!(ok.asked_approval(), AskedApproval::default());
}

/// How a settled record ended, in the words the approval page shows.
#[test]
fn a_settled_record_says_how_it_ended() {
    let outcome = |name: &str| {
        let text = std::fs::read_to_string(format!(
            "{}/tests/fixtures/run-records/files/{name}.json",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        RunRecord::from_value(serde_json::from_str(&text).unwrap())
            .unwrap()
            .outcome()
    };
    assert_eq!(outcome("ok").as_deref(), Some("ok"));
    assert_eq!(outcome("cancelled").as_deref(), Some("cancelled"));
    assert_eq!(outcome("needs_approval").as_deref(), Some("needs_approval"));
    assert_eq!(
        outcome("failed").as_deref(),
        Some("failed: exec failed (3): sleep 1; exit 3")
    );
    assert_eq!(outcome("running"), None);
}
