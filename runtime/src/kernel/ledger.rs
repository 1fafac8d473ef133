//! The run's broker state: every brokered answer by request digest and what
//! the run has spent, shared by every stage and step of the run
//! ([`crate::kernel::Context::broker`]) and saved in its resume state. The
//! calls themselves, and how they are judged and charged, are the broker's
//! and the policy's (`crate::broker`, `crate::policy::broker`).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::any::Any;
use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use super::recorded::{Matched, Recording, Recovered};

/// Calls and tokens a run has spent, checked against `[max]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Spent {
    /// Tool calls made (answered from the network, not replayed).
    pub tool_calls: u64,
    /// Model calls made.
    pub llm_calls: u64,
    /// Model tokens reported by the providers.
    pub llm_tokens: u64,
}

impl Spent {
    /// Count `tokens` a provider reported for an answer.
    pub fn add_tokens(&mut self, tokens: u64) {
        self.llm_tokens = self.llm_tokens.saturating_add(tokens);
    }
}

/// What a run has asked and been answered, plus what it has spent; saved in
/// the resume state so a resumed run replays instead of asking again.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ledger {
    /// Request digest (blake3 hex) → the answer.
    #[serde(default)]
    pub answers: BTreeMap<String, Value>,
    /// Calls and tokens spent so far.
    #[serde(default)]
    pub spent: Spent,
}

impl Ledger {
    /// Whether nothing was recorded or spent.
    pub fn is_empty(&self) -> bool {
        self.answers.is_empty() && self.spent == Spent::default()
    }
}

/// The run's broker: the configuration it was started with (the broker
/// room's endpoints and credentials, fixed for the run; opaque here) and
/// its ledger behind a lock (parallel workflow branches share it).
#[derive(Default)]
pub struct Broker {
    config: Option<Box<dyn Any + Send + Sync>>,
    ledger: Mutex<Ledger>,
    /// The run's journal: each call's intent is recorded (durably) before
    /// its request leaves, its answer when it arrives.
    journal: Mutex<crate::journal::Journal>,
    /// A run claimed again after its resumer died: the calls that resume
    /// made, which this run's calls are matched against
    /// ([`super::recorded`]).
    recording: Mutex<Option<Recording>>,
}

impl std::fmt::Debug for Broker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Broker")
            .field("configured", &self.config.is_some())
            .finish_non_exhaustive()
    }
}

/// Whether a call is a tool call or a model call (for budgets and digests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A gateway tool.
    Tool,
    /// A model.
    Llm,
}

impl Kind {
    /// The word the journal and errors use for the call: `tool` or `model`.
    pub fn noun(self) -> &'static str {
        match self {
            Kind::Tool => "tool",
            Kind::Llm => "model",
        }
    }
}

impl Broker {
    /// A broker started with `config` (`crate::broker::endpoints::Endpoints`),
    /// nothing recorded yet.
    pub fn with_config<T: Any + Send + Sync>(config: T) -> Broker {
        Broker {
            config: Some(Box::new(config)),
            ledger: Mutex::default(),
            journal: Mutex::default(),
            recording: Mutex::default(),
        }
    }

    /// The configuration it was started with, when it is a `T`.
    pub fn config<T: Any>(&self) -> Option<&T> {
        self.config.as_ref()?.downcast_ref::<T>()
    }

    /// A broker that starts from a recorded ledger (resume).
    pub fn with_ledger(ledger: Ledger) -> Broker {
        Broker {
            config: None,
            ledger: Mutex::new(ledger),
            journal: Mutex::default(),
            recording: Mutex::default(),
        }
    }

    /// Record this run's calls in `journal`.
    pub fn attach_journal(&self, journal: crate::journal::Journal) {
        *self.journal.lock().unwrap_or_else(|e| e.into_inner()) = journal;
    }

    /// The journal this run's calls are recorded in (off unless attached).
    pub fn journal(&self) -> crate::journal::Journal {
        self.journal
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// A copy of the ledger, for the resume state.
    pub fn ledger(&self) -> Ledger {
        self.lock().clone()
    }

    /// Replace the ledger (a resumed run restores the recorded one).
    pub fn restore(&self, ledger: Ledger) {
        *self.lock() = ledger;
    }

    /// The recorded answer for `digest`, if any.
    pub fn replay(&self, digest: &str) -> Option<Value> {
        self.lock().answers.get(digest).cloned()
    }

    /// The ledger, locked (the broker charges and records under it).
    pub fn lock(&self) -> MutexGuard<'_, Ledger> {
        self.ledger.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Match this run's calls against `record`, the calls its dead resumer
    /// made after the gate ([`super::recorded`]); their answers join the
    /// ledger (a later pause saves them).
    pub fn recover(&self, record: Recovered) {
        {
            let mut ledger = self.lock();
            for call in &record.calls {
                if let Some(answer) = &call.answer {
                    ledger
                        .answers
                        .entry(call.request_digest.clone())
                        .or_insert_with(|| answer.clone());
                }
            }
        }
        *self.recording() = Some(Recording::new(record));
    }

    /// What the dead resumer's record says of the next call, a `kind` call
    /// `name` with request digest `digest` ([`Matched::Send`] when the run
    /// is not recovering).
    pub fn match_recorded(&self, kind: Kind, name: &str, digest: &str) -> Matched {
        match self.recording().as_mut() {
            Some(r) => r.next(kind.noun(), name, digest),
            None => Matched::Send,
        }
    }

    /// Whether calls of the dead resumer's record are left to match: a
    /// stage that would answer a call from elsewhere (a cache) asks the
    /// broker instead, so the calls keep their positions.
    pub fn replaying_record(&self) -> bool {
        self.recording().as_ref().is_some_and(Recording::pending)
    }

    /// Why the record stopped this run, if it did: the resume ends with
    /// this error (`interrupted`), whatever its steps made of the refusal.
    pub fn recovery_refusal(&self) -> Option<crate::error::Error> {
        self.recording().as_ref()?.refused().cloned()
    }

    fn recording(&self) -> MutexGuard<'_, Option<Recording>> {
        self.recording.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The digest a request is recorded under: blake3 of its kind and canonical JSON.
pub fn request_digest(kind: Kind, request: &Value) -> String {
    let mut h = blake3::Hasher::new();
    h.update(match kind {
        Kind::Tool => b"lobster-broker-tool\0",
        Kind::Llm => b"lobster-broker-llm\0\0",
    });
    h.update(crate::value::to_js_json(request).as_bytes());
    h.finalize().to_hex().to_string()
}
