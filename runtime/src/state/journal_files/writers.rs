//! The writers of this process, one per journal directory, and how runs
//! hand them records: a run keeps its records in its own [`Pending`]
//! buffer (a push under the run's own lock, no message, no wake-up) and
//! lists that buffer with the writer once; the writer takes what every
//! listed buffer holds at the end of each window. A barrier is a message
//! and a wait for the fsync. A writer that was idle for a while ends; the
//! next run starts another.

use super::group_commit::Writer;
use super::{io_error, make_dir};
use crate::error::{Error, Result};
use crate::state::journal::{StoredRecord, SummaryUpdate};
use std::collections::HashMap;
use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, OnceLock};

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

/// One run's records not yet taken by the writer, filled by the run (its
/// records come in order: the run's journal appends under its chain's
/// lock), emptied by the writer.
#[derive(Debug)]
pub(in crate::state) struct Pending {
    /// The run.
    pub(super) run: String,
    held: Mutex<Held>,
}

/// What a [`Pending`] holds.
#[derive(Debug, Default)]
pub(super) struct Held {
    pub(super) records: Vec<StoredRecord>,
    pub(super) summary: Option<SummaryUpdate>,
    pub(super) bytes: usize,
    /// The writer has this buffer in its list.
    pub(super) listed: bool,
    /// The last record pushed ended the run (the writer drops the buffer
    /// from its list once it took it).
    pub(super) ended: bool,
}

impl Pending {
    /// An empty buffer of run `run`.
    pub(in crate::state) fn new(run: &str) -> Arc<Pending> {
        Arc::new(Pending {
            run: run.to_string(),
            held: Mutex::default(),
        })
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Push `record` and its summary change; returns whether the buffer
    /// must be listed with the writer (it is marked listed) and whether it
    /// is full.
    fn push(&self, record: StoredRecord, summary: Option<SummaryUpdate>) -> (bool, bool) {
        let mut h = self.lock();
        h.bytes += record.event.len() + 200;
        h.records.push(record);
        h.ended = false;
        if let Some(s) = summary {
            h.ended = s.ended_at.is_some();
            h.summary = Some(match h.summary.take() {
                Some(before) => before.then(s),
                None => s,
            });
        }
        let list = !h.listed;
        h.listed = true;
        (list, h.bytes >= PENDING_BYTES)
    }
}

/// A running writer as the registry knows it.
pub(super) struct Handle {
    tx: Sender<Msg>,
    /// The writer's thread: unparked when a barrier, a flush or a full
    /// buffer is sent (it sleeps out its window otherwise; see
    /// `Writer::run`).
    thread: std::thread::Thread,
    /// Which writer this is (an ending writer removes only itself).
    pub(super) id: u64,
    /// Why the writer's last write failed (cleared by the next that works).
    failed: Failing,
}

/// A writer's last failure, shared with the runs that send to it.
pub(super) type Failing = std::sync::Arc<Mutex<Option<String>>>;

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
pub(super) fn writers() -> &'static Mutex<HashMap<PathBuf, Handle>> {
    static WRITERS: OnceLock<Mutex<HashMap<PathBuf, Handle>>> = OnceLock::new();
    WRITERS.get_or_init(Mutex::default)
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
    // One look-up of `dir` when its writer runs (hashing a path walks its
    // components: three look-ups were ~4,000 instructions per run).
    for _ in 0..3 {
        if let Some(h) = all.get(dir) {
            if starts {
                let mut failed = h.failed.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(why) = failed.as_ref() {
                    // The store may be back: look again before refusing.
                    probe(dir).map_err(|_| Error::runtime(why.clone()))?;
                    *failed = None;
                }
            }
            match h.tx.send(msg) {
                Ok(()) => {
                    if wakes {
                        h.thread.unpark();
                    }
                    return Ok(());
                }
                // The writer died (it never does but by a panic): start
                // another.
                Err(mpsc::SendError(m)) => msg = m,
            }
            all.remove(dir);
            continue;
        }
        if starts {
            probe(dir)?;
        }
        let (tx, rx) = mpsc::channel();
        let id = NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let failed = Failing::default();
        let writer = Writer::new(dir.to_path_buf(), id, failed.clone());
        let thread = std::thread::Builder::new()
            .name("lobster-journal".into())
            .spawn(move || writer.run(rx))
            .map_err(|e| Error::runtime(format!("cannot start the journal's writer: {e}")))?
            .thread()
            .clone();
        all.insert(
            dir.to_path_buf(),
            Handle {
                tx,
                thread,
                id,
                failed,
            },
        );
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
    record: StoredRecord,
    summary: Option<SummaryUpdate>,
    sync: bool,
) -> Result<()> {
    let starts = record.seq == 0;
    let (list, full) = pending.push(record, summary);
    if list {
        if let Err(e) = send(dir, Msg::List(pending.clone()), starts) {
            // The record is refused (and with it the run, at its start).
            let mut h = pending.lock();
            h.listed = false;
            if let Some(r) = h.records.pop() {
                h.bytes = h.bytes.saturating_sub(r.event.len() + 200);
            }
            if h.records.is_empty() {
                h.summary = None;
            }
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
    let (tx, rx) = mpsc::channel();
    {
        let all = writers().lock().unwrap_or_else(|p| p.into_inner());
        match all.get(dir) {
            Some(h) if h.tx.send(Msg::Flush(tx)).is_ok() => h.thread.unpark(),
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
                h.tx.send(Msg::Flush(tx)).ok().map(|_| {
                    h.thread.unpark();
                    rx
                })
            })
            .collect()
    };
    for rx in waits {
        let _ = rx.recv();
    }
}
