//! The writers of this process, one per journal directory, and how runs
//! hand them records: a run keeps its records in its own [`Pending`]
//! buffer (a push under the run's own lock, no message, no wake-up) and
//! lists that buffer with the writer once; the writer takes what every
//! listed buffer holds at the end of each window. A barrier is a message
//! and a wait for the fsync. A writer that was idle for a while ends; the
//! next run starts another.
//!
//! A writer's thread starts only when there is something it must do on
//! its own: once its first window has passed (a [`Scheduler`] the process
//! set calls back), or at a barrier or a full buffer. Until then a flush
//! (a read of the journal, the end of the process) writes on the caller's
//! thread: a `lobster run` process that ends within a window starts no
//! thread for its journal (a thread's start and end and the flush's
//! hand-off to it were ~0.2 ms of a 6 ms process).

use super::group_commit::Writer;
use crate::error::{Error, Result};
use crate::state::journal::{push_line, Record, SummaryUpdate};
use std::collections::HashMap;
use std::fs::File;
use std::path::Path;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// What a writer is sent.
pub(super) enum Msg {
    /// A run's buffer, to take records from at each window until its run
    /// ends or its writer is dropped.
    List(Arc<Pending>),
    /// Write everything the listed buffers hold, sync it, then reply.
    Sync(Sender<std::result::Result<(), String>>),
    /// Reply once everything pushed or sent before is written.
    Flush(Sender<()>),
    /// A buffer holds [`PENDING_BYTES`]: write without waiting for the
    /// window (nobody waits).
    Due,
}

/// Bytes a run's buffer holds before the writer is asked to write at once.
pub(super) const PENDING_BYTES: usize = 4 << 20;

/// Bytes a run's buffer is made with (it grows past them).
const LINES_RESERVED: usize = 8 << 10;

/// One run's records not yet taken by the writer, filled by the run (its
/// records come in order: the run's journal appends under its chain's
/// lock), emptied by the writer. The run writes each record's segment
/// line here itself, from the journal's borrowed pieces: no `String` per
/// record made on the run's thread and freed on the writer's.
#[derive(Debug)]
pub(in crate::state) struct Pending {
    /// The run (shared with the writer's groups of it).
    pub(super) run: Arc<str>,
    /// The run as a JSON string (in every line).
    run_json: String,
    held: Mutex<Held>,
}

/// What a [`Pending`] holds.
#[derive(Debug, Default)]
pub(super) struct Held {
    /// The records' lines, as the segment holds them (each ending in a
    /// newline).
    pub(super) lines: Vec<u8>,
    /// The last record's seq and hash (for the index line: the run's
    /// record count and head).
    pub(super) last_seq: u64,
    pub(super) last_hash: String,
    pub(super) summary: Option<SummaryUpdate>,
    /// The writer has this buffer in its list.
    pub(super) listed: bool,
    /// The last record pushed ended the run (the writer drops the buffer
    /// from its list once it took it).
    pub(super) ended: bool,
}

/// What a push changed in a buffer that was not listed, to put back when
/// its listing is refused (only such a push can be refused: see
/// [`append`]).
#[derive(Debug)]
pub(super) struct Undo {
    /// Where the pushed line starts.
    start: usize,
    last_seq: u64,
    last_hash: String,
    summary: Option<SummaryUpdate>,
    ended: bool,
}

impl Held {
    /// Put back what the push that returned `undo` changed: its line, the
    /// last record's seq and hash, the summary change and the end mark.
    fn undo(&mut self, undo: Undo) {
        self.lines.truncate(undo.start);
        self.last_seq = undo.last_seq;
        self.last_hash = undo.last_hash;
        self.summary = undo.summary;
        self.ended = undo.ended;
        self.listed = false;
    }
}

impl Pending {
    /// An empty buffer of run `run`.
    pub(in crate::state) fn new(run: &str) -> Arc<Pending> {
        let mut run_json = String::with_capacity(run.len() + 2);
        crate::value::write_json_string(&mut run_json, run);
        Arc::new(Pending {
            run: Arc::from(run),
            run_json,
            held: Mutex::default(),
        })
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Push `record`'s line and its summary change; returns whether the
    /// buffer is full and, when it must be listed with the writer (it is
    /// marked listed), how to take the push back should the listing be
    /// refused.
    fn push(&self, record: Record<'_>, summary: Option<SummaryUpdate>) -> (bool, Option<Undo>) {
        let mut h = self.lock();
        let undo = (!h.listed).then(|| Undo {
            start: h.lines.len(),
            last_seq: h.last_seq,
            last_hash: h.last_hash.clone(),
            summary: h.summary.clone(),
            ended: h.ended,
        });
        if h.lines.capacity() == 0 {
            // A run's usual records at once (a start, a few steps, an end).
            h.lines.reserve(LINES_RESERVED);
        }
        push_line(&mut h.lines, &self.run_json, record);
        h.lines.push(b'\n');
        h.last_seq = record.seq;
        h.last_hash.clear();
        h.last_hash.push_str(record.hash);
        h.ended = false;
        if let Some(s) = summary {
            h.ended = s.ended_at.is_some();
            h.summary = Some(match h.summary.take() {
                Some(before) => before.then(s),
                None => s,
            });
        }
        h.listed = true;
        (h.lines.len() >= PENDING_BYTES, undo)
    }
}

/// A writer as the registry knows it.
pub(super) struct Handle {
    tx: Sender<Msg>,
    /// The writer's thread once started: unparked when a barrier, a flush
    /// or a full buffer is sent (it sleeps out its window otherwise; see
    /// `Writer::run`).
    thread: Option<std::thread::Thread>,
    /// The writer and what it is sent, while its thread is not started.
    waiting: Option<Box<(Writer, Receiver<Msg>)>>,
    /// Which writer this is (an ending writer removes only itself).
    pub(super) id: u64,
    /// Why the writer's last write failed (cleared by the next that works).
    failed: Failing,
}

impl Handle {
    /// Start the writer's thread unless it runs.
    fn start(&mut self) -> Result<()> {
        let Some(waiting) = self.waiting.take() else {
            return Ok(());
        };
        let (writer, rx) = *waiting;
        let thread = std::thread::Builder::new()
            .name("lobster-journal".into())
            .spawn(move || writer.run(rx))
            .map_err(|e| Error::runtime(format!("cannot start the journal's writer: {e}")))?;
        self.thread = Some(thread.thread().clone());
        Ok(())
    }

    /// Everything sent so far written: by the writer's thread, or on this
    /// thread while it has none; `None` when written here, else the
    /// receiver of the writer's answer.
    fn flush(&mut self) -> Option<Receiver<()>> {
        if let Some(waiting) = self.waiting.as_mut() {
            let (writer, rx) = &mut **waiting;
            writer.write_now(rx);
            return None;
        }
        let (tx, rx) = mpsc::channel();
        self.tx.send(Msg::Flush(tx)).ok()?;
        if let Some(t) = &self.thread {
            t.unpark();
        }
        Some(rx)
    }
}

/// Calls a function on a thread of its own once an instant has passed
/// (the process's timer; `state` is below it and cannot call it itself).
pub type Scheduler = fn(Instant, Box<dyn FnOnce() + Send>);

static SCHEDULER: OnceLock<Scheduler> = OnceLock::new();

/// Let writers start their threads only when a window has passed, through
/// `schedule` (set once, at the process's start). Without it a writer's
/// thread starts with its first run.
pub fn set_scheduler(schedule: Scheduler) {
    let _ = SCHEDULER.set(schedule);
}

/// The window of writer `id` of `dir` has passed: start its thread (if it
/// has none yet), which writes what the buffers hold at once.
fn window_passed(dir: &Path, id: u64) {
    let mut all = writers().lock().unwrap_or_else(|p| p.into_inner());
    let Some(h) = all.get_mut(key(dir)).filter(|h| h.id == id) else {
        return;
    };
    if h.waiting.is_none() {
        return;
    }
    let _ = h.tx.send(Msg::Due);
    if let Err(e) = h.start() {
        // Its runs' buffers are listed again with the next writer.
        eprintln!("lobster: {e}");
        all.remove(key(dir));
    }
}

/// A writer's last failure, shared with the runs that send to it.
pub(super) type Failing = std::sync::Arc<Mutex<Option<String>>>;

/// Whether the journal in `dir` can be written: its index opened for
/// appending (the directory made if it is not there). The file is the
/// writer's to keep: a process that appends opens the index once.
fn probe(dir: &Path) -> Result<File> {
    super::open_index(dir)
}

/// The writers of this process, by journal directory (its path's bytes:
/// see [`key`]).
pub(super) fn writers() -> &'static Mutex<HashMap<Vec<u8>, Handle>> {
    static WRITERS: OnceLock<Mutex<HashMap<Vec<u8>, Handle>>> = OnceLock::new();
    WRITERS.get_or_init(Mutex::default)
}

/// The registry's key of journal directory `dir`: its path's bytes, as
/// every caller spells it (`StateStore`'s directory joined with
/// `journal`). Hashing a `Path` walks its components (~1,200 instructions
/// per run for `lobster serve`); its bytes hash in a few hundred.
pub(super) fn key(dir: &Path) -> &[u8] {
    std::os::unix::ffi::OsStrExt::as_bytes(dir.as_os_str())
}

/// Send `msg` to the writer of `dir`, starting one if there is none. The
/// registry's lock is held while sending, so a writer that ends when idle
/// never drops a message it was sent.
///
/// A run's first record (`starts`: its buffer is listed) is refused when
/// the journal cannot be written — checked on disk when this process has
/// no writer there yet or the writer's last write failed — so a run does
/// not start without its journal.
fn send(dir: &Path, msg: Msg, starts: bool) -> Result<()> {
    static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut all = writers().lock().unwrap_or_else(|p| p.into_inner());
    let mut msg = msg;
    let wakes = !matches!(&msg, Msg::List(_));
    // One look-up of `dir` when its writer is there (hashing a path walks
    // its components: three look-ups were ~4,000 instructions per run).
    for _ in 0..3 {
        if let Some(h) = all.get_mut(key(dir)) {
            if starts {
                let mut failed = h.failed.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(why) = failed.as_ref() {
                    // The store may be back: look again before refusing.
                    probe(dir).map_err(|_| Error::runtime(why.clone()))?;
                    *failed = None;
                }
            }
            match h.tx.send(msg) {
                Ok(()) if !wakes => return Ok(()),
                Ok(()) => {
                    // A barrier or a full buffer: the writer's thread
                    // writes it now.
                    if let Some(t) = &h.thread {
                        t.unpark();
                        return Ok(());
                    }
                    let started = h.start();
                    if started.is_err() {
                        all.remove(key(dir));
                    }
                    return started;
                }
                // The writer died (it never does but by a panic): start
                // another.
                Err(mpsc::SendError(m)) => msg = m,
            }
            all.remove(key(dir));
            continue;
        }
        let index = if starts { Some(probe(dir)?) } else { None };
        let (tx, rx) = mpsc::channel();
        let id = NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let failed = Failing::default();
        let writer = Writer::new(dir.to_path_buf(), id, failed.clone(), index);
        let mut h = Handle {
            tx,
            thread: None,
            waiting: Some(Box::new((writer, rx))),
            id,
            failed,
        };
        match SCHEDULER.get() {
            Some(schedule) => {
                let dir = dir.to_path_buf();
                schedule(
                    Instant::now() + super::WINDOW,
                    Box::new(move || window_passed(&dir, id)),
                );
            }
            None => h.start()?,
        }
        all.insert(key(dir).to_vec(), h);
    }
    Err(Error::runtime(format!(
        "the journal's writer for {} keeps stopping",
        dir.display()
    )))
}

/// Append `record` of `pending`'s run to the journal in `dir` (the
/// `journal/` directory): pushed into the run's buffer, which the writer
/// takes within its window; with `sync`, return once it and everything
/// pushed or sent before it are on disk and synced.
pub(in crate::state) fn append(
    dir: &Path,
    pending: &Arc<Pending>,
    record: Record<'_>,
    summary: Option<SummaryUpdate>,
    sync: bool,
) -> Result<()> {
    let starts = record.seq == 0;
    let (full, undo) = pending.push(record, summary);
    if let Some(undo) = undo {
        if let Err(e) = send(dir, Msg::List(pending.clone()), starts) {
            // The record is refused (and with it the run, at its start):
            // the buffer is left as it was before it, summary and end mark
            // included, so the writer never indexes what was refused.
            pending.lock().undo(undo);
            return Err(e);
        }
    }
    if !sync {
        if full {
            send(dir, Msg::Due, false)?;
        }
        return Ok(());
    }
    let (tx, rx) = mpsc::channel();
    send(dir, Msg::Sync(tx), false)?;
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
    let wait = {
        let mut all = writers().lock().unwrap_or_else(|p| p.into_inner());
        all.get_mut(key(dir)).and_then(Handle::flush)
    };
    if let Some(rx) = wait {
        let _ = rx.recv();
    }
}

/// Wait until everything this process sent to any journal is written
/// (before the process exits).
pub fn flush_all() {
    let waits: Vec<Receiver<()>> = {
        let mut all = writers().lock().unwrap_or_else(|p| p.into_inner());
        all.values_mut().filter_map(Handle::flush).collect()
    };
    for rx in waits {
        let _ = rx.recv();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::journal::test_record as rec;
    use crate::state::StateStore;
    use std::time::Duration;

    type Held = Vec<(Instant, Box<dyn FnOnce() + Send>)>;

    /// Callbacks held back while a test looks at writers before their
    /// window passes (`None`: none held).
    static HELD: Mutex<Option<Held>> = Mutex::new(None);

    /// A scheduler as the process's timer is: `f` on another thread once
    /// `due` has passed (once released, while held).
    fn schedule(due: Instant, f: Box<dyn FnOnce() + Send>) {
        if let Some(held) = HELD.lock().unwrap().as_mut() {
            held.push((due, f));
            return;
        }
        std::thread::spawn(move || {
            std::thread::sleep(due.saturating_duration_since(Instant::now()));
            f();
        });
    }

    /// Hold the scheduler's callbacks until the guard is dropped (other
    /// tests' writers wait too, a moment).
    fn hold() -> impl Drop {
        struct Release;
        impl Drop for Release {
            fn drop(&mut self) {
                let held = HELD.lock().unwrap().take().unwrap_or_default();
                for (due, f) in held {
                    schedule(due, f);
                }
            }
        }
        *HELD.lock().unwrap() = Some(Vec::new());
        Release
    }

    /// (writer waiting, thread started) of the writer of `dir`'s journal.
    fn state_of(dir: &Path) -> (bool, bool) {
        let all = writers().lock().unwrap();
        let h = &all[key(&dir.join("journal"))];
        (h.waiting.is_some(), h.thread.is_some())
    }

    /// With a scheduler (as `lobster` sets one), a writer's thread starts
    /// only once its window passed or at a barrier: before that, a read (or
    /// the process's end) writes on the caller's thread; either way the
    /// records reach the segment within the window and a barrier is on disk
    /// when its append returns.
    #[test]
    fn a_writer_starts_its_thread_only_when_its_window_passes_or_a_barrier_comes() {
        set_scheduler(schedule);
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::new(dir.path());
        let held = hold();
        let mut w = store.journal_writer("rw").unwrap();
        w.append(rec(0).as_record(), None, false).unwrap();
        w.append(rec(1).as_record(), None, false).unwrap();
        assert_eq!(state_of(dir.path()), (true, false));
        // A read writes what is pending here, and starts no thread.
        let text = store.journal_text("rw").unwrap().unwrap();
        assert_eq!(text.lines().count(), 2);
        assert_eq!(state_of(dir.path()), (true, false));
        // Nobody reads: the window passes, the thread starts and writes.
        drop(held);
        w.append(rec(2).as_record(), None, false).unwrap();
        let seg = dir.path().join("journal/seg-00000001.log");
        let lines = || {
            std::fs::read_to_string(&seg)
                .unwrap_or_default()
                .lines()
                .count()
        };
        let until = Instant::now() + Duration::from_secs(10);
        while lines() < 3 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(lines(), 3);
        assert_eq!(state_of(dir.path()), (false, true));

        // A barrier before the window passed: on disk when it returns.
        let other = tempfile::tempdir().unwrap();
        let store = StateStore::new(other.path());
        let held = hold();
        let mut w = store.journal_writer("rb").unwrap();
        w.append(rec(0).as_record(), None, false).unwrap();
        assert_eq!(state_of(other.path()), (true, false));
        w.append(rec(1).as_record(), None, true).unwrap();
        assert_eq!(state_of(other.path()), (false, true));
        let seg = other.path().join("journal/seg-00000001.log");
        assert_eq!(std::fs::read_to_string(seg).unwrap().lines().count(), 2);
        drop(held);
        // The end of the process: everything written.
        w.append(rec(2).as_record(), None, false).unwrap();
        flush_all();
        let text = store.journal_text("rb").unwrap().unwrap();
        assert_eq!(text.lines().count(), 3);
    }

    /// What a buffer holds, to compare.
    fn snapshot(p: &Pending) -> (Vec<u8>, u64, String, Option<SummaryUpdate>, bool, bool) {
        let h = p.lock();
        (
            h.lines.clone(),
            h.last_seq,
            h.last_hash.clone(),
            h.summary.clone(),
            h.ended,
            h.listed,
        )
    }

    /// A record whose listing is refused is taken back whole: its line, the
    /// last seq and hash, its summary change and its end mark, so the
    /// writer never indexes a run as ended (or with a head) it never wrote.
    #[test]
    fn a_refused_record_is_taken_back_whole() {
        // A journal that cannot be written: its directory is under a file.
        let file = tempfile::NamedTempFile::new().unwrap();
        let dir = file.path().join("journal");
        let r0 = rec(0);
        let ended = SummaryUpdate {
            run_id: "rr".into(),
            events: 1,
            head: r0.hash.clone(),
            status: Some("ok".into()),
            ended_at: Some("2026-12-07T00:00:00Z".into()),
            ..SummaryUpdate::default()
        };
        let p = Pending::new("rr");
        let before = snapshot(&p);
        let err = append(&dir, &p, r0.as_record(), Some(ended.clone()), false).unwrap_err();
        assert!(err.to_string().contains("journal"), "{err}");
        assert_eq!(snapshot(&p), before);

        // A buffer still holding records when it is listed again (its
        // writer ended without taking them): the records before stay, with
        // their own summary; only the refused push goes.
        let started = SummaryUpdate {
            run_id: "rr".into(),
            events: 1,
            head: r0.hash.clone(),
            started: Some(("w".into(), "cli".into(), "t".into())),
            ..SummaryUpdate::default()
        };
        let (_, undo) = p.push(r0.as_record(), Some(started.clone()));
        assert!(undo.is_some(), "an unlisted buffer is listed by its push");
        p.lock().listed = false;
        let before = snapshot(&p);
        let r1 = rec(1);
        let (_, undo) = p.push(r1.as_record(), Some(ended));
        let after_push = snapshot(&p);
        assert!(after_push.4 && after_push.1 == 1, "the push ended the run");
        p.lock().undo(undo.unwrap());
        assert_eq!(snapshot(&p), before);
        assert_eq!(snapshot(&p).3, Some(started));
        // Taken back, the buffer is unlisted again: its next push lists it
        // (and can be undone); a push to a listed buffer cannot be refused
        // and keeps no undo.
        let (_, undo) = p.push(r1.as_record(), None);
        assert!(undo.is_some());
        let (_, undo) = p.push(rec(2).as_record(), None);
        assert!(undo.is_none());
    }
}
