//! The prune: the index compacted under its lock, then the segments no
//! kept run uses and the per-run files of the pruned removed.

use super::segments::segments;
use super::writers::flush_dir;
use super::{flock, io_error, legacy, Locked};
use crate::error::Result;
use crate::state::journal::SummaryUpdate;
use std::fs::{self, OpenOptions};
use std::io::Read;
use std::path::Path;

/// Compact the index under its lock: `keep` the runs it says (each folded
/// to one line with all its extents; the others become tombstones without
/// any), then remove the segments no kept run uses and the per-run files
/// of the pruned. `fold` gets the index's text and returns the new lines
/// and the pruned runs' ids.
pub(in crate::state) fn compact(
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
    crate::state::write_atomic(&path, out.as_bytes())
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
    legacy::remove(dir, &pruned)?;
    Ok(pruned)
}
