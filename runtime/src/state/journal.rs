//! Where run journals are kept (see `crate::journal` for what they hold):
//! the store only appends records, reads them back, and keeps one summary
//! per run for listing. It knows nothing of events.
//!
//! Files: `<dir>/journal/<run id>.jsonl`, one record per line, appended
//! with one `write(2)` each by the run's thread and fsynced at the run's
//! barriers (a brokered call about to leave, a gate; everything written
//! before a barrier is committed with it); a process killed mid-write leaves
//! at most a torn last line, which readers skip and a writer continuing the
//! run cuts off first. Summaries are lines of `<dir>/journal/index.log`
//! (appended under a shared `flock`, compacted under an exclusive one by a
//! prune), folded by run id when listed.
//!
//! PostgreSQL: rows of `lobster_journal (run_id, seq, prev, hash, event)`,
//! unique `(run_id, seq)`, and `lobster_journal_runs` (one summary per run,
//! indexed by tenant and start time); a writer buffers records and sends
//! them with the summary in one statement at each barrier (run start, a
//! brokered call's intent, a gate, the end).

use super::{pg, StateStore};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

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

/// The line a record is stored and exported as (no newline).
pub fn format_line(run: &str, r: &StoredRecord) -> String {
    let mut line = String::with_capacity(r.event.len() + run.len() + 180);
    line.push_str("{\"run\":");
    line.push_str(&serde_json::to_string(run).unwrap_or_default());
    line.push_str(",\"seq\":");
    line.push_str(&r.seq.to_string());
    line.push_str(",\"prev\":\"");
    line.push_str(&r.prev);
    line.push_str("\",\"hash\":\"");
    line.push_str(&r.hash);
    line.push_str("\",\"event\":");
    line.push_str(&r.event);
    line.push('}');
    line
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
    /// `running`, `needs_approval`, `needs_input`, `ok`, `error`,
    /// `cancelled`, `interrupted`, `pruned`.
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
}

impl SummaryUpdate {
    fn apply(&self, s: &mut RunSummary) {
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

#[derive(Debug)]
enum WriterBackend {
    Files {
        dir: PathBuf,
        file: File,
    },
    Postgres {
        tenant: pg::Tenant,
        pending: Vec<StoredRecord>,
    },
}

impl StateStore {
    fn journal_dir(&self) -> PathBuf {
        self.dir().join("journal")
    }

    /// A writer appending to run `run_id`'s journal (made if new). Files: a
    /// torn last line a killed writer left is cut off first.
    pub fn journal_writer(&self, run_id: &str) -> Result<JournalWriter> {
        check_run_id(run_id)?;
        let backend = match self.pg()? {
            Some(t) => WriterBackend::Postgres {
                tenant: t.clone(),
                pending: Vec::new(),
            },
            None => {
                let dir = self.journal_dir();
                make_dir(&dir)?;
                let path = dir.join(format!("{run_id}.jsonl"));
                let mut file = OpenOptions::new()
                    .read(true)
                    .append(true)
                    .create(true)
                    .mode(0o600)
                    .open(&path)
                    .map_err(|e| io_error("cannot open journal", &path, e))?;
                cut_torn_tail(&mut file)
                    .map_err(|e| io_error("cannot repair journal", &path, e))?;
                WriterBackend::Files { dir, file }
            }
        };
        Ok(JournalWriter {
            run_id: run_id.to_string(),
            backend,
        })
    }

    /// Run `run_id`'s journal as stored (lines; files: a torn last line
    /// included as it is), or `None` when there is none.
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
        let path = self.journal_dir().join(format!("{run_id}.jsonl"));
        match fs::read_to_string(&path) {
            Ok(text) => Ok(Some(text)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_error("cannot read journal", &path, e)),
        }
    }

    /// The runs' summaries `filter` keeps, newest first.
    pub fn journal_runs(&self, filter: &RunFilter) -> Result<Vec<RunSummary>> {
        if let Some(t) = self.pg()? {
            return t.journal_runs(filter);
        }
        let path = self.journal_dir().join("index.log");
        let text = match fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_error("cannot read the run index", &path, e)),
        };
        let mut runs = fold_index(&text);
        runs.retain(|s| filter.keeps(s));
        runs.sort_by(|a, b| (&b.started_at, &b.run_id).cmp(&(&a.started_at, &a.run_id)));
        if let Some(n) = filter.limit {
            runs.truncate(n);
        }
        Ok(runs)
    }

    /// One run's summary.
    pub fn journal_summary(&self, run_id: &str) -> Result<Option<RunSummary>> {
        check_run_id(run_id)?;
        if let Some(t) = self.pg()? {
            return t.journal_summary(run_id);
        }
        Ok(self
            .journal_runs(&RunFilter::default())?
            .into_iter()
            .find(|s| s.run_id == run_id))
    }

    /// Remove the journals of runs that ended before `cutoff` (RFC 3339) and
    /// of all but the newest `keep` runs that ended; each leaves its summary
    /// as a tombstone (status `pruned`, its head hash kept). Runs still
    /// going or paused are kept. Returns the pruned runs' ids.
    pub fn journal_prune(&self, cutoff: &str, keep: usize) -> Result<Vec<String>> {
        if let Some(t) = self.pg()? {
            return t.journal_prune(cutoff, keep);
        }
        let dir = self.journal_dir();
        let path = dir.join("index.log");
        let mut index = match OpenOptions::new().read(true).write(true).open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_error("cannot open the run index", &path, e)),
        };
        flock(&index, libc::LOCK_EX)
            .map_err(|e| io_error("cannot lock the run index", &path, e))?;
        let mut text = String::new();
        index
            .read_to_string(&mut text)
            .map_err(|e| io_error("cannot read the run index", &path, e))?;
        let mut runs = fold_index(&text);
        runs.sort_by(|a, b| (&b.started_at, &b.run_id).cmp(&(&a.started_at, &a.run_id)));
        let doomed = choose_pruned(&runs, cutoff, keep);
        for s in runs.iter_mut().filter(|s| doomed.contains(&s.run_id)) {
            let file = dir.join(format!("{}.jsonl", s.run_id));
            match fs::remove_file(&file) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io_error("cannot remove journal", &file, e)),
            }
            s.status = "pruned".into();
            s.gate = None;
        }
        // The compacted index replaces the old one while the lock is held:
        // appenders check after locking that they still hold the live file.
        let mut out = String::new();
        for s in runs.iter().rev() {
            let update = SummaryUpdate {
                run_id: s.run_id.clone(),
                events: s.events,
                head: s.head.clone(),
                started: Some((s.name.clone(), s.door.clone(), s.started_at.clone())),
                status: Some(s.status.clone()),
                gate: s.gate.clone(),
                clear_gate: false,
                ended_at: s.ended_at.clone(),
            };
            out.push_str(&serde_json::to_string(&update).unwrap_or_default());
            out.push('\n');
        }
        super::write_atomic(&path, out.as_bytes())
            .map_err(|e| io_error("cannot rewrite the run index", &path, e))?;
        drop(index);
        Ok(doomed)
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

impl JournalWriter {
    /// The run this writer appends to.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Append `record`; with `summary`, the run's summary changes with it;
    /// with `barrier`, everything appended so far is durable when this
    /// returns.
    pub fn append(
        &mut self,
        record: StoredRecord,
        summary: Option<&SummaryUpdate>,
        barrier: bool,
    ) -> Result<()> {
        match &mut self.backend {
            WriterBackend::Files { dir, file } => {
                let mut line = format_line(&self.run_id, &record);
                line.push('\n');
                file.write_all(line.as_bytes())
                    .map_err(|e| io_error("cannot append to journal", dir, e))?;
                if barrier {
                    file.sync_data()
                        .map_err(|e| io_error("cannot sync journal", dir, e))?;
                }
                if let Some(s) = summary {
                    append_index(dir, s)?;
                }
                Ok(())
            }
            WriterBackend::Postgres { tenant, pending } => {
                pending.push(record);
                if summary.is_some() || barrier {
                    let records = std::mem::take(pending);
                    tenant.journal_append(&self.run_id, records, summary.cloned())?;
                }
                Ok(())
            }
        }
    }

    /// Make everything appended durable (PostgreSQL: send what is buffered).
    pub fn flush(&mut self) -> Result<()> {
        match &mut self.backend {
            WriterBackend::Files { .. } => Ok(()),
            WriterBackend::Postgres { tenant, pending } => {
                if pending.is_empty() {
                    return Ok(());
                }
                let records = std::mem::take(pending);
                tenant.journal_append(&self.run_id, records, None)
            }
        }
    }
}

fn fold_index(text: &str) -> Vec<RunSummary> {
    let mut by_id: std::collections::HashMap<String, RunSummary> = Default::default();
    // A torn last line (a killed appender) does not parse and is skipped.
    for line in text.lines() {
        let Ok(u) = serde_json::from_str::<SummaryUpdate>(line) else {
            continue;
        };
        let s = by_id.entry(u.run_id.clone()).or_default();
        u.apply(s);
    }
    by_id
        .into_values()
        .filter(|s| !s.started_at.is_empty())
        .collect()
}

fn append_index(dir: &Path, s: &SummaryUpdate) -> Result<()> {
    let path = dir.join("index.log");
    let mut line = serde_json::to_string(s).unwrap_or_default();
    line.push('\n');
    for _ in 0..8 {
        let mut f = OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| io_error("cannot open the run index", &path, e))?;
        flock(&f, libc::LOCK_SH).map_err(|e| io_error("cannot lock the run index", &path, e))?;
        // A prune may have replaced the file between open and lock.
        let live = fs::metadata(&path).map(|m| m.ino()).ok();
        if live != f.metadata().map(|m| m.ino()).ok() {
            continue;
        }
        return f
            .write_all(line.as_bytes())
            .map_err(|e| io_error("cannot append to the run index", &path, e));
    }
    Err(Error::runtime(format!(
        "cannot append to the run index {}: it keeps being replaced",
        path.display()
    )))
}

fn flock(f: &File, op: libc::c_int) -> std::io::Result<()> {
    loop {
        // SAFETY: flock on a file descriptor we own; no memory is passed.
        if unsafe { libc::flock(f.as_raw_fd(), op) } == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Cut a last line that has no newline (a writer killed mid-write).
fn cut_torn_tail(file: &mut File) -> std::io::Result<()> {
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(());
    }
    let mut last = [0u8; 1];
    file.seek(SeekFrom::Start(len - 1))?;
    file.read_exact(&mut last)?;
    if last[0] == b'\n' {
        return Ok(());
    }
    // Find the last newline, reading backwards in blocks.
    let mut end = len;
    let mut buf = vec![0u8; 64 * 1024];
    while end > 0 {
        let start = end.saturating_sub(buf.len() as u64);
        let n = (end - start) as usize;
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut buf[..n])?;
        if let Some(i) = buf[..n].iter().rposition(|&b| b == b'\n') {
            return file.set_len(start + i as u64 + 1);
        }
        end = start;
    }
    file.set_len(0)
}

fn make_dir(dir: &Path) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| io_error("cannot create journal directory", dir, e))
}

fn io_error(what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::runtime(format!("{what} {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(seq: u64) -> StoredRecord {
        StoredRecord {
            seq,
            prev: format!("{:064x}", seq),
            hash: format!("{:064x}", seq + 1),
            event: format!("{{\"kind\":\"step\",\"n\":{seq}}}"),
        }
    }

    #[test]
    fn a_torn_tail_is_cut_before_appending() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::new(dir.path());
        let mut w = store.journal_writer("r1").unwrap();
        w.append(rec(0), None, false).unwrap();
        w.append(rec(1), None, true).unwrap();
        drop(w);
        let path = dir.path().join("journal/r1.jsonl");
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"run\":\"r1\",\"seq\":2,\"pr").unwrap();
        let mut w = store.journal_writer("r1").unwrap();
        w.append(rec(2), None, false).unwrap();
        let text = store.journal_text("r1").unwrap().unwrap();
        assert_eq!(text.lines().count(), 3);
        assert!(text
            .lines()
            .all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok()));
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
            w.append(rec(0), Some(&start), false).unwrap();
            let end = SummaryUpdate {
                run_id: id.clone(),
                events: 2,
                head: "h1".into(),
                status: Some(status.to_string()),
                gate: (*status == "needs_approval").then(|| "abcd1234".into()),
                ..Default::default()
            };
            w.append(rec(1), Some(&end), false).unwrap();
        }
        let all = store.journal_runs(&RunFilter::default()).unwrap();
        let ids: Vec<_> = all.iter().map(|s| s.run_id.as_str()).collect();
        assert_eq!(ids, ["run3", "run2", "run1", "run0"]);
        assert_eq!(all[2].gate.as_deref(), Some("abcd1234"));
        assert_eq!(all[0].head, "h1");
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
        assert_eq!((s.status.as_str(), s.head.as_str()), ("pruned", "h1"));
    }

    #[test]
    fn run_ids_are_names_not_paths() {
        let store = StateStore::new("/nonexistent");
        for bad in ["", "../x", "a/b", &"x".repeat(65)] {
            assert!(store.journal_writer(bad).is_err(), "{bad:?}");
        }
    }
}
