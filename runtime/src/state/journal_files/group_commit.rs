//! A writer thread: at the end of each [`WINDOW`] it takes the records
//! the listed runs' buffers hold, groups them by run, and appends them in
//! one `write(2)` to the current segment, then one index line per run
//! naming its extent, all under the index's lock. A barrier writes at once
//! and fsyncs both files (runs reaching barriers together share the fsync).

use super::index::push_index_line;
use super::segments::{ends_with_newline, open_segment, segment_name, segments};
use super::writers::{key, writers, Failing, Msg, Pending};
use super::{flock, make_dir, Locked, SEGMENT_BYTES, WINDOW};
use crate::state::journal::SummaryUpdate;
use crate::state::sync_dir;
use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A writer with nothing to do for this long ends (another starts on the
/// next record).
const IDLE: Duration = Duration::from_secs(10);

/// One run's records taken from its buffers, to write: their lines as
/// the run wrote them, and its last record's seq and hash.
struct Group {
    run: Arc<str>,
    lines: Vec<u8>,
    last_seq: u64,
    last_hash: String,
    summary: Option<SummaryUpdate>,
}

/// A writer thread's state.
pub(super) struct Writer {
    dir: PathBuf,
    id: u64,
    /// The runs' buffers, in the order they were listed (a resumed run's
    /// earlier leg before its later one).
    runs: Vec<Arc<Pending>>,
    groups: Vec<Group>,
    by_run: HashMap<Arc<str>, usize>,
    /// When the current window began (`None`: no run is listed).
    window: Option<Instant>,
    /// A buffer filled up: write at once.
    due: bool,
    syncs: Vec<Sender<std::result::Result<(), String>>>,
    flushes: Vec<Sender<()>>,
    index: Option<File>,
    segment: Option<(String, File)>,
    /// A file was created or opened since the directory was last synced.
    dir_dirty: bool,
    /// Why the last write failed, for the runs about to start.
    failed: Failing,
}

impl Drop for Writer {
    /// A writer that ends with runs listed (it panicked) unlists them: the
    /// next record of each lists it with the writer that replaces this one.
    fn drop(&mut self) {
        for p in &self.runs {
            p.lock().listed = false;
        }
    }
}

impl Writer {
    /// A writer of the journal in `dir`, known to the registry as `id`,
    /// reporting its failures in `failed`.
    pub(super) fn new(dir: PathBuf, id: u64, failed: Failing) -> Writer {
        Writer {
            dir,
            id,
            runs: Vec::new(),
            groups: Vec::new(),
            by_run: HashMap::new(),
            window: None,
            due: false,
            syncs: Vec::new(),
            flushes: Vec::new(),
            index: None,
            segment: None,
            dir_dirty: true,
            failed,
        }
    }

    /// Take what `rx` brings and write it out, until idle or disconnected.
    ///
    /// While runs are listed the writer sleeps out each window and then
    /// takes what their buffers hold (a run pushes its records without a
    /// message or a wake-up; a message and a wake-up per record were, for
    /// `lobster serve`, a dozen futex calls and context switches per run):
    /// a sender of a barrier, a flush or a full buffer wakes it
    /// ([`super::writers`] unparks it).
    pub(super) fn run(mut self, rx: Receiver<Msg>) {
        loop {
            if let Some(t) = self.window {
                let wait = WINDOW.saturating_sub(t.elapsed());
                if !self.urgent() && !wait.is_zero() {
                    std::thread::park_timeout(wait);
                }
                loop {
                    match rx.try_recv() {
                        Ok(msg) => self.take(msg),
                        Err(TryRecvError::Empty) => break,
                        Err(TryRecvError::Disconnected) => {
                            self.write_out();
                            return;
                        }
                    }
                }
                self.write_if_due();
                continue;
            }
            match rx.recv_timeout(IDLE) {
                Ok(msg) => {
                    self.take(msg);
                    while let Ok(msg) = rx.try_recv() {
                        self.take(msg);
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    // Idle: end, unless something arrived meanwhile (the
                    // registry's lock keeps senders out while we decide).
                    let mut all = writers().lock().unwrap_or_else(|p| p.into_inner());
                    match rx.try_recv() {
                        Ok(msg) => {
                            drop(all);
                            self.take(msg);
                        }
                        Err(_) => {
                            if all.get(key(&self.dir)).is_some_and(|h| h.id == self.id) {
                                all.remove(key(&self.dir));
                            }
                            drop(rx);
                            return;
                        }
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    self.write_out();
                    return;
                }
            }
            self.write_if_due();
        }
    }

    /// Take what `rx` holds and write everything out now, on the caller's
    /// thread (a writer whose thread is not started: see `writers`).
    pub(super) fn write_now(&mut self, rx: &Receiver<Msg>) {
        while let Ok(msg) = rx.try_recv() {
            self.take(msg);
        }
        self.write_out();
    }

    /// A barrier, a flush or a full buffer waits.
    fn urgent(&self) -> bool {
        !self.syncs.is_empty() || !self.flushes.is_empty() || self.due
    }

    /// Write everything the buffers hold when something urgent waits or
    /// the window has passed.
    fn write_if_due(&mut self) {
        let passed = self.window.is_some_and(|t| t.elapsed() >= WINDOW);
        if self.urgent() || passed {
            self.write_out();
        }
    }

    fn take(&mut self, msg: Msg) {
        match msg {
            Msg::List(p) => {
                self.window.get_or_insert_with(Instant::now);
                self.runs.push(p);
            }
            Msg::Sync(tx) => self.syncs.push(tx),
            Msg::Flush(tx) => self.flushes.push(tx),
            Msg::Due => self.due = true,
        }
    }

    /// Take the records every listed buffer holds into the groups, and drop
    /// from the list the buffers whose run ended or whose journal is gone.
    fn collect(&mut self) {
        let (groups, by_run) = (&mut self.groups, &mut self.by_run);
        self.runs.retain(|p| {
            let mut h = p.lock();
            if !h.lines.is_empty() {
                let i = match by_run.get(&*p.run) {
                    Some(&i) => i,
                    None => {
                        groups.push(Group {
                            run: Arc::clone(&p.run),
                            lines: Vec::new(),
                            last_seq: 0,
                            last_hash: String::new(),
                            summary: None,
                        });
                        by_run.insert(Arc::clone(&p.run), groups.len() - 1);
                        groups.len() - 1
                    }
                };
                let g = &mut groups[i];
                if g.lines.is_empty() {
                    g.lines = std::mem::take(&mut h.lines);
                } else {
                    g.lines.extend_from_slice(&h.lines);
                    h.lines.clear();
                }
                g.last_seq = h.last_seq;
                std::mem::swap(&mut g.last_hash, &mut h.last_hash);
                if let Some(s) = h.summary.take() {
                    g.summary = Some(match g.summary.take() {
                        Some(before) => before.then(s),
                        None => s,
                    });
                }
            }
            // (The writer's own reference is the last once the run's
            // journal is dropped.)
            let keep = !h.ended && Arc::strong_count(p) > 1;
            if !keep {
                h.listed = false;
            }
            keep
        });
    }

    /// Write everything pending (synced if a barrier asked), then answer.
    fn write_out(&mut self) {
        self.collect();
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
        self.due = false;
        self.window = (!self.runs.is_empty()).then(Instant::now);
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
        // The lines are the runs' own buffers, written with one
        // `writev(2)` (`write_all` below), not copied into one buffer.
        let mut parts: Vec<std::io::IoSlice<'_>> = Vec::with_capacity(self.groups.len() + 1);
        // A torn last line (a power cut) ends here, outside every extent.
        let mut at = base;
        if base > 0 && !ends_with_newline(seg, base) {
            parts.push(std::io::IoSlice::new(b"\n"));
            at += 1;
        }
        let mut lines = String::with_capacity(self.groups.len() * 400);
        for g in self.groups.iter_mut() {
            let mut s = g.summary.take().unwrap_or_default();
            s.run_id.clear();
            s.run_id.push_str(&g.run);
            s.events = g.last_seq + 1;
            s.head = std::mem::take(&mut g.last_hash);
            s.extents = vec![(name.clone(), at, g.lines.len() as u64)];
            at += g.lines.len() as u64;
            push_index_line(&mut lines, &s);
            lines.push('\n');
        }
        parts.extend(self.groups.iter().map(|g| std::io::IoSlice::new(&g.lines)));
        let seg_path = self.dir.join(name);
        let mut seg = seg;
        write_all_vectored(&mut seg, &mut parts).map_err(|e| {
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
            lines.insert(0, '\n');
        }
        f.write_all(lines.as_bytes())
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

/// Write all of `parts` to `f` (`Write::write_all_vectored` is not stable):
/// one `writev(2)` unless the kernel takes less (or there are more parts
/// than one call takes).
fn write_all_vectored(f: &mut &File, parts: &mut [std::io::IoSlice<'_>]) -> std::io::Result<()> {
    let mut parts = parts;
    std::io::IoSlice::advance_slices(&mut parts, 0);
    while !parts.is_empty() {
        match f.write_vectored(parts) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => std::io::IoSlice::advance_slices(&mut parts, n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
