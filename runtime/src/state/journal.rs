//! Where run journals are kept (see `crate::journal` for what they hold):
//! the store only appends records, reads them back, and keeps one summary
//! per run for listing. It knows nothing of events.
//!
//! Files (`state/journal_files/`): records go to shared, group-committed
//! segments under `<dir>/journal/`, written by one writer thread per
//! directory, with `index.log` naming each run's extents and its summary
//! changes; barriers (a brokered call about to leave, a gate, a decision)
//! are synced before their run goes on.
//!
//! (A little past 700 lines with its tests: both stores' summaries and
//! pruning rule are here, the files store's format in `journal_files/`.)
//!
//! PostgreSQL: rows of `lobster_journal (run_id, seq, prev, hash, event)`,
//! unique `(run_id, seq)`, and `lobster_journal_runs` (one summary per run,
//! indexed by tenant and start time); a writer buffers records and sends
//! them with the summary in one statement at each barrier (run start, a
//! brokered call's intent, a gate, the end).

use super::journal_files;
use super::{pg, StateStore};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// One journal record as stored: its place in the chain and its event
/// (canonical JSON text).
#[derive(Debug, Clone, PartialEq)]
pub struct StoredRecord {
    /// Position in the run's chain, from 0.
    pub seq: u64,
    /// Hash of the record before (hex).
    pub prev: String,
    /// This record's hash (hex).
    pub hash: String,
    /// The event's canonical JSON.
    pub event: String,
}

/// One journal record as a run appends it, borrowed from the run's
/// journal (its chain's head, the hash just computed, the event's text
/// in the record buffer): the files store writes its line straight into
/// the run's buffer, so an append makes no `String` of its own.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Record<'a> {
    /// Position in the run's chain, from 0.
    pub seq: u64,
    /// Hash of the record before (hex).
    pub prev: &'a str,
    /// This record's hash (hex).
    pub hash: &'a str,
    /// The event's canonical JSON.
    pub event: &'a str,
}

impl StoredRecord {
    /// This record, borrowed.
    pub fn as_record(&self) -> Record<'_> {
        Record {
            seq: self.seq,
            prev: &self.prev,
            hash: &self.hash,
            event: &self.event,
        }
    }
}

impl Record<'_> {
    /// This record, owned.
    pub fn to_stored(&self) -> StoredRecord {
        StoredRecord {
            seq: self.seq,
            prev: self.prev.to_string(),
            hash: self.hash.to_string(),
            event: self.event.to_string(),
        }
    }
}

/// The line a record is stored and exported as (no newline).
pub fn format_line(run: &str, r: &StoredRecord) -> String {
    let mut line = Vec::with_capacity(r.event.len() + run.len() + 180);
    push_line(
        &mut line,
        &serde_json::to_string(run).unwrap_or_default(),
        r.as_record(),
    );
    String::from_utf8(line).unwrap_or_default()
}

/// Append [`format_line`]'s line of `r` to `out`, the run given as its
/// JSON string `run_json` (a run's buffer quotes its run once).
pub(super) fn push_line(out: &mut Vec<u8>, run_json: &str, r: Record<'_>) {
    let mut seq = itoa::Buffer::new();
    let parts = [
        "{\"run\":",
        run_json,
        ",\"seq\":",
        seq.format(r.seq),
        ",\"prev\":\"",
        r.prev,
        "\",\"hash\":\"",
        r.hash,
        "\",\"event\":",
        r.event,
        "}",
    ];
    out.reserve(parts.iter().map(|p| p.len()).sum());
    for part in parts {
        out.extend_from_slice(part.as_bytes());
    }
}

/// What a run's summary says (one per run, for `lobster runs list`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// The run's id.
    pub run_id: String,
    /// The workflow file, catalog name, or pipeline text (cut short).
    pub name: String,
    /// The door it came through.
    pub door: String,
    /// One of [`RUN_STATUSES`]: `running` (also a run whose process
    /// died: nothing ended it), `needs_approval`, `needs_input`, `ok`,
    /// `error` (a run stopped as interrupted too), `cancelled`, `pruned`.
    pub status: String,
    /// When it started (RFC 3339).
    pub started_at: String,
    /// When it last ended (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
    /// The pending gate's short id (while paused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<String>,
    /// The chain's head hash.
    pub head: String,
    /// Records in the journal.
    pub events: u64,
}

/// A change to a run's summary, written with the records it follows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SummaryUpdate {
    /// The run.
    pub run_id: String,
    /// Records so far.
    pub events: u64,
    /// The head after them.
    pub head: String,
    /// Set by the run's first record: name, door, start time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<(String, String, String)>,
    /// The new status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// The pending gate, when one opened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<String>,
    /// No gate is pending any more.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub clear_gate: bool,
    /// When the run ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
    /// Files store: where the records written with this change went
    /// (segment file name, offset, length).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extents: Vec<(String, u64, u64)>,
}

impl SummaryUpdate {
    /// This change followed by `next`, as one change.
    pub fn then(mut self, next: SummaryUpdate) -> SummaryUpdate {
        if next.events >= self.events {
            self.events = next.events;
            self.head = next.head;
        }
        if next.started.is_some() {
            self.started = next.started;
        }
        if next.status.is_some() {
            self.status = next.status;
        }
        if next.gate.is_some() {
            self.gate = next.gate;
        } else if next.clear_gate {
            self.gate = None;
        }
        self.clear_gate |= next.clear_gate;
        if next.ended_at.is_some() {
            self.ended_at = next.ended_at;
        }
        self.extents.extend(next.extents);
        self
    }

    pub(super) fn apply(&self, s: &mut RunSummary) {
        s.run_id.clone_from(&self.run_id);
        if self.events >= s.events {
            s.events = self.events;
            s.head.clone_from(&self.head);
        }
        if let Some((name, door, at)) = &self.started {
            s.name.clone_from(name);
            s.door.clone_from(door);
            s.started_at.clone_from(at);
        }
        if let Some(status) = &self.status {
            s.status.clone_from(status);
        }
        if self.clear_gate {
            s.gate = None;
        }
        if let Some(gate) = &self.gate {
            s.gate = Some(gate.clone());
        }
        if let Some(at) = &self.ended_at {
            s.ended_at = Some(at.clone());
        }
    }
}

/// Every status a run's summary can have: what `lobster runs list
/// --status` and `GET /v1/runs?status=` take.
pub const RUN_STATUSES: [&str; 7] = [
    "running",
    "needs_approval",
    "needs_input",
    "ok",
    "error",
    "cancelled",
    "pruned",
];

/// `status` as a filter, if a run can have it (one of [`RUN_STATUSES`]);
/// else what to write instead.
pub fn status_filter(status: &str) -> std::result::Result<String, String> {
    if RUN_STATUSES.contains(&status) {
        return Ok(status.to_string());
    }
    Err(format!(
        "no run has status {status:?}: a run's status is one of {}",
        RUN_STATUSES.join(", ")
    ))
}

/// Which runs to list (newest first).
#[derive(Debug, Clone, Default)]
pub struct RunFilter {
    /// Only runs with this status.
    pub status: Option<String>,
    /// Only runs started at or after this time (RFC 3339).
    pub since: Option<String>,
    /// Only runs older than this one (`started_at`, `run_id`): the page after it.
    pub before: Option<(String, String)>,
    /// At most this many.
    pub limit: Option<usize>,
}

impl RunFilter {
    fn keeps(&self, s: &RunSummary) -> bool {
        self.status.as_ref().is_none_or(|st| &s.status == st)
            && self
                .since
                .as_ref()
                .is_none_or(|t| s.started_at.as_str() >= t.as_str())
            && self.before.as_ref().is_none_or(|(t, id)| {
                (s.started_at.as_str(), s.run_id.as_str()) < (t.as_str(), id.as_str())
            })
    }
}

/// A run id a journal may be stored under: `[A-Za-z0-9_-]{1,64}`.
pub fn check_run_id(id: &str) -> Result<()> {
    if !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        Ok(())
    } else {
        Err(Error::parse(format!(
            "{id:?} is not a run id: expected 1-64 letters, digits, '-' or '_' (see `lobster runs list`)"
        )))
    }
}

/// Appends one run's records (see the module docs).
#[derive(Debug)]
pub struct JournalWriter {
    run_id: String,
    backend: WriterBackend,
}

/// (One per run, made once: the PostgreSQL variant's size costs nothing.)
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
enum WriterBackend {
    Files {
        dir: PathBuf,
        pending: std::sync::Arc<journal_files::Pending>,
    },
    Postgres {
        tenant: pg::Tenant,
        pending: Vec<StoredRecord>,
        summary: Option<SummaryUpdate>,
        since: Option<std::time::Instant>,
    },
}

impl StateStore {
    fn journal_dir(&self) -> PathBuf {
        self.dir().join("journal")
    }

    /// A writer appending to run `run_id`'s journal (made if new).
    pub fn journal_writer(&self, run_id: &str) -> Result<JournalWriter> {
        check_run_id(run_id)?;
        let backend = match self.pg()? {
            Some(t) => WriterBackend::Postgres {
                tenant: t.clone(),
                pending: Vec::new(),
                summary: None,
                since: None,
            },
            None => WriterBackend::Files {
                dir: self.journal_dir(),
                pending: journal_files::Pending::new(run_id),
            },
        };
        Ok(JournalWriter {
            run_id: run_id.to_string(),
            backend,
        })
    }

    /// Run `run_id`'s journal as stored (lines), or `None` when there is
    /// none.
    pub fn journal_text(&self, run_id: &str) -> Result<Option<String>> {
        check_run_id(run_id)?;
        if let Some(t) = self.pg()? {
            let rows = t.journal_rows(run_id)?;
            if rows.is_empty() {
                return Ok(None);
            }
            let mut text = String::new();
            for r in &rows {
                text.push_str(&format_line(run_id, r));
                text.push('\n');
            }
            return Ok(Some(text));
        }
        journal_files::read_run(&self.journal_dir(), run_id)
    }

    /// The runs' summaries `filter` keeps, newest first.
    pub fn journal_runs(&self, filter: &RunFilter) -> Result<Vec<RunSummary>> {
        if let Some(t) = self.pg()? {
            return t.journal_runs(filter);
        }
        // Only the page is copied: the newest `limit` chosen among
        // references, then sorted.
        let runs = journal_files::with_index(&self.journal_dir(), |runs| {
            let newest_first = |a: &&RunSummary, b: &&RunSummary| {
                (&b.started_at, &b.run_id).cmp(&(&a.started_at, &a.run_id))
            };
            let mut kept: Vec<&RunSummary> = runs
                .values()
                .map(|(s, _)| s)
                .filter(|s| !s.started_at.is_empty() && filter.keeps(s))
                .collect();
            if let Some(n) = filter.limit.filter(|&n| n < kept.len()) {
                if n == 0 {
                    kept.clear();
                } else {
                    kept.select_nth_unstable_by(n - 1, newest_first);
                    kept.truncate(n);
                }
            }
            kept.sort_by(newest_first);
            kept.into_iter().cloned().collect::<Vec<RunSummary>>()
        })?;
        Ok(runs.unwrap_or_default())
    }

    /// One run's summary.
    pub fn journal_summary(&self, run_id: &str) -> Result<Option<RunSummary>> {
        check_run_id(run_id)?;
        if let Some(t) = self.pg()? {
            return t.journal_summary(run_id);
        }
        Ok(journal_files::with_index(&self.journal_dir(), |runs| {
            runs.get(run_id)
                .map(|(s, _)| s)
                .filter(|s| !s.started_at.is_empty())
                .cloned()
        })?
        .flatten())
    }

    /// Remove the journals of runs that ended before `cutoff` (RFC 3339) and
    /// of all but the newest `keep` runs that ended; each leaves its summary
    /// as a tombstone (status `pruned`, its head hash kept). Runs still
    /// going or paused are kept. Returns the pruned runs' ids.
    pub fn journal_prune(&self, cutoff: &str, keep: usize) -> Result<Vec<String>> {
        if let Some(t) = self.pg()? {
            return t.journal_prune(cutoff, keep);
        }
        journal_files::compact(&self.journal_dir(), |text| {
            let mut runs: Vec<(RunSummary, Vec<journal_files::Extent>)> =
                fold_index(text).into_values().collect();
            // Newest first; lines of runs that never started (a torn start)
            // go last, and are kept as they are.
            runs.sort_by(|(a, _), (b, _)| {
                (&b.started_at, &b.run_id).cmp(&(&a.started_at, &a.run_id))
            });
            let started: Vec<RunSummary> = runs
                .iter()
                .filter(|(s, _)| !s.started_at.is_empty())
                .map(|(s, _)| s.clone())
                .collect();
            let doomed = choose_pruned(&started, cutoff, keep);
            let mut out = String::new();
            for (s, extents) in runs.iter_mut().rev() {
                let pruned = doomed.contains(&s.run_id);
                if pruned {
                    s.status = "pruned".into();
                    s.gate = None;
                }
                let update = SummaryUpdate {
                    run_id: s.run_id.clone(),
                    events: s.events,
                    head: s.head.clone(),
                    started: (!s.started_at.is_empty())
                        .then(|| (s.name.clone(), s.door.clone(), s.started_at.clone())),
                    status: (!s.status.is_empty()).then(|| s.status.clone()),
                    gate: s.gate.clone(),
                    clear_gate: false,
                    ended_at: s.ended_at.clone(),
                    extents: if pruned {
                        Vec::new()
                    } else {
                        std::mem::take(extents)
                    },
                };
                out.push_str(&serde_json::to_string(&update).unwrap_or_default());
                out.push('\n');
            }
            (out, doomed)
        })
    }
}

/// The runs to prune of `runs` (newest first): ended ones before `cutoff`,
/// and ended ones past the newest `keep`.
fn choose_pruned(runs: &[RunSummary], cutoff: &str, keep: usize) -> Vec<String> {
    let settled = |s: &RunSummary| {
        !matches!(
            s.status.as_str(),
            "running" | "needs_approval" | "needs_input" | "pruned"
        )
    };
    runs.iter()
        .enumerate()
        .filter(|(i, s)| settled(s) && (s.started_at.as_str() < cutoff || *i >= keep))
        .map(|(_, s)| s.run_id.clone())
        .collect()
}

/// Wait until every journal record this process appended is written (the
/// files store's writers; before the process exits).
pub fn flush_all() {
    journal_files::flush_all();
}

/// Let the files store's writers start their threads only once a window
/// has passed, through `schedule` (the process's timer; set at its start):
/// a process that ends sooner writes its journal at its end, with no
/// thread of its own for it.
pub fn set_scheduler(schedule: journal_files::Scheduler) {
    journal_files::set_scheduler(schedule);
}

impl JournalWriter {
    /// The run this writer appends to.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Append `record`; with `summary`, the run's summary changes with it;
    /// with `barrier`, everything appended so far is durable when this
    /// returns.
    ///
    /// The summary's run, record count and head are the writer's to fill
    /// in (from `record`): the caller leaves them empty.
    pub fn append(
        &mut self,
        record: Record<'_>,
        summary: Option<SummaryUpdate>,
        barrier: bool,
    ) -> Result<()> {
        match &mut self.backend {
            WriterBackend::Files { dir, pending } => {
                journal_files::append(dir, pending, record, summary, barrier)
            }
            WriterBackend::Postgres {
                tenant,
                pending,
                summary: held,
                since,
            } => {
                pending.push(record.to_stored());
                let summary = summary.map(|mut s| {
                    s.run_id.clone_from(&self.run_id);
                    s.events = record.seq + 1;
                    s.head = record.hash.to_string();
                    s
                });
                let ends = summary.as_ref().is_some_and(|s| s.ended_at.is_some());
                if let Some(s) = summary {
                    *held = Some(match held.take() {
                        Some(before) => before.then(s),
                        None => s,
                    });
                }
                let started = *since.get_or_insert_with(std::time::Instant::now);
                // One statement per barrier and one at the end (a short run
                // sends one), or once records have waited the files store's
                // window.
                if barrier || ends || started.elapsed() >= journal_files::WINDOW {
                    *since = None;
                    let records = std::mem::take(pending);
                    tenant.journal_append(&self.run_id, records, held.take())?;
                }
                Ok(())
            }
        }
    }

    /// Make everything appended durable (PostgreSQL: send what is buffered;
    /// files: written).
    pub fn flush(&mut self) -> Result<()> {
        match &mut self.backend {
            WriterBackend::Files { dir, .. } => {
                journal_files::flush_dir(dir);
                Ok(())
            }
            WriterBackend::Postgres {
                tenant,
                pending,
                summary,
                since,
            } => {
                if pending.is_empty() {
                    return Ok(());
                }
                *since = None;
                let records = std::mem::take(pending);
                tenant.journal_append(&self.run_id, records, summary.take())
            }
        }
    }
}

impl Drop for JournalWriter {
    /// Records still held (PostgreSQL) are sent: a run whose end was never
    /// recorded still leaves what it did. (The files store's writer has
    /// them already.)
    fn drop(&mut self) {
        if matches!(self.backend, WriterBackend::Postgres { .. }) {
            let _ = self.flush();
        }
    }
}

/// Each run's summary folded from the index's text, with the extents of
/// its records in the order written.
fn fold_index(text: &str) -> journal_files::Folded {
    let mut by_id = journal_files::Folded::new();
    journal_files::fold_into(&mut by_id, text.as_bytes());
    by_id
}

/// A record for the store's tests: record `seq` of a chain whose hashes
/// are made of the seq, with a small step event.
#[cfg(test)]
pub(in crate::state) fn test_record(seq: u64) -> StoredRecord {
    StoredRecord {
        seq,
        prev: format!("{seq:064x}"),
        hash: format!("{:064x}", seq + 1),
        event: format!("{{\"kind\":\"step\",\"n\":{seq}}}"),
    }
}

#[cfg(test)]
mod tests {
    use super::test_record as rec;
    use super::*;

    fn segs(dir: &std::path::Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir.join("journal"))
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.starts_with("seg-"))
            .collect();
        v.sort();
        v
    }

    /// The `seq` of each line of a run's journal `text`, each line checked
    /// to be `run`'s.
    fn seqs_of(text: &str, run: &str) -> Vec<u64> {
        text.lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                assert_eq!(v["run"], run, "{l}");
                v["seq"].as_u64().unwrap()
            })
            .collect()
    }

    #[test]
    fn runs_share_segments_and_each_reads_back_its_own_records_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::new(dir.path());
        let mut a = store.journal_writer("ra").unwrap();
        let mut b = store.journal_writer("rb").unwrap();
        for i in 0..3 {
            a.append(rec(i).as_record(), None, false).unwrap();
            b.append(rec(i).as_record(), None, i == 1).unwrap();
        }
        let ta = store.journal_text("ra").unwrap().unwrap();
        let tb = store.journal_text("rb").unwrap().unwrap();
        for (t, run) in [(&ta, "ra"), (&tb, "rb")] {
            assert_eq!(seqs_of(t, run), [0, 1, 2]);
        }
        assert_eq!(segs(dir.path()), ["seg-00000001.log"]);
        assert!(store.journal_text("rc").unwrap().is_none());
        // A journal written before segments (a file per run) is still read.
        std::fs::write(
            dir.path().join("journal/rold.jsonl"),
            format!("{}\n", format_line("rold", &rec(0))),
        )
        .unwrap();
        assert_eq!(
            store.journal_text("rold").unwrap().unwrap().lines().count(),
            1
        );
    }

    #[test]
    fn records_reach_the_segment_within_the_window_while_their_run_goes_on() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::new(dir.path());
        let mut w = store.journal_writer("rw").unwrap();
        w.append(rec(0).as_record(), None, false).unwrap();
        w.append(rec(1).as_record(), None, false).unwrap();
        // Neither a barrier nor a read (which flushes): the writer takes
        // the run's buffer at the end of its window on its own.
        let seg = dir.path().join("journal/seg-00000001.log");
        let lines = || {
            std::fs::read_to_string(&seg)
                .unwrap_or_default()
                .lines()
                .count()
        };
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while lines() < 2 && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert_eq!(lines(), 2);
        // The run goes on: its next records follow in order.
        w.append(rec(2).as_record(), None, false).unwrap();
        drop(w);
        let text = store.journal_text("rw").unwrap().unwrap();
        assert_eq!(seqs_of(&text, "rw"), [0, 1, 2]);
    }

    #[test]
    fn a_torn_segment_tail_is_outside_every_run_and_the_next_write_starts_a_line() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::new(dir.path());
        let mut w = store.journal_writer("r1").unwrap();
        w.append(rec(0).as_record(), None, false).unwrap();
        w.append(rec(1).as_record(), None, true).unwrap();
        // A power cut left half a line of another run at the end.
        let seg = dir.path().join("journal/seg-00000001.log");
        let mut f = std::fs::OpenOptions::new().append(true).open(&seg).unwrap();
        std::io::Write::write_all(&mut f, b"{\"run\":\"r1\",\"seq\":2,\"pr").unwrap();
        w.append(rec(2).as_record(), None, true).unwrap();
        let text = store.journal_text("r1").unwrap().unwrap();
        assert_eq!(text.lines().count(), 3, "{text}");
        assert!(text
            .lines()
            .all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok()));
        // An index that names more than a segment holds (its tail lost):
        // the whole lines are read, the cut one is not.
        let len = std::fs::metadata(&seg).unwrap().len();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&seg)
            .unwrap()
            .set_len(len - 10)
            .unwrap();
        let text = store.journal_text("r1").unwrap().unwrap();
        assert_eq!(text.lines().count(), 2, "{text}");
    }

    #[test]
    fn a_run_does_not_start_when_its_journal_cannot_be_written() {
        let dir = tempfile::tempdir().unwrap();
        // A file where the journal's directory should be.
        std::fs::write(dir.path().join("journal"), "not a directory").unwrap();
        let store = StateStore::new(dir.path());
        let mut w = store.journal_writer("r1").unwrap();
        let e = w.append(rec(0).as_record(), None, false).unwrap_err();
        assert!(e.to_string().contains("journal"), "{e}");
        // Once the store is writable again, runs start.
        std::fs::remove_file(dir.path().join("journal")).unwrap();
        w.append(rec(0).as_record(), None, false).unwrap();
        w.append(rec(1).as_record(), None, true).unwrap();
        assert_eq!(
            store.journal_text("r1").unwrap().unwrap().lines().count(),
            2
        );
    }

    #[test]
    fn prune_removes_a_segment_only_when_no_kept_run_uses_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::new(dir.path());
        let summary = |id: &str, status: &str, at: &str| SummaryUpdate {
            run_id: id.into(),
            started: Some(("w".into(), "cli".into(), at.into())),
            status: Some(status.into()),
            ..Default::default()
        };
        let mut old = store.journal_writer("old").unwrap();
        old.append(
            rec(0).as_record(),
            Some(summary("old", "ok", "2020-01-01T00:00:00Z")),
            true,
        )
        .unwrap();
        let mut paused = store.journal_writer("paused").unwrap();
        paused
            .append(
                rec(0).as_record(),
                Some(summary("paused", "needs_approval", "2020-01-01T00:00:01Z")),
                true,
            )
            .unwrap();
        assert_eq!(
            store.journal_prune("2021-01-01T00:00:00Z", 100).unwrap(),
            ["old"]
        );
        // The paused run still uses the segment: kept, and still read.
        assert_eq!(segs(dir.path()), ["seg-00000001.log"]);
        assert!(store.journal_text("old").unwrap().is_none());
        assert!(store.journal_text("paused").unwrap().is_some());
        // Once no kept run uses it, it goes; the writer starts a new one.
        paused
            .append(
                rec(1).as_record(),
                Some(SummaryUpdate {
                    run_id: "paused".into(),
                    status: Some("ok".into()),
                    ..Default::default()
                }),
                true,
            )
            .unwrap();
        assert_eq!(
            store.journal_prune("2021-01-01T00:00:00Z", 100).unwrap(),
            ["paused"]
        );
        assert!(segs(dir.path()).is_empty());
        let mut next = store.journal_writer("next").unwrap();
        next.append(rec(0).as_record(), None, true).unwrap();
        assert_eq!(segs(dir.path()), ["seg-00000001.log"]);
        assert_eq!(
            store.journal_text("next").unwrap().unwrap().lines().count(),
            1
        );
        assert_eq!(
            store.journal_summary("old").unwrap().unwrap().status,
            "pruned"
        );
    }

    #[test]
    fn summaries_fold_list_newest_first_and_prune_to_tombstones() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::new(dir.path());
        for (i, status) in ["ok", "needs_approval", "error", "ok"].iter().enumerate() {
            let id = format!("run{i}");
            let mut w = store.journal_writer(&id).unwrap();
            let start = SummaryUpdate {
                run_id: id.clone(),
                events: 1,
                head: "h0".into(),
                started: Some((
                    format!("w{i}"),
                    "cli".into(),
                    format!("2026-12-0{}T00:00:00.000Z", i + 1),
                )),
                status: Some("running".into()),
                ..Default::default()
            };
            w.append(rec(0).as_record(), Some(start), false).unwrap();
            let end = SummaryUpdate {
                run_id: id.clone(),
                events: 2,
                head: "h1".into(),
                status: Some(status.to_string()),
                gate: (*status == "needs_approval").then(|| "abcd1234".into()),
                ..Default::default()
            };
            w.append(rec(1).as_record(), Some(end), false).unwrap();
        }
        let all = store.journal_runs(&RunFilter::default()).unwrap();
        let ids: Vec<_> = all.iter().map(|s| s.run_id.as_str()).collect();
        assert_eq!(ids, ["run3", "run2", "run1", "run0"]);
        assert_eq!(all[2].gate.as_deref(), Some("abcd1234"));
        assert_eq!(all[0].head, rec(1).hash);
        let paused = RunFilter {
            status: Some("needs_approval".into()),
            ..Default::default()
        };
        assert_eq!(store.journal_runs(&paused).unwrap().len(), 1);
        let page = RunFilter {
            before: Some((all[1].started_at.clone(), all[1].run_id.clone())),
            limit: Some(1),
            ..Default::default()
        };
        assert_eq!(store.journal_runs(&page).unwrap()[0].run_id, "run1");

        // Everything ended before Dec 3, and all but the newest: run0 and
        // run2 (run1 is paused: kept).
        let pruned = store.journal_prune("2026-12-03T00:00:00Z", 1).unwrap();
        assert_eq!(pruned.len(), 2, "{pruned:?}");
        assert!(store.journal_text("run0").unwrap().is_none());
        assert!(store.journal_text("run1").unwrap().is_some());
        let s = store.journal_summary("run0").unwrap().unwrap();
        assert_eq!(
            (s.status.as_str(), s.head.as_str()),
            ("pruned", rec(1).hash.as_str())
        );
    }

    #[test]
    fn run_ids_are_names_not_paths() {
        let store = StateStore::new("/nonexistent");
        for bad in ["", "../x", "a/b", &"x".repeat(65)] {
            assert!(store.journal_writer(bad).is_err(), "{bad:?}");
        }
    }

    /// The line's `seq` in plain decimal, at both ends of its range, and
    /// its length as the writer computes it.
    #[test]
    fn a_record_line_writes_its_seq_in_decimal() {
        for (seq, text) in [(0, "0"), (10, "10"), (u64::MAX, "18446744073709551615")] {
            let r = StoredRecord {
                seq,
                prev: "p".into(),
                hash: "h".into(),
                event: "{}".into(),
            };
            let line = format_line("r", &r);
            assert_eq!(
                line,
                format!(r#"{{"run":"r","seq":{text},"prev":"p","hash":"h","event":{{}}}}"#)
            );
        }
    }
}
