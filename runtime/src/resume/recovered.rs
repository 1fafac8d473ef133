//! A paused run claimed again after its resumer died: the brokered calls
//! that resumer made are in the run's journal (the intent before the
//! request left, the answer as it arrived). Read before the new resume
//! records anything ([`dead_resumes`]: any whole event after the pause is
//! a dead resume's), they are handed to the new resume's broker
//! ([`take_over`]), which matches its calls against them by position and
//! request digest (`crate::kernel::recorded`): answered ones are replayed,
//! not sent again. An intent without an answer means nobody knows whether
//! the call acted, so the run stops for a human (`interrupted`, naming the
//! call) before anything runs. A journal that cannot say what the dead
//! resume sent (capped: its calls were not recorded; or not verifying
//! before its torn tail) stops the run at its first call, so a run pure
//! after its gate still goes on.

use crate::error::Result;
use crate::journal::replay::events_of;
use crate::journal::verify::verify_text;
use crate::journal::{Event, Head};
use crate::kernel::recorded::{RecordedCall, Recovered};
use crate::kernel::Context;

/// What the resumes that claimed this run before and died recorded after
/// `head` (the pause); `None` when there were none (a first resume) or the
/// run kept no journal. Call it before this resume records its decision.
/// `at` names the gate, for the errors (`approval at stage 2`).
pub fn dead_resumes(ctx: &Context, head: Option<&Head>, at: &str) -> Result<Option<Recovered>> {
    let Some(head) = head else {
        return Ok(None);
    };
    recorded_calls(ctx, head, at)
}

/// Hand `dead`'s calls to `ctx`'s broker; refuse when one was asked and
/// not answered.
pub fn take_over(ctx: &Context, dead: Option<Recovered>) -> Result<()> {
    let Some(record) = dead else {
        return Ok(());
    };
    if let Some(lost) = record.unanswered() {
        return Err(record.in_flight(lost));
    }
    ctx.broker.recover(record);
    Ok(())
}

/// The calls the dead resumes of the run recorded after `head`: of each
/// resume (each `run_resumed` after the head starts one), the calls in the
/// order it made them; the record is the resume that got furthest (each
/// one replays the ones before it), and a call any of them asked without
/// an answer is kept unanswered.
fn recorded_calls(ctx: &Context, head: &Head, at: &str) -> Result<Option<Recovered>> {
    let Some(text) = ctx.state.journal_text(&head.run)? else {
        return Ok(None);
    };
    let verdict = verify_text(&text, Some(&head.run));
    // Only whole events whose chain verifies count as recorded.
    let after: Vec<Event> = events_of(&text)
        .into_iter()
        .take(verdict.events as usize)
        .skip(head.events as usize)
        .collect();
    // Each resume begins with `run_resumed` — or, past the journal's cap,
    // with the `capped` marker that stands for everything it did.
    let capped = after.iter().any(|e| matches!(e, Event::Capped(_)));
    let resumed = capped || after.iter().any(|e| matches!(e, Event::RunResumed(_)));
    let broken = verdict.problem.as_ref().filter(|_| !verdict.torn_tail);
    if !resumed && broken.is_none() {
        return Ok(None);
    }
    // A journal that cannot say what the resume sent refuses every call
    // (a run pure after its gate makes none, and goes on).
    let unknown = match broken {
        Some(p) => Some(format!(
            "its journal does not verify (line {}: {})",
            p.line, p.message
        )),
        None if capped => {
            Some("its journal reached its size cap (its calls were not recorded)".to_string())
        }
        None => None,
    };
    if unknown.is_some() {
        return Ok(Some(Recovered {
            run: head.run.clone(),
            at: at.to_string(),
            calls: Vec::new(),
            unknown,
        }));
    }
    let mut legs: Vec<Vec<RecordedCall>> = vec![Vec::new()];
    for event in after {
        match event {
            Event::RunResumed(_) => legs.push(Vec::new()),
            Event::CallIntent(i) => legs.last_mut().into_iter().for_each(|leg| {
                leg.push(RecordedCall {
                    target: i.target.clone(),
                    name: i.name.clone(),
                    request_digest: i.request_digest.clone(),
                    answer: None,
                    sent: true,
                })
            }),
            Event::CallAnswer(a) => {
                let Some(leg) = legs.last_mut() else { continue };
                match leg
                    .iter_mut()
                    .rev()
                    .find(|c| c.request_digest == a.request_digest && c.answer.is_none())
                    .filter(|_| !a.replayed)
                {
                    Some(asked) => asked.answer = Some(a.answer),
                    None => leg.push(RecordedCall {
                        target: String::new(),
                        name: String::new(),
                        request_digest: a.request_digest,
                        answer: Some(a.answer),
                        sent: false,
                    }),
                }
            }
            _ => {}
        }
    }
    // Every answer any resume recorded, the name of every request, and
    // which requests left.
    let mut answered = std::collections::BTreeMap::new();
    let mut names = std::collections::BTreeMap::new();
    let mut sent = std::collections::BTreeSet::new();
    for call in legs.iter().flatten() {
        if call.sent {
            sent.insert(call.request_digest.clone());
        }
        if let Some(a) = &call.answer {
            answered
                .entry(call.request_digest.clone())
                .or_insert_with(|| a.clone());
        }
        if !call.name.is_empty() {
            names
                .entry(call.request_digest.clone())
                .or_insert_with(|| (call.target.clone(), call.name.clone()));
        }
    }
    let lost = legs
        .iter()
        .flatten()
        .find(|c| c.answer.is_none() && !answered.contains_key(&c.request_digest))
        .cloned();
    // The resume that got furthest (the latest of equals).
    let mut calls = legs.into_iter().max_by_key(Vec::len).unwrap_or_default();
    for call in &mut calls {
        call.sent |= sent.contains(&call.request_digest);
        if call.answer.is_none() {
            call.answer = answered.get(&call.request_digest).cloned();
        }
        if call.name.is_empty() {
            if let Some((target, name)) = names.get(&call.request_digest) {
                (call.target, call.name) = (target.clone(), name.clone());
            }
        }
    }
    // A call an earlier resume asked and nobody answered stays unanswered
    // (at the end: nothing is sent past it).
    if let Some(lost) = lost.filter(|_| calls.iter().all(|c| c.answer.is_some())) {
        calls.push(lost);
    }
    Ok(Some(Recovered {
        run: head.run.clone(),
        at: at.to_string(),
        calls,
        unknown: None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::broker::{request_digest, BrokerCalls, Kind};
    use crate::journal::{CallAnswer, CallIntent, ErrorEvent, Journal, RunResumed, RunStarted};
    use crate::kernel::{Mode, Policy};
    use serde_json::{json, Value};

    fn replay_answered_calls(ctx: &Context, head: Option<&Head>, at: &str) -> Result<()> {
        take_over(ctx, dead_resumes(ctx, head, at)?)
    }

    fn intent(d: &str) -> Event {
        Event::CallIntent(CallIntent {
            target: "tool".into(),
            name: "message".into(),
            request_digest: d.into(),
        })
    }

    fn answer(d: &str, answer: Value, replayed: bool) -> Event {
        Event::CallAnswer(CallAnswer {
            request_digest: d.into(),
            answer,
            replayed,
        })
    }

    /// A run paused with a journal: the store and the head at the pause.
    fn paused(cap: Option<u64>) -> (tempfile::TempDir, crate::state::StateStore, Head) {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::state::StateStore::new(dir.path());
        let started = RunStarted {
            run_id: crate::journal::new_run_id(),
            ..RunStarted::default()
        };
        let j = match cap {
            Some(cap) => Journal::start_capped(&store, started, cap).unwrap(),
            None => Journal::start(&store, started).unwrap(),
        };
        if cap.is_some() {
            for i in 0..100 {
                j.append(Event::Error(ErrorEvent {
                    step: i.to_string(),
                    message: "x".repeat(100),
                }))
                .unwrap();
            }
        }
        let head = j.head().unwrap();
        // As a pausing run does: its end follows the head its state keeps.
        j.end("paused", None).unwrap();
        (dir, store, head)
    }

    #[test]
    fn the_resume_that_got_furthest_is_the_record_and_calls_match_it_in_order() {
        let (_dir, store, head) = paused(None);
        let (a, b) = (
            json!({"tool": "message", "args": {"n": 1}}),
            json!({"tool": "message", "args": {"n": 2}}),
        );
        let (da, db) = (
            request_digest(Kind::Tool, &a),
            request_digest(Kind::Tool, &b),
        );
        // The first dead resume asked a and b; the second replayed a and died.
        let first = Journal::resume(&store, &head, RunResumed::default()).unwrap();
        for e in [
            intent(&da),
            answer(&da, json!("A"), false),
            intent(&db),
            answer(&db, json!("B"), false),
        ] {
            first.append(e).unwrap();
        }
        let tail = first.head().unwrap();
        let second = Journal::resume(&store, &tail, RunResumed::default()).unwrap();
        second.append(answer(&da, json!("A"), true)).unwrap();

        let policy = Policy::default();
        let sent = std::cell::Cell::new(0);
        let ask = || {
            sent.set(sent.get() + 1);
            Ok((json!("sent"), 0))
        };
        // In order: both replay, nothing is sent; a third call is sent.
        let ctx = crate::executor::process_context(Mode::Tool, store.clone()).build();
        replay_answered_calls(&ctx, Some(&head), "approval at step 2 (review)").unwrap();
        assert_eq!(
            ctx.broker.call(&policy, Kind::Tool, &a, ask).unwrap(),
            json!("A")
        );
        assert!(ctx.broker.replaying_record());
        assert_eq!(
            ctx.broker.call(&policy, Kind::Tool, &b, ask).unwrap(),
            json!("B")
        );
        assert!(!ctx.broker.replaying_record());
        let c = json!({"tool": "message", "args": {"n": 3}});
        assert_eq!(
            ctx.broker.call(&policy, Kind::Tool, &c, ask).unwrap(),
            json!("sent")
        );
        assert_eq!(sent.get(), 1);
        assert!(ctx.broker.recovery_refusal().is_none());

        // Out of order: b where a was asked stops the run, even though b's
        // answer is known, and every later call is refused.
        let ctx = crate::executor::process_context(Mode::Tool, store).build();
        replay_answered_calls(&ctx, Some(&head), "approval at step 2 (review)").unwrap();
        let e = ctx.broker.call(&policy, Kind::Tool, &b, ask).unwrap_err();
        assert!(
            e.to_string().contains(&format!(
                "call 1 after the gate is a tool call message (request {})",
                &db[..16]
            )) && e
                .to_string()
                .contains(&format!("asked tool call message (request {})", &da[..16])),
            "{e}"
        );
        assert!(ctx.broker.call(&policy, Kind::Tool, &a, ask).is_err());
        assert_eq!(sent.get(), 1, "nothing more was sent");
        assert_eq!(
            ctx.broker.recovery_refusal().map(|e| e.to_string()),
            Some(e.to_string())
        );
    }

    #[test]
    fn a_call_lost_by_an_earlier_resume_stays_lost() {
        let (_dir, store, head) = paused(None);
        let first = Journal::resume(&store, &head, RunResumed::default()).unwrap();
        first.append(intent("aaaa")).unwrap();
        let tail = first.head().unwrap();
        // A later resume (of an older build, say) that got further.
        let second = Journal::resume(&store, &tail, RunResumed::default()).unwrap();
        second.append(intent("bbbb")).unwrap();
        second.append(answer("bbbb", json!(1), false)).unwrap();
        second.append(intent("cccc")).unwrap();
        second.append(answer("cccc", json!(2), false)).unwrap();
        let ctx = crate::executor::process_context(Mode::Tool, store).build();
        let e = replay_answered_calls(&ctx, Some(&head), "approval at stage 2").unwrap_err();
        assert!(
            e.to_string().contains("(request aaaa) was in flight"),
            "{e}"
        );
    }

    #[test]
    fn a_capped_journal_cannot_say_what_was_sent() {
        let (_dir, store, head) = paused(None);
        // A dead resume that filled the journal: its later calls are not
        // recorded (the last one here).
        let dead = Journal::resume(&store, &head, RunResumed::default()).unwrap();
        for i in 0..17 {
            dead.append(Event::Error(ErrorEvent {
                step: i.to_string(),
                message: "x".repeat(1 << 20),
            }))
            .unwrap();
        }
        dead.append(intent("aaaa")).unwrap();
        let ctx = crate::executor::process_context(Mode::Tool, store.clone()).build();
        // A run that makes no call goes on; one that makes a call stops.
        replay_answered_calls(&ctx, Some(&head), "approval at stage 2").unwrap();
        let req = json!({"tool": "message"});
        let e = ctx
            .broker
            .call(&Policy::default(), Kind::Tool, &req, || panic!("sent"))
            .unwrap_err();
        assert!(
            e.to_string().contains("size cap") && e.to_string().contains("tool call message"),
            "{e}"
        );
        // A first resume of a run capped before its pause finds no dead
        // resume (the run's end after the head is not one).
        let (_dir, store, head) = paused(Some(4096));
        let ctx = crate::executor::process_context(Mode::Tool, store).build();
        assert!(dead_resumes(&ctx, Some(&head), "approval at stage 2")
            .unwrap()
            .is_none());
    }

    #[test]
    fn answered_calls_after_the_pause_go_to_the_ledger_and_an_unanswered_one_stops() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::state::StateStore::new(dir.path());
        let started = RunStarted {
            run_id: crate::journal::new_run_id(),
            ..RunStarted::default()
        };
        let j = Journal::start(&store, started).unwrap();
        // Answered before the pause: the resume state's ledger has it, not this.
        let before = CallAnswer {
            request_digest: "before".into(),
            answer: json!(0),
            replayed: false,
        };
        j.append(Event::CallAnswer(before)).unwrap();
        let head = j.head().unwrap();
        // The dead resumer's leg.
        let dead = Journal::resume(&store, &head, RunResumed::default()).unwrap();
        dead.append(intent("aaaa")).unwrap();
        dead.append(Event::CallAnswer(CallAnswer {
            request_digest: "aaaa".into(),
            answer: json!({"sent": 1}),
            replayed: false,
        }))
        .unwrap();
        let ctx = crate::executor::process_context(Mode::Tool, store.clone()).build();
        replay_answered_calls(&ctx, Some(&head), "approval at stage 2").unwrap();
        let ledger = ctx.broker.ledger();
        assert_eq!(ledger.answers.get("aaaa"), Some(&json!({"sent": 1})));
        assert!(!ledger.answers.contains_key("before"));

        dead.append(intent("bbbbbbbbbbbbbbbbbbbb")).unwrap();
        let ctx = crate::executor::process_context(Mode::Tool, store).build();
        let e = replay_answered_calls(&ctx, Some(&head), "approval at stage 2").unwrap_err();
        assert!(
            e.to_string()
                .contains("interrupted after approval at stage 2")
                && e.to_string()
                    .contains("tool call message (request bbbbbbbbbbbbbbbb)"),
            "{e}"
        );
        assert!(ctx.broker.ledger().answers.is_empty(), "nothing is loaded");
    }
}
