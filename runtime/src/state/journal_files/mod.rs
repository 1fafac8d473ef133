//! Run journals on the files store: shared, group-committed segments and
//! an index (see `state/journal.rs` for what is stored, `crate::journal`
//! for what it means).
//!
//! A file per run cost an inode per run — half of `lobster serve`'s
//! throughput on the files store. So records go, as the run log's do
//! (`state::runlog`), to one writer thread per journal directory in the
//! process: a run writes each record's segment line into its own buffer
//! (its own lock; no message, no wake-up) and goes on, the buffer listed
//! with the writer at the run's first record; at the end of each
//! [`WINDOW`] the writer takes what every listed buffer holds, groups it
//! by run, and appends the runs' lines in one `writev(2)` to the current
//! segment, then one line per
//! run to the index naming where that run's records went (an *extent*:
//! segment, offset, length) with the run's summary change. A record that
//! is a barrier (a brokered call's intent, a gate, a decision) is written
//! at once with everything pending and both files are fsynced before its
//! run goes on: runs reaching barriers together share the fsync. Other
//! records are not synced: a SIGKILL loses what was still buffered (at
//! most the last [`WINDOW`]), a power cut the unsynced tail. A writer's
//! thread starts only once its first window passed (or at a barrier or a
//! full buffer): a process that ends sooner writes at its end, on its own
//! thread (see `writers`).
//!
//! On disk, in `<dir>/journal/`: `seg-<seq, 8 digits>.log` (records, one
//! line each, as exported), `index.log` (one JSON line per extent write:
//! a [`SummaryUpdate`](super::journal::SummaryUpdate) with its `extents`),
//! and `<run id>.jsonl` files of journals written before segments, still
//! read. Every writer, in any process, appends under an exclusive `flock`
//! of the index, so segments are shared between processes and offsets are
//! exact (the segment's length before the write); a prune compacts the
//! index and removes the segments no kept run uses under the same lock, and
//! a writer checks after locking that its files are still the live ones. A
//! run's journal is read back by its extents: a torn or foreign line in a
//! segment is never part of one, and a line of an extent that is not whole
//! (a power cut) is dropped.
//!
//! The rooms: `writers` (the writer of each directory in this process, and
//! the runs' buffers it takes records from), `group_commit` (a writer
//! thread: grouping, one write per window, the barriers' fsync),
//! `segments` (the segment
//! files' names and reads), `index` (the index folded in memory, read
//! on from where it was last read), `read` (a run's journal by its extents),
//! `legacy` (the per-run files from before segments) and `compact` (the
//! prune). The on-disk format and the locking rule above are theirs to
//! share; the lock and the helpers every room uses are here.

mod compact;
mod group_commit;
mod index;
mod legacy;
mod read;
mod segments;
mod writers;

pub(super) use compact::compact;
pub(super) use index::{fold_into, with_index, Extent, Folded};
pub(super) use read::read_run;
pub(super) use writers::{append, Pending};
pub use writers::{flush_all, flush_dir, set_scheduler, Scheduler};

use crate::error::{Error, Result};
use std::fs::{self, File};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::Path;
use std::time::Duration;

/// The longest a record waits in memory before it is written (unless a
/// barrier or a flush writes it sooner).
pub const WINDOW: Duration = Duration::from_millis(100);

/// A segment is closed and the next one started past this size.
pub const SEGMENT_BYTES: u64 = 8 << 20;

/// A file held under an exclusive `flock` until dropped.
struct Locked(File);

impl Drop for Locked {
    fn drop(&mut self) {
        let _ = flock(&self.0, libc::LOCK_UN);
    }
}

/// `flock(2)` on `f`, retried when interrupted.
fn flock(f: &File, op: libc::c_int) -> std::io::Result<()> {
    flock_fd(f.as_raw_fd(), op)
}

/// `flock(2)` on descriptor `fd` (open while this runs), retried when
/// interrupted.
fn flock_fd(fd: std::os::unix::io::RawFd, op: libc::c_int) -> std::io::Result<()> {
    loop {
        // SAFETY: flock on a descriptor the caller holds open; no memory
        // is passed.
        if unsafe { libc::flock(fd, op) } == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Make the journal directory (0700) unless it is there.
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

/// The index of the journal in `dir`, opened to read and append (made,
/// with the directory, if it is not there). Tried first and the directory
/// made only when it is missing: one `openat` for a journal in use.
fn open_index(dir: &Path) -> Result<File> {
    let path = dir.join("index.log");
    let open = || {
        fs::OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .mode(0o600)
            .open(&path)
    };
    let opened = match open() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            make_dir(dir)?;
            open()
        }
        other => other,
    };
    opened.map_err(|e| io_error("cannot open the run index", &path, e))
}

/// An error that names what failed, the path and the OS's reason.
fn io_error(what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::runtime(format!("{what} {}: {e}", path.display()))
}
