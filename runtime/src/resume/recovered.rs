//! A paused run claimed again after its resumer died: the brokered calls
//! that resumer made are in the run's journal (the intent before the
//! request left, the answer as it arrived). Answered ones are handed to the
//! new leg's broker, so they are replayed, not sent again; an intent
//! without an answer means nobody knows whether the call acted, so the run
//! stops for a human (`interrupted`, naming the call).

use crate::error::{Error, Result};
use crate::journal::replay::events_of;
use crate::journal::verify::verify_text;
use crate::journal::{CallIntent, Event, Head};
use crate::kernel::Context;
use std::collections::BTreeMap;

/// Load the answers of the calls recorded after `head` (the pause) into
/// `ctx`'s broker; refuse when one was asked and not answered. `at` names
/// where the run was paused, for the error.
pub fn replay_answered_calls(ctx: &Context, head: Option<&Head>, at: &str) -> Result<()> {
    let Some(head) = head else {
        return Ok(());
    };
    let Some(text) = ctx.state.journal_text(&head.run)? else {
        return Ok(());
    };
    // Only whole events whose chain verifies count as recorded.
    let whole = verify_text(&text, Some(&head.run)).events as usize;
    let mut intents: Vec<CallIntent> = Vec::new();
    let mut answers = BTreeMap::new();
    for event in events_of(&text)
        .into_iter()
        .take(whole)
        .skip(head.events as usize)
    {
        match event {
            Event::CallIntent(i) => intents.push(i),
            Event::CallAnswer(a) => {
                answers.entry(a.request_digest).or_insert(a.answer);
            }
            _ => {}
        }
    }
    if let Some(lost) = intents
        .iter()
        .find(|i| !answers.contains_key(&i.request_digest))
    {
        return Err(Error::runtime(format!(
            "this run was interrupted after approval at {at}: the resume that claimed it died while a {} call {} (request {}) was in flight, and its answer is not in the journal, so it is not sent again",
            lost.target,
            lost.name,
            &lost.request_digest[..lost.request_digest.len().min(16)]
        ))
        .with_hint(format!(
            "check whether {} acted, then start the run anew (lobster runs show {} has what the run did)",
            lost.name, head.run
        )));
    }
    let mut ledger = ctx.broker.lock();
    for (digest, answer) in answers {
        ledger.answers.entry(digest).or_insert(answer);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::{CallAnswer, Journal, RunResumed, RunStarted};
    use crate::kernel::Mode;
    use serde_json::json;

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
        let intent = |d: &str| {
            Event::CallIntent(CallIntent {
                target: "tool".into(),
                name: "message".into(),
                request_digest: d.into(),
            })
        };
        dead.append(intent("aaaa")).unwrap();
        dead.append(Event::CallAnswer(CallAnswer {
            request_digest: "aaaa".into(),
            answer: json!({"sent": 1}),
            replayed: false,
        }))
        .unwrap();
        let ctx = crate::executor::process_context(Mode::Tool, store.clone()).build();
        replay_answered_calls(&ctx, Some(&head), "stage 2").unwrap();
        let ledger = ctx.broker.ledger();
        assert_eq!(ledger.answers.get("aaaa"), Some(&json!({"sent": 1})));
        assert!(!ledger.answers.contains_key("before"));

        dead.append(intent("bbbbbbbbbbbbbbbbbbbb")).unwrap();
        let ctx = crate::executor::process_context(Mode::Tool, store).build();
        let e = replay_answered_calls(&ctx, Some(&head), "stage 2").unwrap_err();
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
