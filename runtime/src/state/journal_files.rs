//! Run journals on the files store: shared, group-committed segments and
//! an index (see `state/journal.rs` for what is stored, `crate::journal`
//! for what it means).
//!
//! A file per run cost an inode per run — half of `lobster serve`'s
//! throughput on the files store. So records go, as the run log's do
//! (`state::runlog`), to one writer thread per journal directory in the
//! process: runs hand it each record (a channel send) and go on; it
//! collects what arrives for up to [`WINDOW`], groups it by run, and
//! appends everything in one `write(2)` to the current segment, then one
//! line per run to the index naming where that run's records went (an
//! *extent*: segment, offset, length) with the run's summary change. A
//! record that is a barrier (a brokered call's intent, a gate, a decision)
//! is written at once with everything pending and both files are fsynced
//! before its run goes on: runs reaching barriers together share the
//! fsync. Other records are not synced: a SIGKILL loses what was still
//! queued (at most the last [`WINDOW`]), a power cut the unsynced tail.
//!
//! On disk, in `<dir>/journal/`: `seg-<seq, 8 digits>.log` (records, one
//! line each, as exported), `index.log` (one JSON line per extent write:
//! a [`SummaryUpdate`] with its `extents`), and `<run id>.jsonl` files of
//! journals written before segments, still read. Every writer, in any
//! process, appends under an exclusive `flock` of the index, so segments
//! are shared between processes and offsets are exact (the segment's length
//! before the write); a prune compacts the index and removes the segments
//! no kept run uses under the same lock, and a writer checks after locking
//! that its files are still the live ones. A run's journal is read back by
//! its extents: a torn or foreign line in a segment is never part of one,
//! and a line of an extent that is not whole (a power cut) is dropped.
//!
//! (Past 700 lines on purpose: the writer, the reader and the compaction
//! share one on-disk format and its locking rule; split, each would have
//! to restate them.)

use super::journal::{check_run_id, StoredRecord, SummaryUpdate};
use super::sync_dir;
use crate::error::{Error, Result};
use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, FileExt, MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The longest a record waits in memory before it is written (unless a
/// barrier or a flush writes it sooner).
pub const WINDOW: Duration = Duration::from_millis(100);

/// A segment is closed and the next one started past this size.
pub const SEGMENT_BYTES: u64 = 8 << 20;

/// Pending bytes that are written without waiting for the window.
const PENDING_BYTES: usize = 4 << 20;

/// A writer with nothing to do for this long ends (another starts on the
/// next record).
const IDLE: Duration = Duration::from_secs(10);

/// What a writer is sent. (Records are nearly every message: boxing them
/// would cost an allocation each for the rare flush's sake.)
#[allow(clippy::large_enum_variant)]
enum Msg {
    /// A record of `run`, with its summary change; `sync`: reply once it
    /// is on disk and synced.
    Record {
        run: String,
        record: StoredRecord,
        summary: Option<SummaryUpdate>,
        sync: Option<Sender<std::result::Result<(), String>>>,
    },
    /// Reply once everything sent before is written.
    Flush(Sender<()>),
}

struct Handle {
    tx: Sender<Msg>,
    id: u64,
    /// Why the writer's last write failed (cleared by the next that works).
    failed: Failing,
}

/// A writer's last failure, shared with the runs that send to it.
type Failing = std::sync::Arc<Mutex<Option<String>>>;

/// Whether the journal in `dir` can be written: its directory made and its
/// index opened for appending.
fn probe(dir: &Path) -> Result<()> {
    make_dir(dir)?;
    let path = dir.join("index.log");
    OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(&path)
        .map(drop)
        .map_err(|e| io_error("cannot open the run index", &path, e))
}

/// The writers of this process, by journal directory.
fn writers() -> &'static Mutex<HashMap<PathBuf, Handle>> {
    static WRITERS: OnceLock<Mutex<HashMap<PathBuf, Handle>>> = OnceLock::new();
    WRITERS.get_or_init(Mutex::default)
}

/// Send `msg` to the writer of `dir`, starting one if there is none. The
/// registry's lock is held while sending, so a writer that ends when idle
/// never drops a message it was sent.
///
/// A run's first record (`starts`) is refused when the journal cannot be
/// written — checked on disk when this process has no writer there yet or
/// the writer's last write failed — so a run does not start without its
/// journal.
fn send(dir: &Path, msg: Msg, starts: bool) -> Result<()> {
    static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut all = writers().lock().unwrap_or_else(|p| p.into_inner());
    let mut msg = msg;
    if starts {
        match all.get(dir) {
            None => probe(dir)?,
            Some(h) => {
                let mut failed = h.failed.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(why) = failed.as_ref() {
                    // The store may be back: look again before refusing.
                    probe(dir).map_err(|_| Error::runtime(why.clone()))?;
                    *failed = None;
                }
            }
        }
    }
    for _ in 0..2 {
        if !all.contains_key(dir) {
            let (tx, rx) = mpsc::channel();
            let id = NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let failed = Failing::default();
            let writer = Writer::new(dir.to_path_buf(), id, failed.clone());
            std::thread::Builder::new()
                .name("lobster-journal".into())
                .spawn(move || writer.run(rx))
                .map_err(|e| Error::runtime(format!("cannot start the journal's writer: {e}")))?;
            all.insert(dir.to_path_buf(), Handle { tx, id, failed });
        }
        match all[dir].tx.send(msg) {
            Ok(()) => return Ok(()),
            // The writer died (it never does but by a panic): start another.
            Err(mpsc::SendError(m)) => {
                all.remove(dir);
                msg = m;
            }
        }
    }
    Err(Error::runtime(format!(
        "the journal's writer for {} keeps stopping",
        dir.display()
    )))
}

/// Append `record` of `run` to the journal in `dir` (the `journal/`
/// directory); with `sync`, return once it and everything sent before it
/// are on disk and synced.
pub(super) fn append(
    dir: &Path,
    run: &str,
    record: StoredRecord,
    summary: Option<SummaryUpdate>,
    sync: bool,
) -> Result<()> {
    let starts = record.seq == 0;
    if !sync {
        return send(
            dir,
            Msg::Record {
                run: run.to_string(),
                record,
                summary,
                sync: None,
            },
            starts,
        );
    }
    let (tx, rx) = mpsc::channel();
    send(
        dir,
        Msg::Record {
            run: run.to_string(),
            record,
            summary,
            sync: Some(tx),
        },
        starts,
    )?;
    match rx.recv() {
        Ok(Ok(())) => Ok(()),
        Ok(Err(why)) => Err(Error::runtime(why)),
        Err(_) => Err(Error::runtime(format!(
            "the journal's writer for {} stopped",
            dir.display()
        ))),
    }
}

/// Wait until everything this process sent to the journal in `dir` is
/// written (nothing when no writer of this process writes there).
pub fn flush_dir(dir: &Path) {
    let (tx, rx) = mpsc::channel();
    {
        let all = writers().lock().unwrap_or_else(|p| p.into_inner());
        match all.get(dir) {
            Some(h) if h.tx.send(Msg::Flush(tx)).is_ok() => {}
            _ => return,
        }
    }
    let _ = rx.recv();
}

/// Wait until everything this process sent to any journal is written
/// (before the process exits).
pub fn flush_all() {
    let waits: Vec<Receiver<()>> = {
        let all = writers().lock().unwrap_or_else(|p| p.into_inner());
        all.values()
            .filter_map(|h| {
                let (tx, rx) = mpsc::channel();
                h.tx.send(Msg::Flush(tx)).ok().map(|_| rx)
            })
            .collect()
    };
    for rx in waits {
        let _ = rx.recv();
    }
}

/// One run's records pending in a writer.
struct Group {
    run: String,
    records: Vec<StoredRecord>,
    summary: Option<SummaryUpdate>,
}

/// A writer thread's state.
struct Writer {
    dir: PathBuf,
    id: u64,
    groups: Vec<Group>,
    by_run: HashMap<String, usize>,
    bytes: usize,
    oldest: Option<Instant>,
    syncs: Vec<Sender<std::result::Result<(), String>>>,
    flushes: Vec<Sender<()>>,
    index: Option<File>,
    segment: Option<(String, File)>,
    /// A file was created or opened since the directory was last synced.
    dir_dirty: bool,
    /// Why the last write failed, for the runs about to start.
    failed: Failing,
}

impl Writer {
    fn new(dir: PathBuf, id: u64, failed: Failing) -> Writer {
        Writer {
            dir,
            id,
            groups: Vec::new(),
            by_run: HashMap::new(),
            bytes: 0,
            oldest: None,
            syncs: Vec::new(),
            flushes: Vec::new(),
            index: None,
            segment: None,
            dir_dirty: true,
            failed,
        }
    }

    fn run(mut self, rx: Receiver<Msg>) {
        loop {
            let wait = match self.oldest {
                Some(t) => WINDOW.saturating_sub(t.elapsed()),
                None => IDLE,
            };
            match rx.recv_timeout(wait) {
                Ok(msg) => {
                    self.take(msg);
                    while let Ok(msg) = rx.try_recv() {
                        self.take(msg);
                    }
                }
                Err(RecvTimeoutError::Timeout) if self.oldest.is_none() => {
                    // Idle: end, unless something arrived meanwhile (the
                    // registry's lock keeps senders out while we decide).
                    let mut all = writers().lock().unwrap_or_else(|p| p.into_inner());
                    match rx.try_recv() {
                        Ok(msg) => {
                            drop(all);
                            self.take(msg);
                        }
                        Err(_) => {
                            if all.get(&self.dir).is_some_and(|h| h.id == self.id) {
                                all.remove(&self.dir);
                            }
                            drop(rx);
                            return;
                        }
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    self.write_out();
                    return;
                }
            }
            let due = self.oldest.is_some_and(|t| t.elapsed() >= WINDOW);
            if !self.syncs.is_empty()
                || !self.flushes.is_empty()
                || self.bytes >= PENDING_BYTES
                || due
            {
                self.write_out();
            }
        }
    }

    fn take(&mut self, msg: Msg) {
        match msg {
            Msg::Record {
                run,
                record,
                summary,
                sync,
            } => {
                self.bytes += record.event.len() + 200;
                self.oldest.get_or_insert_with(Instant::now);
                let i = match self.by_run.get(&run) {
                    Some(&i) => i,
                    None => {
                        self.groups.push(Group {
                            run: run.clone(),
                            records: Vec::new(),
                            summary: None,
                        });
                        self.by_run.insert(run, self.groups.len() - 1);
                        self.groups.len() - 1
                    }
                };
                let g = &mut self.groups[i];
                g.records.push(record);
                if let Some(s) = summary {
                    g.summary = Some(match g.summary.take() {
                        Some(before) => before.then(s),
                        None => s,
                    });
                }
                if let Some(tx) = sync {
                    self.syncs.push(tx);
                }
            }
            Msg::Flush(tx) => self.flushes.push(tx),
        }
    }

    /// Write everything pending (synced if a barrier asked), then answer.
    fn write_out(&mut self) {
        let sync = !self.syncs.is_empty();
        let result = if self.groups.is_empty() {
            Ok(())
        } else {
            self.write_groups(sync)
        };
        if let Err(why) = &result {
            // Nobody waits for the records that are not barriers: say so
            // where an operator looks.
            if !sync {
                eprintln!("lobster: {why}");
            }
        }
        if !self.groups.is_empty() {
            *self.failed.lock().unwrap_or_else(|p| p.into_inner()) = result.clone().err();
        }
        self.groups.clear();
        self.by_run.clear();
        self.bytes = 0;
        self.oldest = None;
        for tx in self.syncs.drain(..) {
            let _ = tx.send(result.clone());
        }
        for tx in self.flushes.drain(..) {
            let _ = tx.send(());
        }
    }

    fn write_groups(&mut self, sync: bool) -> std::result::Result<(), String> {
        make_dir(&self.dir).map_err(|e| e.to_string())?;
        let index = self.lock_index()?;
        let result = self.write_locked(&index, sync);
        drop(index);
        result
    }

    /// The index file, opened if needed, exclusively locked and checked to
    /// be the live one (a prune may have replaced it).
    fn lock_index(&mut self) -> std::result::Result<Locked, String> {
        let path = self.dir.join("index.log");
        for _ in 0..8 {
            if self.index.is_none() {
                let f = OpenOptions::new()
                    .read(true)
                    .append(true)
                    .create(true)
                    .mode(0o600)
                    .open(&path)
                    .map_err(|e| format!("cannot open the run index {}: {e}", path.display()))?;
                self.index = Some(f);
                self.dir_dirty = true;
            }
            let f = self
                .index
                .as_ref()
                .expect("opened")
                .try_clone()
                .map_err(|e| format!("cannot open the run index {}: {e}", path.display()))?;
            flock(&f, libc::LOCK_EX)
                .map_err(|e| format!("cannot lock the run index {}: {e}", path.display()))?;
            let live = fs::metadata(&path).map(|m| m.ino()).ok();
            if live.is_some() && live == f.metadata().map(|m| m.ino()).ok() {
                return Ok(Locked(f));
            }
            self.index = None;
        }
        Err(format!(
            "cannot append to the run index {}: it keeps being replaced",
            path.display()
        ))
    }

    /// The segment to append to (under the index lock): the open one while
    /// it is live and not full, else the newest in the directory if it is
    /// not full, else a new one.
    fn segment(&mut self) -> std::result::Result<(), String> {
        if let Some((_, f)) = &self.segment {
            match f.metadata() {
                Ok(m) if m.nlink() > 0 && m.len() < SEGMENT_BYTES => return Ok(()),
                _ => self.segment = None,
            }
        }
        let segs = segments(&self.dir).map_err(|e| e.to_string())?;
        if let Some((seq, name)) = segs.last() {
            let path = self.dir.join(name);
            if fs::metadata(&path).is_ok_and(|m| m.len() < SEGMENT_BYTES) {
                let f = open_segment(&path, false)?;
                self.segment = Some((name.clone(), f));
                self.dir_dirty = true;
                return Ok(());
            }
            let name = segment_name(seq + 1);
            let f = open_segment(&self.dir.join(&name), true)?;
            self.segment = Some((name, f));
        } else {
            let name = segment_name(1);
            let f = open_segment(&self.dir.join(&name), true)?;
            self.segment = Some((name, f));
        }
        self.dir_dirty = true;
        Ok(())
    }

    fn write_locked(&mut self, index: &Locked, sync: bool) -> std::result::Result<(), String> {
        self.segment()?;
        let (name, seg) = self.segment.as_ref().expect("a segment is open");
        let base = seg
            .metadata()
            .map_err(|e| format!("cannot read segment {name}: {e}"))?
            .len();
        let mut buf = Vec::with_capacity(self.bytes + 64);
        // A torn last line (a power cut) ends here, outside every extent.
        if base > 0 && !ends_with_newline(seg, base) {
            buf.push(b'\n');
        }
        let mut lines = Vec::with_capacity(self.groups.len() * 300);
        for g in &mut self.groups {
            let start = base + buf.len() as u64;
            for r in &g.records {
                buf.extend_from_slice(super::journal::format_line(&g.run, r).as_bytes());
                buf.push(b'\n');
            }
            let last = g.records.last().expect("a group has records");
            let mut s = g.summary.take().unwrap_or_default();
            s.run_id.clone_from(&g.run);
            s.events = last.seq + 1;
            s.head.clone_from(&last.hash);
            s.extents = vec![(name.clone(), start, base + buf.len() as u64 - start)];
            lines.extend_from_slice(
                serde_json::to_string(&s)
                    .map_err(|e| format!("cannot record a run's summary: {e}"))?
                    .as_bytes(),
            );
            lines.push(b'\n');
        }
        let seg_path = self.dir.join(name);
        let mut seg = seg;
        seg.write_all(&buf).map_err(|e| {
            format!(
                "cannot append to journal segment {}: {e}",
                seg_path.display()
            )
        })?;
        if sync {
            seg.sync_data()
                .map_err(|e| format!("cannot sync journal segment {}: {e}", seg_path.display()))?;
        }
        let path = self.dir.join("index.log");
        let mut f = &index.0;
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        if len > 0 && !ends_with_newline(f, len) {
            lines.insert(0, b'\n');
        }
        f.write_all(&lines)
            .map_err(|e| format!("cannot append to the run index {}: {e}", path.display()))?;
        if sync {
            f.sync_data()
                .map_err(|e| format!("cannot sync the run index {}: {e}", path.display()))?;
            if self.dir_dirty {
                sync_dir(&self.dir)
                    .map_err(|e| format!("cannot sync {}: {e}", self.dir.display()))?;
                self.dir_dirty = false;
            }
        }
        Ok(())
    }
}

/// A file held under an exclusive `flock` until dropped.
struct Locked(File);

impl Drop for Locked {
    fn drop(&mut self) {
        let _ = flock(&self.0, libc::LOCK_UN);
    }
}

fn segment_name(seq: u64) -> String {
    format!("seg-{seq:08}.log")
}

fn open_segment(path: &Path, new: bool) -> std::result::Result<File, String> {
    let mut o = OpenOptions::new();
    o.read(true).append(true).mode(0o600);
    if new {
        o.create_new(true);
    }
    match o.open(path) {
        Ok(f) => Ok(f),
        // Made meanwhile by a writer that did not lock (none does): use it.
        Err(e) if new && e.kind() == std::io::ErrorKind::AlreadyExists => open_segment(path, false),
        Err(e) => Err(format!(
            "cannot open journal segment {}: {e}",
            path.display()
        )),
    }
}

fn ends_with_newline(f: &File, len: u64) -> bool {
    let mut last = [0u8; 1];
    f.read_exact_at(&mut last, len - 1).is_ok() && last[0] == b'\n'
}

/// The segments in `dir` by sequence: (seq, file name).
fn segments(dir: &Path) -> std::io::Result<Vec<(u64, String)>> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut out: Vec<(u64, String)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let seq = name
                .strip_prefix("seg-")?
                .strip_suffix(".log")?
                .parse()
                .ok()?;
            Some((seq, name))
        })
        .collect();
    out.sort();
    Ok(out)
}

/// The index's text (everything this process sent is written first).
pub(super) fn read_index(dir: &Path) -> Result<Option<String>> {
    flush_dir(dir);
    let path = dir.join("index.log");
    match fs::read(&path) {
        Ok(bytes) => Ok(Some(String::from_utf8_lossy(&bytes).into_owned())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error("cannot read the run index", &path, e)),
    }
}

/// Run `run`'s journal: its file from before segments, then its extents in
/// the order written, whole lines of `run` only; `None` when it has none.
pub(super) fn read_run(dir: &Path, run: &str) -> Result<Option<String>> {
    check_run_id(run)?;
    let mut text = String::new();
    let mut found = false;
    let legacy = dir.join(format!("{run}.jsonl"));
    match fs::read_to_string(&legacy) {
        Ok(t) => {
            text = t;
            found = true;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_error("cannot read journal", &legacy, e)),
    }
    let Some(index) = read_index(dir)? else {
        return Ok(found.then_some(text));
    };
    let prefix = format!("{{\"run_id\":\"{run}\"");
    let own = format!("{{\"run\":\"{run}\",");
    let mut open: HashMap<String, Option<File>> = HashMap::new();
    for line in index.lines().filter(|l| l.starts_with(&prefix)) {
        let Ok(u) = serde_json::from_str::<SummaryUpdate>(line) else {
            continue;
        };
        if u.run_id != run {
            continue;
        }
        for (seg, off, len) in u.extents {
            found = true;
            if !segment_name_ok(&seg) {
                continue;
            }
            let f = open
                .entry(seg.clone())
                .or_insert_with(|| File::open(dir.join(&seg)).ok());
            let Some(f) = f else { continue };
            let mut bytes = vec![0u8; len as usize];
            let n = read_at_most(f, &mut bytes, off);
            bytes.truncate(n);
            let chunk = String::from_utf8_lossy(&bytes);
            // Whole lines of this run only (a power cut may have left less
            // than the index says).
            for l in chunk.split_inclusive('\n') {
                if l.ends_with('\n') && l.starts_with(&own) {
                    text.push_str(l);
                }
            }
        }
    }
    Ok(found.then_some(text))
}

fn segment_name_ok(name: &str) -> bool {
    name.strip_prefix("seg-")
        .and_then(|r| r.strip_suffix(".log"))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

fn read_at_most(f: &File, buf: &mut [u8], off: u64) -> usize {
    let mut done = 0;
    while done < buf.len() {
        match f.read_at(&mut buf[done..], off + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    done
}

/// Compact the index under its lock: `keep` the runs it says (each folded
/// to one line with all its extents; the others become tombstones without
/// any), then remove the segments no kept run uses and the per-run files
/// of the pruned. `fold` gets the index's text and returns the new lines
/// and the pruned runs' ids.
pub(super) fn compact(
    dir: &Path,
    fold: impl FnOnce(&str) -> (String, Vec<String>),
) -> Result<Vec<String>> {
    flush_dir(dir);
    let path = dir.join("index.log");
    let mut index = match OpenOptions::new().read(true).write(true).open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_error("cannot open the run index", &path, e)),
    };
    flock(&index, libc::LOCK_EX).map_err(|e| io_error("cannot lock the run index", &path, e))?;
    let _locked = Locked(
        index
            .try_clone()
            .map_err(|e| io_error("cannot lock the run index", &path, e))?,
    );
    let mut text = String::new();
    index
        .read_to_string(&mut text)
        .map_err(|e| io_error("cannot read the run index", &path, e))?;
    let (out, pruned) = fold(&text);
    super::write_atomic(&path, out.as_bytes())
        .map_err(|e| io_error("cannot rewrite the run index", &path, e))?;
    let mut used = std::collections::HashSet::new();
    for line in out.lines() {
        if let Ok(u) = serde_json::from_str::<SummaryUpdate>(line) {
            used.extend(u.extents.into_iter().map(|(s, _, _)| s));
        }
    }
    for (_, name) in segments(dir).map_err(|e| io_error("cannot read", dir, e))? {
        if !used.contains(&name) {
            let p = dir.join(&name);
            match fs::remove_file(&p) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io_error("cannot remove journal segment", &p, e)),
            }
        }
    }
    for id in &pruned {
        let file = dir.join(format!("{id}.jsonl"));
        match fs::remove_file(&file) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_error("cannot remove journal", &file, e)),
        }
    }
    Ok(pruned)
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
