//! A writer thread: at the end of each [`WINDOW`] it takes the records
//! the listed runs' buffers hold, groups them by run, and appends them in
//! one `writev(2)` to the current segment, then one index line per run
//! naming its extent, all under the index's lock. A barrier writes at once
//! and fsyncs both files (runs reaching barriers together share the fsync).

use super::index::push_index_line;
use super::segments::{
    ends_with_newline, open_segment, read_at_most, segment_name, segment_name_ok, segments,
};
use super::writers::{key, writers, Failing, Msg, Pending};
use super::{flock, flock_fd, open_index, SEGMENT_BYTES, WINDOW};
use crate::state::journal::SummaryUpdate;
use crate::state::sync_dir;
use std::collections::HashMap;
use std::fs::{self, File};
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::os::unix::io::{AsRawFd, RawFd};
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
    /// reporting its failures in `failed`, appending to `index` (the file
    /// the run's start opened to check the journal can be written) if given.
    pub(super) fn new(dir: PathBuf, id: u64, failed: Failing, index: Option<File>) -> Writer {
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
            index,
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
        let (lock, len) = self.lock_index()?;
        let result = self.write_locked(len, sync);
        drop(lock);
        result
    }

    /// The index file, opened if needed, exclusively locked and checked to
    /// be the live one (a prune may have replaced it); with its length
    /// (every writer appends under the lock: it holds until unlocked). The
    /// lock is taken on the held file itself, not a duplicate of it.
    fn lock_index(&mut self) -> std::result::Result<(Unlock, u64), String> {
        let path = self.dir.join("index.log");
        for _ in 0..8 {
            if self.index.is_none() {
                self.index = Some(open_index(&self.dir).map_err(|e| e.to_string())?);
                self.dir_dirty = true;
            }
            let f = self.index.as_ref().expect("opened");
            flock(f, libc::LOCK_EX)
                .map_err(|e| format!("cannot lock the run index {}: {e}", path.display()))?;
            let lock = Unlock(f.as_raw_fd());
            let held = f.metadata().ok();
            let live = fs::metadata(&path).ok();
            if let (Some(held), Some(live)) = (held, live) {
                if held.ino() == live.ino() && held.dev() == live.dev() {
                    return Ok((lock, held.len()));
                }
            }
            drop(lock);
            self.index = None;
        }
        Err(format!(
            "cannot append to the run index {}: it keeps being replaced",
            path.display()
        ))
    }

    /// The segment to append to (under the index lock) and its length: the
    /// open one while it is live and not full, else the one the index's
    /// last line names (`hint`: the segment the last write went to) if it
    /// is there and not full, else the newest in the directory if it is
    /// not full, else a new one. A process that appends once opens one
    /// segment and lists nothing.
    fn segment(&mut self, hint: Option<&str>) -> std::result::Result<u64, String> {
        if let Some((_, f)) = &self.segment {
            match f.metadata() {
                Ok(m) if m.nlink() > 0 && m.len() < SEGMENT_BYTES => return Ok(m.len()),
                _ => self.segment = None,
            }
        }
        // Removed by a prune (under this lock, so not meanwhile), full, or
        // not readable: look in the directory instead.
        if let Some(name) = hint {
            if let Ok(Some((f, len))) = self.with_room(name) {
                return Ok(self.take_segment(name.to_string(), f, len));
            }
        }
        let segs = segments(&self.dir).map_err(|e| e.to_string())?;
        let name = match segs.last() {
            Some((seq, name)) => {
                if let Some((f, len)) = self.with_room(name)? {
                    return Ok(self.take_segment(name.clone(), f, len));
                }
                segment_name(seq + 1)
            }
            None => segment_name(1),
        };
        let f = open_segment(&self.dir.join(&name), true)?;
        // (Made meanwhile by a writer that did not lock: its length.)
        let len = segment_metadata(&f, &name)?.len();
        Ok(self.take_segment(name, f, len))
    }

    /// Existing segment `name`, opened, with its length — unless it is
    /// gone (unlinked) or full.
    fn with_room(&self, name: &str) -> std::result::Result<Option<(File, u64)>, String> {
        let f = open_segment(&self.dir.join(name), false)?;
        let m = segment_metadata(&f, name)?;
        Ok((m.nlink() > 0 && m.len() < SEGMENT_BYTES).then_some((f, m.len())))
    }

    /// Append to `f` (segment `name`, `len` bytes long) from now on; `len`.
    fn take_segment(&mut self, name: String, f: File, len: u64) -> u64 {
        self.segment = Some((name, f));
        self.dir_dirty = true;
        len
    }

    /// The last bytes of the index (of length `len`, locked): whether it
    /// ends a line, and — when no segment is open — the segment its last
    /// line names.
    fn index_tail(&self, len: u64) -> (bool, Option<String>) {
        let Some(f) = self.index.as_ref() else {
            return (false, None);
        };
        if len == 0 {
            return (true, None);
        }
        let mut tail = [0u8; 512];
        let want = if self.segment.is_some() {
            1
        } else {
            tail.len() as u64
        };
        let n = want.min(len) as usize;
        let got = read_at_most(f, &mut tail[..n], len - n as u64);
        let tail = &tail[..got];
        let whole = got == n && tail.last() == Some(&b'\n');
        let hint = if whole && self.segment.is_none() {
            last_segment(tail).map(str::to_string)
        } else {
            None
        };
        (whole, hint)
    }

    /// Write the groups: `index_len`, the locked index's length.
    fn write_locked(&mut self, index_len: u64, sync: bool) -> std::result::Result<(), String> {
        let (index_whole, hint) = self.index_tail(index_len);
        let base = self.segment(hint.as_deref())?;
        let (name, seg) = self.segment.as_ref().expect("a segment is open");
        // The lines are the runs' own buffers, written with one
        // `writev(2)` (`write_all_vectored` below), not copied into one
        // buffer.
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
        let mut f = self.index.as_ref().expect("locked");
        if !index_whole {
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

/// The metadata of segment `name`, open as `f`.
fn segment_metadata(f: &File, name: &str) -> std::result::Result<fs::Metadata, String> {
    f.metadata()
        .map_err(|e| format!("cannot read segment {name}: {e}"))
}

/// Unlocks the index (by the held file's descriptor, open while this
/// lives) when dropped.
struct Unlock(RawFd);

impl Drop for Unlock {
    fn drop(&mut self) {
        let _ = flock_fd(self.0, libc::LOCK_UN);
    }
}

/// The segment an index line names last (`…,["seg-….log",off,len]]}`
/// then a newline, as `push_index_line` and serde end a line with
/// extents); `None` when `tail` ends otherwise.
fn last_segment(tail: &[u8]) -> Option<&str> {
    let rest = tail.strip_suffix(b"]]}\n")?;
    let open = rest.iter().rposition(|&b| b == b'[')?;
    let quoted = rest[open + 1..].strip_prefix(b"\"")?;
    let end = quoted.iter().position(|&b| b == b'"')?;
    let name = std::str::from_utf8(&quoted[..end]).ok()?;
    segment_name_ok(name).then_some(name)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::journal::test_record as rec;
    use crate::state::StateStore;

    /// The index line of run `run` with one extent in `seg`.
    fn line(run: &str, seg: &str) -> String {
        let mut out = String::new();
        super::push_index_line(
            &mut out,
            &SummaryUpdate {
                run_id: run.into(),
                events: 1,
                head: "h".into(),
                extents: vec![(seg.into(), 0, 0)],
                ..Default::default()
            },
        );
        out + "\n"
    }

    #[test]
    fn the_last_segment_is_read_from_an_index_lines_end() {
        let one = line("r", "seg-00000007.log");
        assert_eq!(last_segment(one.as_bytes()), Some("seg-00000007.log"));
        // Several extents: the last.
        let mut many = String::new();
        push_index_line(
            &mut many,
            &SummaryUpdate {
                run_id: "r".into(),
                extents: vec![
                    ("seg-00000002.log".into(), 5, 6),
                    ("seg-00000003.log".into(), 0, 9),
                ],
                ..Default::default()
            },
        );
        many.push('\n');
        assert_eq!(last_segment(many.as_bytes()), Some("seg-00000003.log"));
        // What serde writes is read alike.
        let serde = serde_json::to_string(&SummaryUpdate {
            run_id: "r".into(),
            extents: vec![("seg-00000004.log".into(), 1, 2)],
            ..Default::default()
        })
        .unwrap()
            + "\n";
        assert_eq!(last_segment(serde.as_bytes()), Some("seg-00000004.log"));
        // No extents (a tombstone), a torn line, a name that is not a
        // segment's, a tail cut inside the name: none.
        for tail in [
            "{\"run_id\":\"r\",\"events\":1,\"head\":\"h\",\"status\":\"pruned\"}\n",
            one.trim_end(),
            "{\"run_id\":\"r\",\"extents\":[[\"../index.log\",0,1]]}\n",
            "{\"run_id\":\"r\",\"extents\":[[\"seg-1.log/x\",0,1]]}\n",
            "00000001.log\",0,1]]}\n",
        ] {
            assert_eq!(last_segment(tail.as_bytes()), None, "{tail}");
        }
    }

    /// A new writer appends to the segment the index's last line names —
    /// not listing the directory — while it is there and not full; else to
    /// the newest there if not full, else to a new one. Whichever it takes,
    /// a torn tail before it stays outside every run, and the run reads
    /// back whole.
    #[test]
    fn a_writer_appends_where_the_index_says_unless_that_segment_is_gone_or_full() {
        let write_run = |store: &StateStore, run: &str| {
            let mut w = store.journal_writer(run).unwrap();
            w.append(rec(0).as_record(), None, false).unwrap();
            w.append(rec(1).as_record(), None, true).unwrap();
            super::super::flush_all();
        };
        let lines_of = |path: &std::path::Path| {
            std::fs::read_to_string(path)
                .unwrap_or_default()
                .lines()
                .filter(|l| l.contains("\"run\":\"new\""))
                .count()
        };
        // (the index's last line, segments there with their lengths, torn
        // tail in the named one, where the run's records go)
        type Case<'a> = (&'a str, &'a [(&'a str, u64)], bool, &'a str);
        let cases: [Case<'_>; 5] = [
            // Named, not full, though a newer one is there (after a prune).
            (
                "seg-00000001.log",
                &[("seg-00000001.log", 10), ("seg-00000002.log", 10)],
                false,
                "seg-00000001.log",
            ),
            // Named, with a torn tail: a new line starts.
            (
                "seg-00000001.log",
                &[("seg-00000001.log", 10)],
                true,
                "seg-00000001.log",
            ),
            // Named but gone: the newest.
            (
                "seg-00000005.log",
                &[("seg-00000003.log", 10)],
                false,
                "seg-00000003.log",
            ),
            // Named but full: the newest, or a new one past it if full.
            (
                "seg-00000001.log",
                &[("seg-00000001.log", SEGMENT_BYTES), ("seg-00000002.log", 3)],
                false,
                "seg-00000002.log",
            ),
            (
                "seg-00000002.log",
                &[("seg-00000002.log", SEGMENT_BYTES)],
                false,
                "seg-00000003.log",
            ),
        ];
        for (named, there, torn, expected) in cases {
            let dir = tempfile::tempdir().unwrap();
            let journal = dir.path().join("journal");
            std::fs::create_dir(&journal).unwrap();
            for (name, len) in there {
                let f = File::create(journal.join(name)).unwrap();
                if *len == SEGMENT_BYTES {
                    f.set_len(*len).unwrap();
                } else {
                    let mut text = "x".repeat(*len as usize - 1) + "\n";
                    if torn && *name == named {
                        text.pop();
                    }
                    (&f).write_all(text.as_bytes()).unwrap();
                }
            }
            std::fs::write(journal.join("index.log"), line("old", named)).unwrap();
            let store = StateStore::new(dir.path());
            write_run(&store, "new");
            let target = journal.join(expected);
            assert_eq!(lines_of(&target), 2, "{named} {there:?}: not in {expected}");
            let text = store.journal_text("new").unwrap().unwrap();
            assert_eq!(text.lines().count(), 2, "{named} {there:?}");
            assert!(text.lines().all(|l| l.starts_with("{\"run\":\"new\"")));
            if torn {
                let all = std::fs::read_to_string(&target).unwrap();
                assert!(all.starts_with(&format!("{}\n{{\"run\":\"new\"", "x".repeat(9))));
            }
        }
    }
}
