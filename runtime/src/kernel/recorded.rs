//! The brokered calls a dead resume of a run made after its gate, as the
//! run's journal recorded them, and how the resume that claims the run
//! again matches its own calls against them (docs/ARCHITECTURE.md,
//! "Recovery").
//!
//! The steps after the gate run again as the same pinned components with
//! the recorded clock and seed, so they ask the same calls in the same
//! order. Each call the new resume asks is matched by its position and its
//! request digest against the record ([`Recording::next`]):
//! - the same digest, answered: the recorded answer is replayed, nothing is
//!   sent;
//! - the same digest, asked and not answered (it was in flight when the
//!   resume died): nobody knows whether it acted, so the run stops for a
//!   human, naming the call;
//! - another digest: the steps did not repeat the dead resume's calls, so
//!   the run stops for a human, naming both;
//! - past the record: sent as usual (the dead resume never got there) —
//!   unless the record holds an unanswered call.
//!
//! A refusal is sticky: every later call of the run is refused too, and the
//! resume that claimed the run ends `interrupted`
//! ([`crate::kernel::Broker::recovery_refusal`]), whatever its steps made
//! of the refused call.

use crate::error::Error;
use serde_json::Value;

/// One brokered call of a dead resume, as the journal recorded it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedCall {
    /// `tool` or `model` (empty when the journal holds only a replayed
    /// answer, whose intent was recorded before the gate).
    pub target: String,
    /// The tool's or model's name (empty, as `target`).
    pub name: String,
    /// The request's digest (the broker's ledger key).
    pub request_digest: String,
    /// Its answer; `None` when it was asked and no answer was recorded.
    pub answer: Option<Value>,
    /// Its request left (an intent was recorded), so it counts against the
    /// run's budget; `false` for an answer the dead resume replayed.
    pub sent: bool,
}

/// The calls a dead resume made after the gate, in the order it made them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Recovered {
    /// The run (for the hint: `lobster runs show RUN`).
    pub run: String,
    /// The gate the run was paused at, as errors name it (`approval at
    /// stage 2`, `input at step 3 (ask)`).
    pub at: String,
    /// The calls, in order.
    pub calls: Vec<RecordedCall>,
    /// Why the journal cannot say what the dead resume sent (capped, or
    /// not verifying), if so: then every call is refused, and only a run
    /// that makes none (pure after its gate) goes on.
    pub unknown: Option<String>,
}

impl Recovered {
    /// The first call asked and not answered, if any.
    pub fn unanswered(&self) -> Option<&RecordedCall> {
        self.calls.iter().find(|c| c.answer.is_none())
    }

    /// The error for `call`, asked by the dead resume and never answered.
    pub fn in_flight(&self, call: &RecordedCall) -> Error {
        Error::runtime(format!(
            "this run was interrupted after {}: the resume that claimed it died while a {} call {} (request {}) was in flight, and its answer is not in the journal, so it is not sent again",
            self.at,
            call.target,
            call.name,
            short(&call.request_digest)
        ))
        .with_hint(format!(
            "check whether {} acted, then start the run anew (lobster runs show {} has what the run did)",
            call.name, self.run
        ))
    }

    /// The error for a call the journal cannot vouch for (see [`Recovered::unknown`]).
    fn unknowable(&self, why: &str, asked: (&str, &str, &str)) -> Error {
        Error::runtime(format!(
            "this run was interrupted after {}: the resume that claimed it died, and {why}, so what it sent is not known and the {} call {} (request {}) is not sent",
            self.at,
            asked.0,
            asked.1,
            short(asked.2)
        ))
        .with_hint(format!(
            "check what the run did (lobster runs show {}), then start it anew",
            self.run
        ))
    }

    /// The error for call number `position` (0-based) after the gate: the
    /// new resume asked `asked` (noun, name, digest) where the dead one
    /// asked something else.
    fn diverged(&self, position: usize, asked: (&str, &str, &str)) -> Error {
        let was = &self.calls[position];
        let was_name = if was.name.is_empty() {
            String::from("a call")
        } else {
            format!("{} call {}", was.target, was.name)
        };
        Error::runtime(format!(
            "this run was interrupted after {}: call {} after the gate is a {} call {} (request {}), but the resume that claimed the run before and died asked {was_name} (request {}) there; the steps did not repeat its calls, so nothing more is sent",
            self.at,
            position + 1,
            asked.0,
            asked.1,
            short(asked.2),
            short(&was.request_digest)
        ))
        .with_hint(format!(
            "a step after the gate read something that changed (a file, the environment) or is not deterministic; check what the calls did (lobster runs show {}), then start the run anew",
            self.run
        ))
    }
}

fn short(digest: &str) -> &str {
    &digest[..digest.len().min(16)]
}

/// What the record says of a call the recovering run is about to ask.
#[derive(Debug, Clone)]
pub enum Matched {
    /// Not recovering, or past the record: ask as usual.
    Send,
    /// The dead resume's answer: replay it (charging the run's budget
    /// when the dead resume's request left, as it was charged there).
    Replay {
        /// The answer.
        answer: Value,
        /// The dead resume sent the request.
        sent: bool,
    },
    /// Stop: the run ends `interrupted` (see the module docs).
    Refuse(Error),
}

/// A run's progress through the record of its dead resume.
#[derive(Debug, Default)]
pub struct Recording {
    record: Recovered,
    next: usize,
    refused: Option<Error>,
}

impl Recording {
    /// Start matching against `record`.
    pub fn new(record: Recovered) -> Recording {
        Recording {
            record,
            next: 0,
            refused: None,
        }
    }

    /// Match the next call: a `noun` (`tool`, `model`) call `name` whose
    /// request digest is `digest`.
    pub fn next(&mut self, noun: &str, name: &str, digest: &str) -> Matched {
        if let Some(e) = &self.refused {
            return Matched::Refuse(e.clone());
        }
        let position = self.next;
        let matched = match self.record.calls.get(position) {
            _ if self.record.unknown.is_some() => {
                let why = self.record.unknown.as_deref().unwrap_or_default();
                Matched::Refuse(self.record.unknowable(why, (noun, name, digest)))
            }
            None => match self.record.unanswered() {
                None => return Matched::Send,
                Some(lost) => Matched::Refuse(self.record.in_flight(lost)),
            },
            Some(was) if was.request_digest != digest => {
                Matched::Refuse(self.record.diverged(position, (noun, name, digest)))
            }
            Some(was) => match &was.answer {
                Some(answer) => Matched::Replay {
                    answer: answer.clone(),
                    sent: was.sent,
                },
                None => Matched::Refuse(self.record.in_flight(was)),
            },
        };
        self.next += 1;
        if let Matched::Refuse(e) = &matched {
            self.refused = Some(e.clone());
        }
        matched
    }

    /// Whether recorded calls are left to match.
    pub fn pending(&self) -> bool {
        self.refused.is_none() && self.next < self.record.calls.len()
    }

    /// The refusal that stopped the run, if one did.
    pub fn refused(&self) -> Option<&Error> {
        self.refused.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(digest: &str, answer: Option<Value>) -> RecordedCall {
        RecordedCall {
            target: "tool".into(),
            name: "message".into(),
            request_digest: digest.into(),
            sent: true,
            answer,
        }
    }

    /// The answer `m` replays, if it replays one.
    fn replayed(m: Matched) -> Option<Value> {
        match m {
            Matched::Replay { answer, sent: true } => Some(answer),
            _ => None,
        }
    }

    fn record(calls: Vec<RecordedCall>) -> Recording {
        Recording::new(Recovered {
            run: "r1".into(),
            at: "approval at step 2 (review)".into(),
            calls,
            unknown: None,
        })
    }

    #[test]
    fn calls_in_the_recorded_order_replay_then_later_ones_are_sent() {
        let mut r = record(vec![
            call("aaaa", Some(json!(1))),
            call("bbbb", Some(json!(2))),
        ]);
        assert!(r.pending());
        assert_eq!(replayed(r.next("tool", "message", "aaaa")), Some(json!(1)));
        assert_eq!(replayed(r.next("tool", "message", "bbbb")), Some(json!(2)));
        assert!(!r.pending());
        assert!(matches!(r.next("tool", "message", "cccc"), Matched::Send));
        assert!(r.refused().is_none());
    }

    #[test]
    fn another_digest_at_a_position_stops_the_run_and_every_later_call() {
        let mut r = record(vec![
            call("aaaa", Some(json!(1))),
            call("bbbb", Some(json!(2))),
        ]);
        assert_eq!(replayed(r.next("tool", "message", "aaaa")), Some(json!(1)));
        // Out of order: b's digest where the dead resume asked a again.
        let Matched::Refuse(e) = r.next("model", "gpt", "aaaa") else {
            panic!("not refused")
        };
        let msg = e.to_string();
        assert!(
            msg.contains("interrupted after approval at step 2 (review)")
                && msg.contains("call 2 after the gate is a model call gpt (request aaaa)")
                && msg.contains("asked tool call message (request bbbb)"),
            "{msg}"
        );
        assert!(!r.pending());
        // Sticky: the recorded answer of a later position is not handed out.
        assert!(matches!(
            r.next("tool", "message", "bbbb"),
            Matched::Refuse(_)
        ));
        assert_eq!(r.refused().map(ToString::to_string), Some(msg));
    }

    #[test]
    fn an_unanswered_call_is_refused_at_its_position_and_past_the_record() {
        let mut r = record(vec![call("aaaa", Some(json!(1))), call("bbbb", None)]);
        assert_eq!(replayed(r.next("tool", "message", "aaaa")), Some(json!(1)));
        let Matched::Refuse(e) = r.next("tool", "message", "bbbb") else {
            panic!("not refused")
        };
        assert!(
            e.to_string()
                .contains("died while a tool call message (request bbbb) was in flight"),
            "{e}"
        );
        // A run that never asks the lost call again still sends nothing new.
        let mut r = record(vec![call("bbbb", None)]);
        r.next = 1; // as if the call were skipped
        assert!(matches!(
            r.next("tool", "other", "cccc"),
            Matched::Refuse(_)
        ));
    }
}
