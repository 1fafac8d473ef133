//! Removing what a killed process left in the state directory.
//!
//! Three kinds of file can outlive the process that made them, and only if it
//! was killed at the wrong instant: an atomic write's `.<name>.<hex>.tmp`
//! (killed before the rename), a resume claim's `.<name>.claimed-<hex>`
//! (killed between claiming the state and reading it), and an approval alias
//! `approval_<id>.json` whose resume state is gone (killed between publishing
//! the alias and writing the state, or between claiming the state and
//! removing the alias). None is ever read again, and the first two live for
//! milliseconds in a healthy process, so any that has not changed for a
//! minute is an orphan; an alias is one once its state file is missing.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long a temp or claim file must have been unchanged to be an orphan.
pub const ORPHAN_AGE: Duration = Duration::from_secs(60);

/// How often [`sweep_now_and_then`] reads the whole directory.
pub const SWEEP_EVERY: Duration = Duration::from_secs(10 * 60);

/// The file whose modification time records the last sweep.
const MARKER: &str = ".swept";

/// [`sweep_orphans`] with [`ORPHAN_AGE`], at most once per
/// [`SWEEP_EVERY`] per directory: a pause or a claim costs one `stat`, not a
/// read of a state directory that may hold thousands of files.
pub fn sweep_now_and_then(dir: &Path) {
    let marker = dir.join(MARKER);
    let due = fs::metadata(&marker)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_none_or(|age| age >= SWEEP_EVERY);
    if !due {
        return;
    }
    // Claim the sweep first, so racing processes do not all sweep.
    if fs::write(&marker, b"").is_ok() {
        sweep_orphans(dir, ORPHAN_AGE);
    }
}

/// Whether `name` is a temp file of [`super::write_atomic`] or a resume
/// claim.
fn is_transient(name: &str) -> bool {
    name.starts_with('.') && (name.ends_with(".tmp") || name.contains(".claimed-"))
}

/// Whether `name` is an approval alias (`approval_<hex>.json`).
fn is_alias(name: &str) -> bool {
    name.strip_prefix("approval_")
        .and_then(|rest| rest.strip_suffix(".json"))
        .is_some_and(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Whether the alias file at `path` points at no resume state in `dir`. An
/// alias that cannot be read or parsed points at nothing either.
fn alias_is_dangling(dir: &Path, path: &Path) -> bool {
    let Ok(text) = fs::read_to_string(path) else {
        return false;
    };
    let key = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v.get("stateKey")?.as_str().map(str::to_string));
    match key.map(|k| super::key_to_file_name(&k)) {
        Some(Ok(file)) => !dir.join(file).exists(),
        _ => true,
    }
}

/// Remove the transient files in `dir` whose inode has not changed for
/// `older_than` (the inode change time moves on rename, so a claim counts
/// from the moment it was claimed), and the approval aliases as old whose
/// resume state is gone. Returns how many were removed; errors are ignored,
/// since a sweep must never fail the run that does it.
pub fn sweep_orphans(dir: &Path, older_than: Duration) -> usize {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            continue;
        };
        let alias = is_alias(name);
        if !alias && !is_transient(name) {
            continue;
        }
        let Ok(meta) = entry.metadata() else {
            continue;
        };
        let age = now.saturating_sub(meta.ctime());
        if meta.is_file()
            && age >= older_than.as_secs() as i64
            && (!alias || alias_is_dangling(dir, &entry.path()))
            && fs::remove_file(entry.path()).is_ok()
        {
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removes_only_old_transient_files() {
        let dir = tempfile::tempdir().unwrap();
        let keep = ["pipeline_resume_x.json", ".token-key", "tmp", "a.tmp"];
        let transient = [".x.json.0a1b2c.tmp", ".x.json.claimed-0a1b2c"];
        for name in keep.iter().chain(&transient) {
            fs::write(dir.path().join(name), "x").unwrap();
        }
        // Fresh files are someone's work in progress.
        assert_eq!(sweep_orphans(dir.path(), ORPHAN_AGE), 0);
        // Old enough (here: any age), only the transient ones go.
        assert_eq!(sweep_orphans(dir.path(), Duration::ZERO), 2);
        let mut left: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        let mut want: Vec<String> = keep.iter().map(|s| s.to_string()).collect();
        want.sort();
        assert_eq!(left, want);
        assert_eq!(
            sweep_orphans(&dir.path().join("missing"), Duration::ZERO),
            0
        );
    }

    #[test]
    fn removes_old_aliases_whose_state_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let alias = |id: &str, key: &str| {
            fs::write(
                dir.path().join(format!("approval_{id}.json")),
                format!("{{\"stateKey\":\"{key}\",\"createdAt\":\"x\"}}\n"),
            )
            .unwrap();
        };
        fs::write(dir.path().join("pipeline_resume_live.json"), "{}").unwrap();
        alias("0000aaaa", "pipeline_resume_live");
        alias("0000bbbb", "pipeline_resume_gone");
        fs::write(dir.path().join("approval_0000cccc.json"), "not json").unwrap();
        // A state key that is a normal state file keeps a readable alias alive.
        fs::write(dir.path().join("approval_notanid.json"), "{}").unwrap();
        // Young dangling aliases may be a pause in progress.
        assert_eq!(sweep_orphans(dir.path(), ORPHAN_AGE), 0);
        assert_eq!(sweep_orphans(dir.path(), Duration::ZERO), 2);
        assert!(dir.path().join("approval_0000aaaa.json").exists());
        assert!(!dir.path().join("approval_0000bbbb.json").exists());
        assert!(!dir.path().join("approval_0000cccc.json").exists());
        assert!(dir.path().join("approval_notanid.json").exists());
        assert!(dir.path().join("pipeline_resume_live.json").exists());
    }

    #[test]
    fn sweeps_now_and_then_leave_a_marker() {
        let dir = tempfile::tempdir().unwrap();
        sweep_now_and_then(dir.path());
        let marker = dir.path().join(MARKER);
        let first = fs::metadata(&marker).unwrap().modified().unwrap();
        // Not due again yet: the marker is left as it was.
        std::thread::sleep(Duration::from_millis(20));
        sweep_now_and_then(dir.path());
        assert_eq!(fs::metadata(&marker).unwrap().modified().unwrap(), first);
    }
}
