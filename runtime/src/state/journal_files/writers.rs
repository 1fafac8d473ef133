//! The writers of this process, one per journal directory, and how runs
//! hand them records: a channel send, or a send and a wait for the fsync
//! when the record is a barrier. A writer that was idle for a while ends;
//! the next record starts another.

use super::group_commit::Writer;
use super::{io_error, make_dir};
use crate::error::{Error, Result};
use crate::state::journal::{StoredRecord, SummaryUpdate};
use std::collections::HashMap;
use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Mutex, OnceLock};

/// What a writer is sent. (Records are nearly every message: boxing them
/// would cost an allocation each for the rare flush's sake.)
#[allow(clippy::large_enum_variant)]
pub(super) enum Msg {
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

/// A running writer as the registry knows it.
pub(super) struct Handle {
    tx: Sender<Msg>,
    /// The writer's thread: unparked when a barrier or a flush is sent (it
    /// sleeps out its window otherwise; see `Writer::run`).
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
        let wakes = matches!(&msg, Msg::Record { sync: Some(_), .. } | Msg::Flush(_));
        let h = &all[dir];
        match h.tx.send(msg) {
            Ok(()) => {
                if wakes {
                    h.thread.unpark();
                }
                return Ok(());
            }
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
pub(in crate::state) fn append(
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
