//! The per-run files of journals written before segments
//! (`<run id>.jsonl` in the journal directory): still read, removed when
//! their run is pruned, never written.

use super::io_error;
use crate::error::Result;
use std::fs;
use std::path::Path;

/// The text of `run`'s file from before segments; `None` when it has none.
/// (`run` is a checked run id.)
pub(super) fn read(dir: &Path, run: &str) -> Result<Option<String>> {
    let legacy = dir.join(format!("{run}.jsonl"));
    match fs::read_to_string(&legacy) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error("cannot read journal", &legacy, e)),
    }
}

/// Remove the files of the runs `pruned` (those that have one).
pub(super) fn remove(dir: &Path, pruned: &[String]) -> Result<()> {
    for id in pruned {
        let file = dir.join(format!("{id}.jsonl"));
        match fs::remove_file(&file) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_error("cannot remove journal", &file, e)),
        }
    }
    Ok(())
}
