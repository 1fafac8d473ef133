//! Atomic file replacement.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Write `bytes` to `path` atomically with mode 0600.
///
/// The data goes to `.<name>.<random>.tmp` in the same directory, is fsynced,
/// renamed over `path`, and the directory is fsynced. On any failure the
/// temp file is removed and `path` is untouched.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let (dir, tmp) = temp_beside(path);
    let result = write_synced(&tmp, bytes).and_then(|()| {
        fs::rename(&tmp, path)?;
        sync_dir(dir)
    });
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// The directory of `path` and a fresh temp file name in it
/// (`.<name>.<random>.tmp`: hidden, swept when a killed process left it).
fn temp_beside(path: &Path) -> (&Path, std::path::PathBuf) {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("state");
    (dir, dir.join(format!(".{name}.{}.tmp", random_hex(6))))
}

/// Create `tmp` (0600, must not exist), write `bytes`, fsync.
fn write_synced(tmp: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(tmp)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Write `bytes` to `path` (mode 0600) only if `path` does not exist;
/// whether it was written. Atomic and exclusive: the data goes to a fsynced
/// temp file which is hard-linked to `path` (link(2) fails when `path`
/// exists, so of many racers exactly one wins), then the directory is
/// fsynced. The temp file is always removed.
pub fn create_new_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<bool> {
    let (dir, tmp) = temp_beside(path);
    let result = write_synced(&tmp, bytes).and_then(|()| fs::hard_link(&tmp, path));
    let _ = fs::remove_file(&tmp);
    match result {
        Ok(()) => sync_dir(dir).map(|_| true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e),
    }
}

/// fsync a directory so a rename or unlink in it is durable.
pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

/// `n` random bytes as lowercase hex.
pub fn random_hex(n: usize) -> String {
    let mut bytes = vec![0u8; n];
    getrandom::fill(&mut bytes).expect("the OS random source is available");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn writes_replace_atomically_with_0600_and_leave_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.json");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn failure_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        // Renaming a file over a non-empty directory fails.
        let target = dir.path().join("d");
        fs::create_dir(&target).unwrap();
        fs::write(target.join("inner"), b"x").unwrap();
        assert!(write_atomic(&target, b"data").is_err());
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
