//! Reading the journal back: the index's text, and a run's records by the
//! extents the index names (whole lines of that run only, so a torn or
//! foreign line in a segment is never part of a run's journal).

use super::segments::{read_at_most, segment_name_ok};
use super::writers::flush_dir;
use super::{io_error, legacy};
use crate::error::Result;
use crate::state::journal::{check_run_id, SummaryUpdate};
use std::collections::HashMap;
use std::fs::{self, File};
use std::path::Path;

/// The index's text (everything this process sent is written first).
pub(in crate::state) fn read_index(dir: &Path) -> Result<Option<String>> {
    flush_dir(dir);
    let path = dir.join("index.log");
    match fs::read(&path) {
        Ok(bytes) => Ok(Some(String::from_utf8_lossy(&bytes).into_owned())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error("cannot read the run index", &path, e)),
    }
}

/// Run `run`'s journal: its file from before segments, then its extents in
/// the order written, whole lines of `run` only; `None` when it has none.
pub(in crate::state) fn read_run(dir: &Path, run: &str) -> Result<Option<String>> {
    check_run_id(run)?;
    let mut text = String::new();
    let mut found = false;
    if let Some(t) = legacy::read(dir, run)? {
        text = t;
        found = true;
    }
    let Some(index) = read_index(dir)? else {
        return Ok(found.then_some(text));
    };
    let prefix = format!("{{\"run_id\":\"{run}\"");
    let own = format!("{{\"run\":\"{run}\",");
    let mut open: HashMap<String, Option<File>> = HashMap::new();
    for line in index.lines().filter(|l| l.starts_with(&prefix)) {
        let Ok(u) = serde_json::from_str::<SummaryUpdate>(line) else {
            continue;
        };
        if u.run_id != run {
            continue;
        }
        for (seg, off, len) in u.extents {
            found = true;
            if !segment_name_ok(&seg) {
                continue;
            }
            let f = open
                .entry(seg.clone())
                .or_insert_with(|| File::open(dir.join(&seg)).ok());
            let Some(f) = f else { continue };
            let mut bytes = vec![0u8; len as usize];
            let n = read_at_most(f, &mut bytes, off);
            bytes.truncate(n);
            let chunk = String::from_utf8_lossy(&bytes);
            // Whole lines of this run only (a power cut may have left less
            // than the index says).
            for l in chunk.split_inclusive('\n') {
                if l.ends_with('\n') && l.starts_with(&own) {
                    text.push_str(l);
                }
            }
        }
    }
    Ok(found.then_some(text))
}
