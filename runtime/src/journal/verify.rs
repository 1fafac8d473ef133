//! Checking a journal offline: every record's hash, its place in the chain
//! and its run; a checkpoint (the last line of an export) binding the
//! number of events and the head; the first bad event is named.

use super::canon;
use super::chain::{record_hash, GENESIS};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The last line of `lobster runs export`: what the journal held when it
/// was exported, optionally signed by the operator's journal key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// The run.
    pub run: String,
    /// How many events the journal had.
    pub events: u64,
    /// The last event's hash.
    pub head: String,
    /// When it was exported.
    pub at: String,
}

/// The line form of a checkpoint: `{"checkpoint": {...}, "signature": ...}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckpointLine {
    /// What is vouched for.
    pub checkpoint: Checkpoint,
    /// A minisign signature of the checkpoint's canonical JSON, if signed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

impl Checkpoint {
    /// The bytes a signature covers: the checkpoint's canonical JSON.
    pub fn signed_bytes(&self) -> Vec<u8> {
        canon::to_canonical(&serde_json::to_value(self).unwrap_or_default()).into_bytes()
    }
}

/// What went wrong first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The event's seq (its position; `None` for the checkpoint or the file).
    pub seq: Option<u64>,
    /// 1-based line number.
    pub line: usize,
    /// What is wrong, for a human.
    pub message: String,
}

/// The outcome of checking one journal.
#[derive(Debug, Clone, Default)]
pub struct Verdict {
    /// The run the records belong to.
    pub run: Option<String>,
    /// Whole events that verified, from the first.
    pub events: u64,
    /// The hash of the last event that verified.
    pub head: String,
    /// The status of the `run_ended` event seen last, if any.
    pub ended: Option<String>,
    /// A `capped` marker was seen.
    pub capped: bool,
    /// The checkpoint line, if the journal has one.
    pub checkpoint: Option<CheckpointLine>,
    /// The last line is cut short (a writer killed mid-write), if so.
    pub torn_tail: bool,
    /// The first bad event, if any.
    pub problem: Option<Problem>,
    hashes: Vec<String>,
}

impl Verdict {
    /// The hash of event `seq`, if it verified.
    pub fn hash_at(&self, seq: u64) -> Option<String> {
        self.hashes.get(seq as usize).cloned()
    }

    fn fail(&mut self, seq: Option<u64>, line: usize, message: String) {
        if self.problem.is_none() {
            self.problem = Some(Problem { seq, line, message });
        }
    }
}

/// Check `text` (journal lines, optionally ending with a checkpoint).
/// `expect_run`: the run it must belong to (a journal stored under
/// another run's name fails at its first event). Signatures are checked
/// by the caller on [`Verdict::checkpoint`].
pub fn verify_text(text: &str, expect_run: Option<&str>) -> Verdict {
    let mut v = Verdict {
        run: expect_run.map(str::to_string),
        head: GENESIS.to_string(),
        ..Verdict::default()
    };
    let ends_whole = text.is_empty() || text.ends_with('\n');
    let lines: Vec<&str> = text.split_terminator('\n').collect();
    for (i, line) in lines.iter().enumerate() {
        let n = i + 1;
        let last = i + 1 == lines.len();
        if last && !ends_whole {
            v.torn_tail = true;
            v.fail(
                Some(v.events),
                n,
                format!(
                    "event {} is cut short (the file ends mid-line: a writer killed while appending, or a truncated file); events 0-{} verify",
                    v.events,
                    v.events as i64 - 1
                ),
            );
            break;
        }
        if v.checkpoint.is_some() {
            v.fail(
                None,
                n,
                "a line follows the checkpoint (the checkpoint must be last)".into(),
            );
            break;
        }
        let record: Value = match serde_json::from_str(line) {
            Ok(r) => r,
            Err(e) => {
                v.fail(
                    Some(v.events),
                    n,
                    format!("event {} is not JSON: {e}", v.events),
                );
                break;
            }
        };
        if record.get("checkpoint").is_some() {
            match serde_json::from_value::<CheckpointLine>(record) {
                Ok(cp) => {
                    check_checkpoint(&mut v, &cp, n);
                    v.checkpoint = Some(cp);
                    if v.problem.is_some() {
                        break;
                    }
                    continue;
                }
                Err(e) => {
                    v.fail(None, n, format!("the checkpoint does not parse: {e}"));
                    break;
                }
            }
        }
        if !check_record(&mut v, &record, n) {
            break;
        }
    }
    if v.events == 0 && v.problem.is_none() {
        v.fail(
            Some(0),
            1,
            "no journal events (an empty file, or not a journal)".into(),
        );
    }
    v
}

fn check_record(v: &mut Verdict, record: &Value, n: usize) -> bool {
    let want = v.events;
    let (Some(run), Some(seq), Some(prev), Some(hash), Some(event)) = (
        record.get("run").and_then(Value::as_str),
        record.get("seq").and_then(Value::as_u64),
        record.get("prev").and_then(Value::as_str),
        record.get("hash").and_then(Value::as_str),
        record.get("event"),
    ) else {
        v.fail(
            Some(want),
            n,
            format!("event {want} lacks one of run, seq, prev, hash, event"),
        );
        return false;
    };
    match &v.run {
        Some(r) if r != run => {
            v.fail(
                Some(want),
                n,
                format!("event {want} belongs to run {run}, not {r} (a journal swapped or spliced from another run)"),
            );
            return false;
        }
        None => v.run = Some(run.to_string()),
        _ => {}
    }
    if seq != want {
        let why = if seq > want {
            "an event is missing before it"
        } else {
            "events are out of order or repeated"
        };
        v.fail(
            Some(want),
            n,
            format!("event {want}: the record at line {n} says seq {seq} ({why})"),
        );
        return false;
    }
    if prev != v.head {
        v.fail(
            Some(want),
            n,
            format!("event {want} does not follow event {} (its prev is not that event's hash: an event was removed, reordered or replaced)", want as i64 - 1),
        );
        return false;
    }
    let kind = event.get("kind").and_then(Value::as_str).unwrap_or("");
    if v.capped && kind != "run_ended" {
        v.fail(
            Some(want),
            n,
            format!("event {want} ({kind}) follows the capped marker: only the run's end may"),
        );
        return false;
    }
    let canonical = canon::to_canonical(event);
    let actual = record_hash(prev, run, seq, &canonical);
    if actual != hash {
        v.fail(
            Some(want),
            n,
            format!(
                "event {want} ({kind}) was changed: its content does not hash to its recorded hash"
            ),
        );
        return false;
    }
    if want == 0 && kind != "run_started" {
        v.fail(Some(0), n, format!("event 0 is {kind}, not run_started"));
        return false;
    }
    match kind {
        "capped" => v.capped = true,
        "run_ended" => {
            v.ended = event
                .get("status")
                .and_then(Value::as_str)
                .map(str::to_string)
        }
        "run_resumed" => v.ended = None,
        _ => {}
    }
    v.head = actual.clone();
    v.hashes.push(actual);
    v.events += 1;
    true
}

fn check_checkpoint(v: &mut Verdict, cp: &CheckpointLine, n: usize) {
    let c = &cp.checkpoint;
    if v.run.as_deref() != Some(c.run.as_str()) {
        v.fail(
            None,
            n,
            format!(
                "the checkpoint is for run {}, the events for {}",
                c.run,
                v.run.as_deref().unwrap_or("(none)")
            ),
        );
    } else if c.events != v.events {
        let message = if c.events > v.events {
            format!(
                "the checkpoint vouches for {} events, the file has {}: event {} and after are missing (truncated)",
                c.events, v.events, v.events
            )
        } else {
            format!(
                "the checkpoint vouches for {} events, the file has {}: event {} and after were added",
                c.events, v.events, c.events
            )
        };
        v.fail(Some(c.events.min(v.events)), n, message);
    } else if c.head != v.head {
        v.fail(
            v.events.checked_sub(1),
            n,
            "the checkpoint's head is not the last event's hash".into(),
        );
    }
}
