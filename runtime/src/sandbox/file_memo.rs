//! A per-process memo from a component file to the component loaded from
//! it, so a long-running process (`lobster serve`) does not read and
//! blake3-hash the same `.wasm` file for every run (a run resolves each
//! stage name once and pins it: `resolve::Pinned`).
//!
//! The memo is keyed by the path and checked against the file's
//! [`Stamp`]: device, inode, size, and modification and status-change
//! times with nanoseconds. Any write, truncation, rename over the path or
//! `touch` changes the stamp, and the file is then read and hashed again.
//!
//! **Why this keeps pins and plan digests sound.** A hit returns the
//! [`LoadedComponent`] whose digest is the blake3 of exactly the bytes it
//! was compiled from; pins (`lobster.lock`), plan digests and approvals are
//! checked against that digest, and those same bytes are what runs. A memo
//! can therefore at worst run an older version that is still checked as
//! itself (a pin on the new bytes refuses it), never bytes that differ from
//! the digest the checks saw.
//!
//! **Coarse timestamps.** The kernel stamps files from a clock that
//! advances once per scheduler tick (1–10 ms), so two writes within one
//! tick that keep the size can leave the same stamp. A file is memoised
//! only once its modification and change times are at least
//! [`SETTLED`] older than the moment its stamp was read (the "racily
//! clean" rule of git's index): any later write gets a later time, so it
//! shows up as a different stamp. A file changed while it was being read
//! (its stamp differs before and after) is not memoised either.

use super::admission::Admission;
use super::component::LoadedComponent;
use super::error::SandboxError;
use super::ArtifactCache;
use std::collections::HashMap;
use std::fs::Metadata;
use std::io::{Read, Seek};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How much older than "now" a file's times must be before its contents
/// are memoised: well above the kernel's timestamp granularity (one tick,
/// at most 10 ms).
pub const SETTLED: Duration = Duration::from_millis(100);

/// Most files remembered; past it the memo starts afresh (it is a cache:
/// dropping it only costs a read and a hash per file).
pub const MAX_ENTRIES: usize = 4096;

/// What identifies a file's contents without reading them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

impl Stamp {
    /// The stamp of `meta`.
    pub fn of(meta: &Metadata) -> Stamp {
        let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
        Stamp {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime_ns: ns(meta.mtime(), meta.mtime_nsec()),
            ctime_ns: ns(meta.ctime(), meta.ctime_nsec()),
        }
    }

    /// Whether both times are at least [`SETTLED`] before `now` (see the
    /// module docs).
    fn settled(&self, now: SystemTime) -> bool {
        let Ok(now) = now.duration_since(UNIX_EPOCH) else {
            return false;
        };
        let limit = now.as_nanos() as i128 - SETTLED.as_nanos() as i128;
        self.mtime_ns <= limit && self.ctime_ns <= limit
    }
}

type Memo = Mutex<HashMap<PathBuf, (Stamp, Arc<LoadedComponent>)>>;

fn memo() -> &'static Memo {
    static MEMO: OnceLock<Memo> = OnceLock::new();
    MEMO.get_or_init(Default::default)
}

/// The component in the file at `path`: from the memo when the file's
/// stamp is the one it was loaded with, else read, hashed and loaded
/// ([`super::load_bytes`], which keeps one component per digest).
pub fn load(path: &Path, cache: &ArtifactCache) -> Result<Arc<LoadedComponent>, SandboxError> {
    load_admitted(path, cache, None)
}

/// [`load`], asking `admission` (with the step's name) about the component
/// before it is compiled — and on every memo hit, since another run may
/// have loaded it under another policy.
pub fn load_admitted(
    path: &Path,
    cache: &ArtifactCache,
    admission: Option<(&str, &dyn Admission)>,
) -> Result<Arc<LoadedComponent>, SandboxError> {
    let file = std::fs::File::open(path).map_err(|source| SandboxError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    load_admitted_file(file, path, cache, admission)
}

/// [`load_admitted`] from a file already open (a tenant's component, opened
/// beneath its roots): the memo is asked with the open file's own stamp and
/// what is admitted and compiled is read from the handle, never by opening
/// `path` again (which a swapped symlink could point elsewhere).
pub fn load_admitted_file(
    mut file: std::fs::File,
    path: &Path,
    cache: &ArtifactCache,
    admission: Option<(&str, &dyn Admission)>,
) -> Result<Arc<LoadedComponent>, SandboxError> {
    let io = |source| SandboxError::Io {
        path: path.to_path_buf(),
        source,
    };
    let stamp = Stamp::of(&file.metadata().map_err(io)?);
    if let Some(hit) = lookup(path, &stamp) {
        if let Some((name, a)) = admission {
            a.admit(name, path, hit.digest(), &mut || {
                let mut bytes = Vec::new();
                file.seek(std::io::SeekFrom::Start(0))?;
                file.read_to_end(&mut bytes)?;
                Ok(bytes)
            })?;
        }
        return Ok(hit);
    }
    let (bytes, settled) = read_stamped_file(file).map_err(io)?;
    let digest = super::component::digest_of(&bytes);
    if let Some((name, a)) = admission {
        a.admit(name, path, &digest, &mut || Ok(bytes.clone()))?;
    }
    let component = super::component::load_digested(&bytes, digest, path, cache)?;
    if let Some(stamp) = settled {
        remember(path, stamp, &component);
    }
    Ok(component)
}

/// The bytes of the file at `path`, and its stamp when what was read may be
/// memoised under it: the stamp did not change while the file was read,
/// and its times are [`SETTLED`] (see the module docs).
pub fn read_stamped(path: &Path) -> std::io::Result<(Vec<u8>, Option<Stamp>)> {
    read_stamped_file(std::fs::File::open(path)?)
}

/// [`read_stamped`] from a file already open (opened beneath a run's root).
pub fn read_stamped_file(mut file: std::fs::File) -> std::io::Result<(Vec<u8>, Option<Stamp>)> {
    let now = SystemTime::now();
    let before = Stamp::of(&file.metadata()?);
    let mut bytes = Vec::with_capacity(usize::try_from(before.size).unwrap_or(0));
    file.read_to_end(&mut bytes)?;
    let after = Stamp::of(&file.metadata()?);
    let settled = (before == after && after.settled(now)).then_some(after);
    Ok((bytes, settled))
}

fn lookup(path: &Path, stamp: &Stamp) -> Option<Arc<LoadedComponent>> {
    let memo = memo().lock().ok()?;
    let (known, component) = memo.get(path)?;
    (known == stamp).then(|| component.clone())
}

fn remember(path: &Path, stamp: Stamp, component: &Arc<LoadedComponent>) {
    let Ok(mut memo) = memo().lock() else { return };
    if memo.len() >= MAX_ENTRIES && !memo.contains_key(path) {
        memo.clear();
    }
    memo.insert(path.to_path_buf(), (stamp, component.clone()));
}

/// Whether `path` is memoised with its current stamp (tests and `doctor`).
pub fn is_memoised(path: &Path) -> bool {
    std::fs::metadata(path)
        .ok()
        .is_some_and(|m| lookup(path, &Stamp::of(&m)).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_times_are_not_settled() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("x");
        std::fs::write(&file, b"x").unwrap();
        let stamp = Stamp::of(&std::fs::metadata(&file).unwrap());
        assert!(!stamp.settled(SystemTime::now()));
        assert!(stamp.settled(SystemTime::now() + SETTLED + Duration::from_millis(20)));
    }

    #[test]
    fn any_write_changes_the_stamp() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("x");
        std::fs::write(&file, b"aaaa").unwrap();
        let first = Stamp::of(&std::fs::metadata(&file).unwrap());
        // Same size, new inode (what `cp`/an atomic rename does).
        let tmp = dir.path().join("y");
        std::fs::write(&tmp, b"bbbb").unwrap();
        std::fs::rename(&tmp, &file).unwrap();
        let second = Stamp::of(&std::fs::metadata(&file).unwrap());
        assert_ne!(first, second);
    }
}
