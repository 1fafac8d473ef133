//! An append-only log of settled run records, for the files store.
//!
//! `lobster serve` keeps a record of every run. Kept as one atomically
//! written file each, a run that settles within its request's `wait` costs
//! an inode, a temp file, a rename and two fsyncs — most of the work of a
//! short run. Those records are written once and never changed (the client
//! already holds the answer), so they go here instead: lines appended to a
//! segment file by one writer thread, which fsyncs once for everything
//! that arrived while the previous batch was being written (group commit).
//!
//! Lookup by run id: the last [`RECENT`] records are kept in memory (a run
//! is usually asked about right after it settles); older ones are found by
//! reading the segments that can hold them. A run id begins with the time
//! it was made ([`time_prefixed_id`]) and its record is appended within
//! `horizon` of that time, so only the segments written in that window are
//! read: a lookup costs at most the log written in one `horizon`, never the
//! whole history, and an unknown id costs nothing outside it.
//!
//! On disk: `<dir>/runs-<first second, 8 hex>-<sequence, 6 digits>.log`,
//! each line `<id>\t<record JSON>\n`, files 0600. A process killed while
//! writing leaves at most a torn last line, which every reader skips; a
//! new process never appends to an old segment, it starts the next one.

use super::RunRecord;
use crate::error::{Error, Result};
use std::collections::{HashMap, VecDeque};
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Records kept in memory for lookups right after a run settles.
pub const RECENT: usize = 4096;

/// A segment is closed and the next one started past this size.
pub const SEGMENT_BYTES: u64 = 8 << 20;

/// Records written per batch at most (one write and one fsync).
const BATCH: usize = 1024;

/// Seconds since the epoch.
fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// A 32-hex id whose first 8 hex digits are the current time in seconds
/// (the rest, 96 bits, random): the log finds a record by when its id was
/// made.
pub fn time_prefixed_id() -> String {
    let mut bytes = [0u8; 16];
    bytes[..4].copy_from_slice(&(now_secs() as u32).to_be_bytes());
    getrandom::fill(&mut bytes[4..]).expect("the OS random source is available");
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut id = String::with_capacity(32);
    for b in bytes {
        id.push(HEX[usize::from(b >> 4)] as char);
        id.push(HEX[usize::from(b & 15)] as char);
    }
    id
}

/// The time (seconds) an id of [`time_prefixed_id`] was made.
fn id_secs(id: &str) -> Option<u64> {
    u32::from_str_radix(id.get(..8)?, 16).ok().map(u64::from)
}

/// What the writer is sent.
enum Msg {
    Append(String),
    /// Reply once everything sent before is on disk.
    Flush(Sender<()>),
}

/// The in-memory tail: the last [`RECENT`] records by id, oldest first.
#[derive(Default)]
struct Recent {
    order: VecDeque<String>,
    by_id: HashMap<String, RunRecord>,
}

/// An append-only, group-committed log of records by id (see the module
/// docs). Cheap to share behind an `Arc`; dropping it writes what is queued
/// and stops the writer.
pub struct RunLog {
    dir: PathBuf,
    horizon: Duration,
    tx: Mutex<Option<Sender<Msg>>>,
    writer: Mutex<Option<JoinHandle<()>>>,
    recent: Mutex<Recent>,
    /// Why the writer failed, once it has (each append and flush after
    /// that reports it).
    failed: Arc<Mutex<Option<String>>>,
}

impl RunLog {
    /// Open (create) the log in `dir`. A record is looked up among the
    /// segments written within `horizon` after its id was made.
    /// The directory is made with the first segment.
    pub fn open(dir: &Path, horizon: Duration) -> Result<RunLog> {
        let next_seq = segments(dir)?.last().map(|s| s.seq + 1).unwrap_or(1);
        let (tx, rx) = mpsc::channel();
        let failed: Arc<Mutex<Option<String>>> = Arc::default();
        let writer = Writer {
            dir: dir.to_path_buf(),
            seq: next_seq,
            file: None,
            written: 0,
            failed: failed.clone(),
        };
        let handle = std::thread::Builder::new()
            .name("lobster-runlog".into())
            .spawn(move || writer.run(rx))
            .map_err(|e| Error::runtime(format!("cannot start the run log's writer: {e}")))?;
        Ok(RunLog {
            dir: dir.to_path_buf(),
            horizon,
            tx: Mutex::new(Some(tx)),
            writer: Mutex::new(Some(handle)),
            recent: Mutex::default(),
            failed,
        })
    }

    /// The directory of the log.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Append `record` under `id` (an id of [`time_prefixed_id`]). Returns
    /// at once: the record is readable through [`RunLog::get`] now and on
    /// disk after the writer's next batch ([`RunLog::flush`] waits for it).
    pub fn append(&self, id: &str, record: &RunRecord) -> Result<()> {
        self.check()?;
        let json = serde_json::to_string(record)
            .map_err(|e| Error::runtime(format!("run record {id} cannot be written: {e}")))?;
        let line = format!("{id}\t{json}\n");
        {
            let mut recent = self.recent.lock().unwrap_or_else(|p| p.into_inner());
            if recent
                .by_id
                .insert(id.to_string(), record.clone())
                .is_none()
            {
                recent.order.push_back(id.to_string());
            }
            while recent.order.len() > RECENT {
                if let Some(old) = recent.order.pop_front() {
                    recent.by_id.remove(&old);
                }
            }
        }
        let tx = self.tx.lock().unwrap_or_else(|p| p.into_inner());
        match tx.as_ref() {
            Some(tx) if tx.send(Msg::Append(line)).is_ok() => Ok(()),
            _ => Err(Error::runtime("the run log's writer has stopped")),
        }
    }

    /// Wait until every record appended so far is on disk.
    pub fn flush(&self) -> Result<()> {
        let (done_tx, done_rx) = mpsc::channel();
        {
            let tx = self.tx.lock().unwrap_or_else(|p| p.into_inner());
            let Some(tx) = tx.as_ref() else {
                return self.check();
            };
            if tx.send(Msg::Flush(done_tx)).is_err() {
                return self.check();
            }
        }
        let _ = done_rx.recv();
        self.check()
    }

    /// The record of `id`, if the log has it.
    pub fn get(&self, id: &str) -> Result<Option<RunRecord>> {
        if let Some(v) = self
            .recent
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .by_id
            .get(id)
        {
            return Ok(Some(v.clone()));
        }
        let Some(made) = id_secs(id) else {
            return Ok(None);
        };
        let until = made + self.horizon.as_secs() + 1;
        let all = segments(&self.dir)?;
        // Segment i holds what was appended from its first second until the
        // next segment's: read those whose span meets [made, until].
        for (i, seg) in all.iter().enumerate().rev() {
            let ends = all.get(i + 1).map(|n| n.first_secs).unwrap_or(u64::MAX);
            if seg.first_secs > until || ends < made {
                continue;
            }
            if let Some(v) = find_in(&seg.path, id)? {
                return Ok(Some(v));
            }
        }
        Ok(None)
    }

    /// The writer's failure, if it failed.
    fn check(&self) -> Result<()> {
        match &*self.failed.lock().unwrap_or_else(|p| p.into_inner()) {
            Some(why) => Err(Error::runtime(format!(
                "the run log in {} cannot be written: {why}",
                self.dir.display()
            ))),
            None => Ok(()),
        }
    }
}

impl Drop for RunLog {
    fn drop(&mut self) {
        // Closing the channel lets the writer drain what is queued and stop.
        self.tx.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(h) = self.writer.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = h.join();
        }
    }
}

/// A segment file found in the log's directory.
struct Segment {
    path: PathBuf,
    first_secs: u64,
    seq: u64,
}

/// The segments in `dir`, oldest first.
fn segments(dir: &Path) -> Result<Vec<Segment>> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(Error::runtime(format!(
                "cannot read run log {}: {e}",
                dir.display()
            )))
        }
    };
    let mut out: Vec<Segment> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let rest = name.strip_prefix("runs-")?.strip_suffix(".log")?;
            let (secs, seq) = rest.split_once('-')?;
            Some(Segment {
                path: e.path(),
                first_secs: u64::from_str_radix(secs, 16).ok()?,
                seq: seq.parse().ok()?,
            })
        })
        .collect();
    out.sort_by_key(|s| s.seq);
    Ok(out)
}

/// The record of `id` in the segment at `path` (a torn or foreign line is
/// skipped; the last complete record of `id` wins).
fn find_in(path: &Path, id: &str) -> Result<Option<RunRecord>> {
    let text = match fs::read(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(Error::runtime(format!(
                "cannot read run log {}: {e}",
                path.display()
            )))
        }
    };
    let mut found = None;
    for line in text.split(|b| *b == b'\n') {
        let Some(rest) = line
            .strip_prefix(id.as_bytes())
            .and_then(|r| r.strip_prefix(b"\t"))
        else {
            continue;
        };
        if let Ok(v) = serde_json::from_slice::<RunRecord>(rest) {
            found = Some(v);
        }
    }
    Ok(found)
}

/// The writer thread's state.
struct Writer {
    dir: PathBuf,
    seq: u64,
    file: Option<File>,
    written: u64,
    failed: Arc<Mutex<Option<String>>>,
}

impl Writer {
    fn run(mut self, rx: Receiver<Msg>) {
        let mut buf = Vec::with_capacity(64 << 10);
        let mut flushes = Vec::new();
        while let Ok(first) = rx.recv() {
            // Everything that queued up meanwhile goes in the same batch.
            let mut next = Some(first);
            let mut n = 0;
            while let Some(msg) = next.take() {
                match msg {
                    Msg::Append(line) => {
                        buf.extend_from_slice(line.as_bytes());
                        n += 1;
                    }
                    Msg::Flush(done) => flushes.push(done),
                }
                if n < BATCH {
                    next = rx.try_recv().ok();
                }
            }
            if !buf.is_empty() {
                if let Err(e) = self.write(&buf) {
                    let mut failed = self.failed.lock().unwrap_or_else(|p| p.into_inner());
                    failed.get_or_insert(e);
                }
                buf.clear();
            }
            for done in flushes.drain(..) {
                let _ = done.send(());
            }
        }
    }

    /// Append `bytes` to the current segment (started or rotated as
    /// needed) and sync it.
    fn write(&mut self, bytes: &[u8]) -> std::result::Result<(), String> {
        if self.file.is_none() || self.written >= SEGMENT_BYTES {
            let path = self.dir.join(format!(
                "runs-{:08x}-{:06}.log",
                now_secs() as u32,
                self.seq
            ));
            self.seq += 1;
            fs::create_dir_all(&self.dir)
                .map_err(|e| format!("cannot create {}: {e}", self.dir.display()))?;
            let file = OpenOptions::new()
                .append(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
                .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
            // The new name must survive a crash too.
            super::sync_dir(&self.dir).map_err(|e| format!("{e}"))?;
            self.file = Some(file);
            self.written = 0;
        }
        let file = self.file.as_mut().expect("a segment is open");
        file.write_all(bytes)
            .and_then(|_| file.sync_data())
            .map_err(|e| format!("cannot append to the run log: {e}"))?;
        self.written += bytes.len() as u64;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::RunStatus;

    /// A record of run `id` whose `reason` says `n`.
    fn rec(id: &str, n: impl ToString) -> RunRecord {
        let mut r = RunRecord::new(id, RunStatus::Ok);
        r.reason = Some(n.to_string());
        r
    }

    fn n(log: &RunLog, id: &str) -> Option<String> {
        log.get(id).unwrap().map(|r| r.reason.unwrap())
    }

    fn log_in(dir: &Path) -> RunLog {
        RunLog::open(dir, Duration::from_secs(60)).unwrap()
    }

    /// An id is 32 lowercase hex digits: the second it was made, then 96
    /// random bits (ids made together differ).
    #[test]
    fn an_id_is_its_second_then_random_bits_in_hex() {
        let before = now_secs() as u32;
        let (a, b) = (time_prefixed_id(), time_prefixed_id());
        let after = now_secs() as u32;
        for id in [&a, &b] {
            assert_eq!(id.len(), 32, "{id}");
            assert!(
                id.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')),
                "{id}"
            );
            let made = id_secs(id).unwrap() as u32;
            assert!(before <= made && made <= after, "{id}");
        }
        assert_ne!(a[8..], b[8..]);
    }

    #[test]
    fn a_record_is_found_in_memory_then_on_disk_after_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let id = time_prefixed_id();
        {
            let log = log_in(dir.path());
            log.append(&id, &RunRecord::new(&id, RunStatus::Ok))
                .unwrap();
            assert_eq!(log.get(&id).unwrap().unwrap().status, RunStatus::Ok);
        }
        let log = log_in(dir.path());
        assert_eq!(log.get(&id).unwrap().unwrap().run_id, id);
        assert_eq!(log.get(&time_prefixed_id()).unwrap(), None);
        assert_eq!(log.get("not-an-id").unwrap(), None);
    }

    #[test]
    fn a_torn_last_line_is_skipped_and_a_new_process_starts_a_new_segment() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (time_prefixed_id(), time_prefixed_id());
        {
            let log = log_in(dir.path());
            log.append(&a, &rec(&a, 1)).unwrap();
            log.flush().unwrap();
        }
        let seg = segments(dir.path()).unwrap().pop().unwrap().path;
        let mut f = OpenOptions::new().append(true).open(&seg).unwrap();
        f.write_all(format!("{b}\t{{\"runId\": \"{b}\", \"cut").as_bytes())
            .unwrap();
        let log = log_in(dir.path());
        assert_eq!(n(&log, &a).as_deref(), Some("1"));
        assert_eq!(log.get(&b).unwrap(), None, "a torn line is no record");
        log.append(&b, &rec(&b, 3)).unwrap();
        log.flush().unwrap();
        assert_eq!(segments(dir.path()).unwrap().len(), 2);
        drop(log);
        assert_eq!(n(&log_in(dir.path()), &b).as_deref(), Some("3"));
    }

    #[test]
    fn the_memory_tail_is_bounded_and_older_records_come_from_disk() {
        let dir = tempfile::tempdir().unwrap();
        let log = log_in(dir.path());
        let ids: Vec<String> = (0..RECENT + 10).map(|_| time_prefixed_id()).collect();
        for (i, id) in ids.iter().enumerate() {
            log.append(id, &rec(id, i)).unwrap();
        }
        log.flush().unwrap();
        assert_eq!(log.recent.lock().unwrap().by_id.len(), RECENT);
        assert!(!log.recent.lock().unwrap().by_id.contains_key(&ids[0]));
        assert_eq!(n(&log, &ids[0]).as_deref(), Some("0"));
        assert_eq!(n(&log, &ids[RECENT + 9]), Some((RECENT + 9).to_string()));
    }

    #[test]
    fn an_id_made_outside_every_segments_window_reads_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let log = log_in(dir.path());
        // Made (by its prefix) a day before anything was logged.
        let old = format!("{:08x}{}", now_secs() - 86_400, "0".repeat(24));
        log.append(&old, &rec(&old, 1)).unwrap();
        log.flush().unwrap();
        let fresh = log_in(dir.path());
        assert_eq!(fresh.get(&old).unwrap(), None);
    }

    #[test]
    fn segments_rotate_past_their_size() {
        let dir = tempfile::tempdir().unwrap();
        let log = log_in(dir.path());
        let big = "x".repeat(1 << 20);
        let mut ids = Vec::new();
        for _ in 0..10 {
            let id = time_prefixed_id();
            log.append(&id, &rec(&id, &big)).unwrap();
            log.flush().unwrap();
            ids.push(id);
        }
        assert!(segments(dir.path()).unwrap().len() >= 2);
        let fresh = log_in(dir.path());
        for id in &ids {
            assert!(fresh.get(id).unwrap().is_some(), "{id}");
        }
    }

    #[test]
    fn a_log_that_cannot_be_written_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let log = log_in(dir.path());
        // The directory turns into a file: no segment can be created, for
        // root too.
        fs::remove_dir_all(dir.path()).unwrap();
        fs::write(dir.path(), b"").unwrap();
        let id = time_prefixed_id();
        log.append(&id, &rec(&id, 0)).unwrap();
        let err = log.flush().unwrap_err().to_string();
        assert!(err.contains("cannot be written"), "{err}");
        assert!(log.append(&id, &rec(&id, 1)).is_err());
        fs::remove_file(dir.path()).unwrap();
    }

    #[test]
    fn a_line_older_code_wrote_is_read_and_written_back_the_same() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/run-records/runlog/ok.json"
        ))
        .unwrap();
        let line = text.trim_end();
        let value: serde_json::Value = serde_json::from_str(line).unwrap();
        let id = value["runId"].as_str().unwrap().to_string();
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join(format!("runs-{}-000001.log", &id[..8]));
        fs::write(&old, format!("{id}\t{line}\n")).unwrap();
        let log = log_in(dir.path());
        let rec = log.get(&id).unwrap().expect("found by its id's time");
        assert_eq!(rec.status, RunStatus::Ok);
        log.append(&id, &rec).unwrap();
        log.flush().unwrap();
        let new = segments(dir.path()).unwrap().pop().unwrap().path;
        assert_ne!(new, old);
        assert_eq!(fs::read_to_string(new).unwrap(), format!("{id}\t{line}\n"));
    }
}
