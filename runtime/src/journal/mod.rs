//! The run journal: every run appends typed [`Event`]s to a hash-chained
//! journal in the store (see `state/journal.rs` for where), so "what ran,
//! on what input, with which component, who approved it, what did the model
//! say" can be answered after the fact and checked offline
//! ([`verify::verify_text`], `lobster verify`).
//!
//! One [`Journal`] handle per run, shared by the request layer and the
//! engine through the run's context; a resumed run continues the same chain
//! from the [`Head`] its resume state carries. Appends happen on the run's
//! own thread, into a buffer of the run's: files have it written by the
//! journal directory's writer within its window (grouped with other runs'
//! records, one `write(2)` per window), PostgreSQL gets one statement per
//! barrier with everything since the last; either way the run's barriers
//! (a brokered call's intent, before the request leaves; a gate, before
//! its token is handed out) are durable before the run goes on.
//!
//! A journal past [`DEFAULT_CAP`] bytes records one [`Event::Capped`] marker
//! and nothing more but the run's end.

pub mod canon;
pub mod chain;
pub mod encode;
pub mod event;
pub mod host;
pub mod kept;
pub mod replay;
pub mod shown;
pub mod time;
pub mod verify;

pub use event::*;
pub use time::now_rfc3339;

use crate::error::{Error, Result};
use crate::state::journal::{JournalWriter, Record, SummaryUpdate};
use crate::state::StateStore;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// The most bytes one run's journal takes before it is capped.
pub const DEFAULT_CAP: u64 = 16 << 20;

/// Where a run's chain stands: carried by a resume state so that the
/// resumed run continues it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Head {
    /// The run's id.
    pub run: String,
    /// Records so far (the next record's seq).
    pub events: u64,
    /// The last record's hash.
    pub hash: String,
    /// The digest rule the run started with, which its resumed legs keep
    /// (absent in resume states written before rule 2: rule 1).
    #[serde(default, skip_serializing_if = "DigestRule::is_v1")]
    pub digests: DigestRule,
}

/// A run's journal (cheap to clone; all clones append to one chain).
///
/// A door plans it ([`Journal::planned`]: its door and, if it has one, the
/// run id it answers with); the engine begins it when the run starts
/// ([`Journal::begin`], or [`Journal::continue_at`] for a resume) and
/// records into it. [`Journal::off`] records nothing. A handle scoped to
/// a workflow step ([`Journal::within`]) marks the `step` events written
/// through it as that step's (the stages of a workflow's pipeline step).
#[derive(Clone, Default)]
pub struct Journal(Option<Arc<Shared>>, Option<Arc<str>>);

struct Shared {
    door: String,
    run_id: String,
    live: OnceLock<Inner>,
    /// The digest rule a run begun from this plan follows.
    rule: DigestRule,
    /// The run this one replays (`lobster replay`): its recorded host
    /// outputs and brokered answers stand in for the real ones.
    replay: Option<Arc<replay::Recorded>>,
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.run_id() {
            Some(id) => write!(f, "Journal({id})"),
            None => f.write_str("Journal(off)"),
        }
    }
}

struct Inner {
    run_id: String,
    /// `run_id` as canonical JSON (hashed into every record).
    run_canonical: String,
    cap: u64,
    began: Instant,
    /// The digest rule of the run's steps.
    rule: DigestRule,
    chain: Mutex<Chain>,
}

struct Chain {
    writer: JournalWriter,
    events: u64,
    head: String,
    bytes: u64,
    capped: bool,
}

/// Whether journals are kept: on, unless `LOBSTER_JOURNAL=off` (a switch
/// for benchmarks that measure the journal's cost; not for production),
/// read once per process.
pub fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| !matches!(std::env::var("LOBSTER_JOURNAL").as_deref(), Ok("off")))
}

/// A fresh run id: the second it was made (8 hex digits), then 96 random bits.
pub fn new_run_id() -> String {
    crate::state::runlog::time_prefixed_id()
}

impl Journal {
    /// A journal that records nothing.
    pub fn off() -> Journal {
        Journal(None, None)
    }

    /// The journal of a run coming through `door` (`cli`, `call`, `mcp`,
    /// `serve`), under `run_id` if the door already answers with one (else
    /// a fresh one); off when journals are switched off ([`enabled`]).
    pub fn planned(door: &str, run_id: Option<String>) -> Journal {
        if !enabled() {
            return Journal::off();
        }
        Journal(
            Some(Arc::new(Shared {
                door: door.to_string(),
                run_id: run_id.unwrap_or_else(new_run_id),
                live: OnceLock::new(),
                rule: DigestRule::CURRENT,
                replay: None,
            })),
            None,
        )
    }

    /// [`Journal::planned`] under digest rule `rule` instead of the current
    /// one (tests: a run as an older lobster journaled it).
    #[cfg(test)]
    pub(crate) fn planned_with_rule(door: &str, rule: DigestRule) -> Journal {
        Journal(
            Some(Arc::new(Shared {
                door: door.to_string(),
                run_id: new_run_id(),
                live: OnceLock::new(),
                rule,
                replay: None,
            })),
            None,
        )
    }

    /// The journal of a run that replays `recorded` (door `replay`, a
    /// fresh id; kept even when journals are switched off, since the
    /// replay is judged by it). The engine reads host outputs from the
    /// record through [`Journal::replaying`], and the broker sends nothing
    /// the record does not answer.
    pub fn replay(recorded: Arc<replay::Recorded>) -> Journal {
        Journal(
            Some(Arc::new(Shared {
                door: "replay".to_string(),
                run_id: new_run_id(),
                live: OnceLock::new(),
                rule: recorded.started.digests,
                replay: Some(recorded),
            })),
            None,
        )
    }

    /// The run this journal's run replays, if it is a replay.
    pub fn replaying(&self) -> Option<&replay::Recorded> {
        self.0.as_ref().and_then(|s| s.replay.as_deref())
    }

    /// The door this run came through (`""` when off).
    pub fn door(&self) -> &str {
        self.0.as_ref().map_or("", |s| s.door.as_str())
    }

    /// Begin the planned journal in `store` with `started` (its run id, door
    /// and digest rule are filled in: a new run's is
    /// [`DigestRule::CURRENT`], a replay's the rule of the run it replays,
    /// so that their digests compare).
    /// A journal already begun is left as it is.
    pub fn begin(&self, store: &StateStore, mut started: RunStarted) -> Result<()> {
        let Some(shared) = &self.0 else {
            return Ok(());
        };
        if shared.live.get().is_some() {
            return Ok(());
        }
        started.run_id.clone_from(&shared.run_id);
        started.door.clone_from(&shared.door);
        started.digests = shared.rule;
        let inner = start_inner(store, started, DEFAULT_CAP)?;
        let _ = shared.live.set(inner);
        Ok(())
    }

    /// Begin the planned journal as the continuation of the chain at `head`
    /// (a resumed run: its events go to the paused run's journal), with
    /// `resumed` as the next event. Files: records a dead resumer appended
    /// after `head` are kept and the chain continues after them, provided
    /// the stored chain passes through `head`.
    pub fn continue_at(
        &self,
        store: &StateStore,
        head: &Head,
        mut resumed: RunResumed,
    ) -> Result<()> {
        let Some(shared) = &self.0 else {
            return Ok(());
        };
        if shared.live.get().is_some() {
            return Ok(());
        }
        resumed.door.clone_from(&shared.door);
        let inner = resume_inner(store, head, resumed)?;
        let _ = shared.live.set(inner);
        Ok(())
    }

    /// Start run `started.run_id`'s journal in `store` now (tests, tools).
    pub fn start(store: &StateStore, started: RunStarted) -> Result<Journal> {
        Journal::start_capped(store, started, DEFAULT_CAP)
    }

    /// [`Journal::start`] with a cap of `cap` bytes.
    pub fn start_capped(store: &StateStore, started: RunStarted, cap: u64) -> Result<Journal> {
        let shared = Shared {
            door: started.door.clone(),
            run_id: started.run_id.clone(),
            live: OnceLock::new(),
            rule: started.digests,
            replay: None,
        };
        let _ = shared.live.set(start_inner(store, started, cap)?);
        Ok(Journal(Some(Arc::new(shared)), None))
    }

    /// Continue the chain at `head` now (see [`Journal::continue_at`]).
    pub fn resume(store: &StateStore, head: &Head, resumed: RunResumed) -> Result<Journal> {
        let shared = Shared {
            door: resumed.door.clone(),
            run_id: head.run.clone(),
            live: OnceLock::new(),
            rule: head.digests,
            replay: None,
        };
        let _ = shared.live.set(resume_inner(store, head, resumed)?);
        Ok(Journal(Some(Arc::new(shared)), None))
    }

    fn live(&self) -> Option<&Inner> {
        self.0.as_ref().and_then(|s| s.live.get())
    }

    /// Whether anything is recorded.
    pub fn is_on(&self) -> bool {
        self.live().is_some()
    }

    /// The rule the run's step digests follow (`None` when nothing is
    /// recorded: then no digest is taken).
    pub fn digest_rule(&self) -> Option<DigestRule> {
        self.live().map(|i| i.rule)
    }

    /// The run's id (`None` when off).
    pub fn run_id(&self) -> Option<&str> {
        match self.live() {
            Some(i) => Some(i.run_id.as_str()),
            None => self.0.as_ref().map(|s| s.run_id.as_str()),
        }
    }

    /// Milliseconds since this leg of the run began.
    pub fn elapsed_ms(&self) -> u64 {
        self.live()
            .map_or(0, |i| i.began.elapsed().as_millis() as u64)
    }

    /// Where the chain stands (`None` when off).
    pub fn head(&self) -> Option<Head> {
        let inner = self.live()?;
        let c = inner.chain.lock().unwrap_or_else(|e| e.into_inner());
        Some(Head {
            run: inner.run_id.clone(),
            events: c.events,
            hash: c.head.clone(),
            digests: inner.rule,
        })
    }

    /// This journal, its `step` events marked as written within workflow
    /// step `step` (a workflow's pipeline step hands it to its stages).
    pub fn within(&self, step: &str) -> Journal {
        Journal(self.0.clone(), Some(Arc::from(step)))
    }

    /// The workflow step this handle's `step` events are marked as
    /// written within ([`Journal::within`]), if any.
    pub fn within_step(&self) -> Option<&str> {
        self.1.as_deref()
    }

    /// Append `event` (a `step` event gets this handle's
    /// [`Journal::within`] unless it names its own). Gates and brokered
    /// calls' intents are durable when this returns (see the module docs).
    pub fn append(&self, mut event: Event) -> Result<()> {
        let Some(inner) = self.live() else {
            return Ok(());
        };
        if let (Event::Step(s), Some(scope)) = (&mut event, &self.1) {
            if s.within.is_none() {
                s.within = Some(scope.to_string());
            }
        }
        append_to(inner, event)
    }

    /// Record the run's end: status, output digest.
    pub fn end(&self, status: &str, output_digest: Option<String>) -> Result<()> {
        if !self.is_on() {
            return Ok(());
        }
        self.append(Event::RunEnded(RunEnded {
            status: status.to_string(),
            at: now_rfc3339(),
            wall_ms: self.elapsed_ms(),
            output_digest,
        }))
    }
}

fn append_to(inner: &Inner, event: Event) -> Result<()> {
    let mut c = inner.chain.lock().unwrap_or_else(|e| e.into_inner());
    let is_end = matches!(event, Event::RunEnded(_));
    if c.capped && !is_end {
        return Ok(());
    }
    let seq = c.events;
    // The event's canonical text is written straight into the record's
    // hashed bytes (see `chain`), hashed in one pass, and handed to the
    // writer from there with the hash's hex on the stack (the files store
    // copies it once, into the run's buffer: no String per record).
    chain::with_record_buffer(|buf| {
        chain::open_record(buf, &c.head);
        let start = buf.len();
        encode::write_event(buf, &event);
        debug_assert_eq!(
            Some(&buf[start..]),
            canon::to_canonical_of(&event).ok().as_deref(),
            "the direct canonical text of a {} event",
            event.kind()
        );
        let capped = !is_end && c.bytes + (buf.len() - start) as u64 + 200 > inner.cap;
        if capped {
            buf.truncate(start);
            encode::write_event(
                buf,
                &Event::Capped(Capped {
                    limit_bytes: inner.cap,
                }),
            );
        }
        let end = buf.len();
        let hash = chain::Hex::of(&chain::close_record(buf, &inner.run_canonical, seq));
        let (summary, barrier) = if capped {
            c.capped = true;
            (None, false)
        } else {
            let barrier = matches!(
                event,
                Event::CallIntent(_)
                    | Event::CallAnswer(_)
                    | Event::GateOpened(_)
                    | Event::Decision(_)
            );
            (summary_change(&event), barrier)
        };
        write(
            &mut c,
            seq,
            &buf[start..end],
            hash.as_str(),
            summary,
            barrier,
        )
    })
}

/// Hand record `seq` (`event` text, its chain `hash`) to the run's writer
/// and make `hash` the chain's head.
fn write(
    c: &mut Chain,
    seq: u64,
    event: &str,
    hash: &str,
    summary: Option<SummaryUpdate>,
    barrier: bool,
) -> Result<()> {
    c.bytes += event.len() as u64 + 200;
    c.events += 1;
    let Chain { writer, head, .. } = c;
    let record = Record {
        seq,
        prev: head,
        hash,
        event,
    };
    let written = writer.append(record, summary, barrier);
    // (In place: the head keeps its buffer.)
    head.clear();
    head.push_str(hash);
    written
}

/// How `event` changes its run's summary, if it does (its run, record
/// count and head are the writer's to fill in).
fn summary_change(event: &Event) -> Option<SummaryUpdate> {
    if !matches!(
        event,
        Event::RunStarted(_)
            | Event::RunResumed(_)
            | Event::Decision(_)
            | Event::GateOpened(_)
            | Event::RunEnded(_)
    ) {
        return None;
    }
    let mut u = SummaryUpdate::default();
    match event {
        Event::RunStarted(s) => {
            let name = s.request.file.clone().unwrap_or_else(|| {
                let (cut, more) = cap_text(&s.request.text, 80);
                if more {
                    format!("{cut}…")
                } else {
                    cut.to_string()
                }
            });
            u.started = Some((name, s.door.clone(), s.at.clone()));
            u.status = Some("running".into());
        }
        Event::RunResumed(_) | Event::Decision(_) => {
            u.status = Some("running".into());
            u.clear_gate = true;
        }
        Event::GateOpened(g) => {
            u.status = Some(format!(
                "needs_{}",
                if g.gate == "input" {
                    "input"
                } else {
                    "approval"
                }
            ));
            u.gate = g.approval_id.clone();
            u.clear_gate = true;
        }
        Event::RunEnded(e) => {
            u.status = Some(e.status.clone());
            u.ended_at = Some(e.at.clone());
            u.clear_gate = !e.status.starts_with("needs_");
        }
        _ => return None,
    }
    Some(u)
}

#[cfg(test)]
mod tests;

fn new_inner(
    writer: JournalWriter,
    cap: u64,
    rule: DigestRule,
    events: u64,
    head: String,
    bytes: u64,
) -> Inner {
    let run_id = writer.run_id().to_string();
    Inner {
        run_canonical: canon::to_canonical_of(&run_id).unwrap_or_default(),
        run_id,
        cap,
        began: Instant::now(),
        rule,
        chain: Mutex::new(Chain {
            writer,
            events,
            head,
            bytes,
            capped: false,
        }),
    }
}

fn start_inner(store: &StateStore, started: RunStarted, cap: u64) -> Result<Inner> {
    let writer = store.journal_writer(&started.run_id)?;
    let genesis = chain::GENESIS.to_string();
    let inner = new_inner(writer, cap, started.digests, 0, genesis, 0);
    append_to(&inner, Event::RunStarted(Box::new(started)))?;
    Ok(inner)
}

fn resume_inner(store: &StateStore, head: &Head, resumed: RunResumed) -> Result<Inner> {
    let writer = store.journal_writer(&head.run)?;
    let (events, hash, bytes) = match store.journal_text(&head.run)? {
        Some(text) => {
            let v = verify::verify_text(&text, Some(&head.run));
            let through = v.hash_at(head.events.saturating_sub(1));
            if head.events > 0 && through.as_deref() != Some(head.hash.as_str()) {
                return Err(Error::runtime(format!(
                    "the journal of run {} does not continue the chain its resume state recorded (event {} should hash to {}): it was changed or replaced; see `lobster verify`",
                    head.run,
                    head.events.saturating_sub(1),
                    &head.hash[..head.hash.len().min(16)]
                )));
            }
            (v.events, v.head, text.len() as u64)
        }
        None => (head.events, head.hash.clone(), 0),
    };
    let inner = new_inner(writer, DEFAULT_CAP, head.digests, events, hash, bytes);
    append_to(&inner, Event::RunResumed(resumed))?;
    Ok(inner)
}

#[cfg(test)]
mod store_tests;
