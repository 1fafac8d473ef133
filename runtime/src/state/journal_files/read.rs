//! Reading the journal back: a run's records by the extents the index
//! names (whole lines of that run only, so a torn or foreign line in a
//! segment is never part of a run's journal), the extents taken from the
//! index folded in memory (`index`).

use super::index::with_index;
use super::legacy;
use super::segments::{read_at_most, segment_name_ok};
use crate::error::Result;
use crate::state::journal::check_run_id;
use std::collections::HashMap;
use std::fs::File;
use std::path::Path;

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
    let extents = with_index(dir, |runs| {
        runs.get(run).map(|(_, e)| e.clone()).unwrap_or_default()
    })?
    .unwrap_or_default();
    let own = format!("{{\"run\":\"{run}\",");
    let mut open: HashMap<String, Option<File>> = HashMap::new();
    for (seg, off, len) in extents {
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
    Ok(found.then_some(text))
}
