//! A journal with every event kind, written through the store, then
//! tampered with in every way `verify` must catch.

use super::verify::{verify_text, Checkpoint, CheckpointLine};
use super::*;
use crate::state::StateStore;
use serde_json::json;
use serde_json::Value;

fn started(run: &str) -> RunStarted {
    RunStarted {
        run_id: run.to_string(),
        at: now_rfc3339(),
        door: "cli".into(),
        tenant: "default".into(),
        trust: "trusted".into(),
        policy_digest: digest(b"policy"),
        request: RequestRecord::new(
            "pipeline",
            None,
            "exec --json 'echo [1]' | approve",
            json!({"a": 1}),
        ),
        grants: GrantsRecord {
            env: vec!["HOME".into()],
            clock_ms: Some(1),
            seed: Some(7),
            ..GrantsRecord::default()
        },
        components: vec![ComponentRecord {
            name: "triage".into(),
            digest: digest(b"wasm"),
        }],
        env_names: vec!["PATH".into()],
        cwd: "/tmp".into(),
        digests: DigestRule::V2,
    }
}

/// Every kind of event, in a plausible order; returns the store's text.
fn full_journal(store: &StateStore, run: &str) -> String {
    let j = Journal::start(store, started(run)).unwrap();
    j.append(Event::Step(Step {
        id: "0".into(),
        step_kind: "host".into(),
        name: "exec".into(),
        wall_ms: 2,
        exit_code: Some(0),
        output: Some("[1]".into()),
        input_digest: Some(digest(b"")),
        output_digest: Some(digest(b"[1]")),
        replayable: true,
        ok: true,
        ..Step::default()
    }))
    .unwrap();
    j.append(Event::CallIntent(CallIntent {
        target: "tool".into(),
        name: "search".into(),
        request_digest: digest(b"req"),
    }))
    .unwrap();
    j.append(Event::CallAnswer(CallAnswer {
        request_digest: digest(b"req"),
        answer: json!({"ok": true, "items": [1.5, "é"]}),
        replayed: false,
    }))
    .unwrap();
    j.append(Event::GateOpened(GateOpened {
        gate: "approval".into(),
        step: "1".into(),
        prompt: "Send?".into(),
        preview_digest: digest(b"[1]"),
        plan_digest: digest(b"plan"),
        approval_id: Some("abcd1234".into()),
    }))
    .unwrap();
    j.end("needs_approval", None).unwrap();
    let head = j.head().unwrap();
    drop(j);
    let j = Journal::resume(
        store,
        &head,
        RunResumed {
            at: now_rfc3339(),
            door: "cli".into(),
            gate: "1".into(),
        },
    )
    .unwrap();
    j.append(Event::Decision(Decision {
        decision: "approve".into(),
        approver: Some("alice".into()),
        decided_by: Some("approver alice".into()),
        door: "serve".into(),
        response_digest: None,
    }))
    .unwrap();
    j.append(Event::Error(ErrorEvent {
        step: "2".into(),
        message: "boom".into(),
    }))
    .unwrap();
    j.end("error", Some(digest(b"[]"))).unwrap();
    store.journal_text(run).unwrap().unwrap()
}

fn lines(text: &str) -> Vec<String> {
    text.lines().map(str::to_string).collect()
}

fn join(lines: &[String]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

#[test]
fn every_event_kind_is_recorded_and_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let store = StateStore::new(dir.path());
    let text = full_journal(&store, "run-a");
    let kinds: Vec<String> = lines(&text)
        .iter()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["event"]["kind"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    for kind in [
        "run_started",
        "step",
        "call_intent",
        "call_answer",
        "gate_opened",
        "run_ended",
        "run_resumed",
        "decision",
        "error",
    ] {
        assert!(
            kinds.iter().any(|k| k == kind),
            "{kind} missing from {kinds:?}"
        );
    }
    // Every line parses back into a typed event.
    for l in lines(&text) {
        let v: Value = serde_json::from_str(&l).unwrap();
        serde_json::from_value::<Event>(v["event"].clone()).unwrap();
    }
    let v = verify_text(&text, Some("run-a"));
    assert_eq!(v.problem, None);
    assert_eq!(v.events, kinds.len() as u64);
    assert_eq!(v.ended.as_deref(), Some("error"));
    let s = store.journal_summary("run-a").unwrap().unwrap();
    assert_eq!(
        (s.status.as_str(), s.events, s.head.as_str()),
        ("error", v.events, v.head.as_str())
    );
    // Environment values are never recorded, only names.
    assert!(!text.contains(&std::env::var("PATH").unwrap_or_else(|_| "/usr/bin".into())));
}

fn problem(text: &str, run: &str) -> (Option<u64>, String) {
    let p = verify_text(text, Some(run))
        .problem
        .expect("tampering detected");
    (p.seq, p.message)
}

#[test]
fn tampering_is_detected_and_the_event_named() {
    let dir = tempfile::tempdir().unwrap();
    let store = StateStore::new(dir.path());
    let text = full_journal(&store, "run-a");
    let orig = lines(&text);

    // Edit: the recorded answer changed.
    let mut edited = orig.clone();
    // (The answer is recorded as its JSON text, so its quotes are escaped.)
    edited[3] = edited[3].replace("\\\"ok\\\":true", "\\\"ok\\\":false");
    assert_ne!(edited[3], orig[3]);
    let (seq, msg) = problem(&join(&edited), "run-a");
    assert_eq!(seq, Some(3), "{msg}");
    assert!(
        msg.contains("call_answer") && msg.contains("changed"),
        "{msg}"
    );

    // Delete an event.
    let mut deleted = orig.clone();
    deleted.remove(2);
    let (seq, msg) = problem(&join(&deleted), "run-a");
    assert_eq!(seq, Some(2), "{msg}");
    assert!(msg.contains("missing"), "{msg}");

    // Reorder two events.
    let mut reordered = orig.clone();
    reordered.swap(1, 2);
    let (seq, msg) = problem(&join(&reordered), "run-a");
    assert_eq!(seq, Some(1), "{msg}");

    // Truncate: the last event cut mid-line.
    let mut cut = join(&orig);
    cut.truncate(cut.len() - 20);
    let v = verify_text(&cut, Some("run-a"));
    let p = v.problem.unwrap();
    assert!(v.torn_tail);
    assert_eq!(p.seq, Some(orig.len() as u64 - 1));
    assert!(p.message.contains("cut short"), "{}", p.message);

    // Another run's journal under this run's name.
    let other = full_journal(&store, "run-b");
    let (seq, msg) = problem(&other, "run-a");
    assert_eq!(seq, Some(0));
    assert!(msg.contains("run-b"), "{msg}");

    // Re-hashing an edited event does not help: the next one breaks.
    let mut rehashed = orig.clone();
    let mut rec: Value = serde_json::from_str(&rehashed[1]).unwrap();
    rec["event"]["exit_code"] = json!(1);
    let canon = canon::to_canonical(&rec["event"]);
    let h = chain::record_hash(rec["prev"].as_str().unwrap(), "run-a", 1, &canon);
    rec["hash"] = json!(h);
    rehashed[1] = rec.to_string();
    let (seq, msg) = problem(&join(&rehashed), "run-a");
    assert_eq!(seq, Some(2), "{msg}");
}

#[test]
fn a_checkpoint_catches_a_dropped_tail() {
    let dir = tempfile::tempdir().unwrap();
    let store = StateStore::new(dir.path());
    let text = full_journal(&store, "run-a");
    let v = verify_text(&text, Some("run-a"));
    let cp = CheckpointLine {
        checkpoint: Checkpoint {
            run: "run-a".into(),
            events: v.events,
            head: v.head.clone(),
            at: now_rfc3339(),
        },
        signature: None,
    };
    let cp_line = serde_json::to_string(&cp).unwrap();
    let whole = format!("{text}{cp_line}\n");
    assert_eq!(verify_text(&whole, None).problem, None);
    // Drop the last whole event: the chain alone is still fine, the
    // checkpoint is not.
    let mut l = lines(&text);
    l.pop();
    assert_eq!(verify_text(&join(&l), None).problem, None);
    let (seq, msg) = problem(&format!("{}{cp_line}\n", join(&l)), "run-a");
    assert_eq!(seq, Some(v.events - 1));
    assert!(msg.contains("missing"), "{msg}");
}

#[test]
fn a_journal_past_its_cap_keeps_one_marker_and_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let store = StateStore::new(dir.path());
    let j = Journal::start_capped(&store, started("run-c"), 4096).unwrap();
    for i in 0..100 {
        j.append(Event::Error(ErrorEvent {
            step: i.to_string(),
            message: "x".repeat(100),
        }))
        .unwrap();
    }
    j.end("ok", None).unwrap();
    let text = store.journal_text("run-c").unwrap().unwrap();
    assert!(text.len() < 6000, "{}", text.len());
    assert_eq!(text.matches("\"kind\":\"capped\"").count(), 1);
    let v = verify_text(&text, Some("run-c"));
    assert_eq!(v.problem, None);
    assert!(v.capped);
    assert_eq!(v.ended.as_deref(), Some("ok"));
    // An event smuggled in after the marker is refused.
    let mut l = lines(&text);
    let end = l.pop().unwrap();
    l.push(end.clone());
    l.push(end);
    assert!(verify_text(&join(&l), Some("run-c")).problem.is_some());
}

#[test]
fn a_resume_from_a_head_the_journal_does_not_pass_through_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = StateStore::new(dir.path());
    let j = Journal::start(&store, started("run-d")).unwrap();
    let mut head = j.head().unwrap();
    drop(j);
    head.hash = chain::GENESIS.to_string();
    let resumed = RunResumed::default();
    let err = Journal::resume(&store, &head, resumed).unwrap_err();
    assert!(err.to_string().contains("does not continue"), "{err}");
}

#[test]
fn verifying_ten_thousand_events_is_quick_enough_to_measure() {
    // Not a timing assertion (see the benchmarks): this keeps a 10,000-event
    // journal verifying, which the bench times.
    let dir = tempfile::tempdir().unwrap();
    let store = StateStore::new(dir.path());
    let j = Journal::start(&store, started("run-e")).unwrap();
    for i in 0..9_999 {
        j.append(Event::Step(Step {
            id: i.to_string(),
            step_kind: "builtin".into(),
            name: "map".into(),
            wall_ms: 0,
            ok: true,
            replayable: true,
            ..Step::default()
        }))
        .unwrap();
    }
    let text = store.journal_text("run-e").unwrap().unwrap();
    let v = verify_text(&text, None);
    assert_eq!((v.events, v.problem), (10_000, None));
}

/// A run keeps the digest rule it started with: the head its pause hands
/// the resume state carries it, and the resumed leg follows it; a head
/// written before there were rules resumes under rule 1. A journal planned
/// now follows the current rule.
#[test]
fn a_resumed_run_keeps_the_digest_rule_it_started_with() {
    let dir = tempfile::tempdir().unwrap();
    let store = StateStore::new(dir.path());
    for rule in [DigestRule::V1, DigestRule::V2] {
        let run = new_run_id();
        let mut s = started(&run);
        s.digests = rule;
        let j = Journal::start(&store, s).unwrap();
        assert_eq!(j.digest_rule(), Some(rule));
        j.end("needs_approval", None).unwrap();
        let head = j.head().unwrap();
        assert_eq!(head.digests, rule);
        // Through the resume state's JSON and back.
        let head: Head = serde_json::from_str(&serde_json::to_string(&head).unwrap()).unwrap();
        drop(j);
        let j = Journal::resume(&store, &head, RunResumed::default()).unwrap();
        assert_eq!(j.digest_rule(), Some(rule));
        assert_eq!(j.head().unwrap().digests, rule);
        let planned = Journal::planned("cli", None);
        planned
            .continue_at(&store, &j.head().unwrap(), RunResumed::default())
            .unwrap();
        assert_eq!(planned.digest_rule(), Some(rule));
    }
    let run = new_run_id();
    let j = Journal::start(&store, started(&run)).unwrap();
    j.end("needs_approval", None).unwrap();
    let h = j.head().unwrap();
    let old: Head =
        serde_json::from_value(json!({"run": h.run, "events": h.events, "hash": h.hash})).unwrap();
    let j = Journal::resume(&store, &old, RunResumed::default()).unwrap();
    assert_eq!(j.digest_rule(), Some(DigestRule::V1));

    let planned = Journal::planned("cli", None);
    assert_eq!(planned.digest_rule(), None, "not begun: nothing recorded");
    planned.begin(&store, RunStarted::default()).unwrap();
    assert_eq!(planned.digest_rule(), Some(DigestRule::CURRENT));
    let text = store
        .journal_text(planned.run_id().unwrap())
        .unwrap()
        .unwrap();
    assert!(text.contains(r#""digests":2"#), "{text}");
    assert_eq!(Journal::off().digest_rule(), None);
}
