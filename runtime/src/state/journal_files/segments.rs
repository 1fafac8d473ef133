//! The segment files: `seg-<seq, 8 digits>.log` in the journal directory,
//! records appended one line each, shared by every writer of every process
//! (under the index's lock).

use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

/// The file name of segment `seq`.
pub(super) fn segment_name(seq: u64) -> String {
    format!("seg-{seq:08}.log")
}

/// Open a segment to append to; `new`: create it (using the one another
/// writer made meanwhile).
pub(super) fn open_segment(path: &Path, new: bool) -> std::result::Result<File, String> {
    let mut o = OpenOptions::new();
    o.read(true).append(true).mode(0o600);
    if new {
        o.create_new(true);
    }
    match o.open(path) {
        Ok(f) => Ok(f),
        // Made meanwhile by a writer that did not lock (none does): use it.
        Err(e) if new && e.kind() == std::io::ErrorKind::AlreadyExists => open_segment(path, false),
        Err(e) => Err(format!(
            "cannot open journal segment {}: {e}",
            path.display()
        )),
    }
}

/// Whether the file of length `len` (> 0) ends with a newline.
pub(super) fn ends_with_newline(f: &File, len: u64) -> bool {
    let mut last = [0u8; 1];
    f.read_exact_at(&mut last, len - 1).is_ok() && last[0] == b'\n'
}

/// The segments in `dir` by sequence: (seq, file name).
pub(super) fn segments(dir: &Path) -> std::io::Result<Vec<(u64, String)>> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut out: Vec<(u64, String)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let seq = name
                .strip_prefix("seg-")?
                .strip_suffix(".log")?
                .parse()
                .ok()?;
            Some((seq, name))
        })
        .collect();
    out.sort();
    Ok(out)
}

/// Whether `name` is a segment's file name (so an index line opens no
/// other file).
pub(super) fn segment_name_ok(name: &str) -> bool {
    name.strip_prefix("seg-")
        .and_then(|r| r.strip_suffix(".log"))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Read into `buf` from `off` as much as there is (less at the end of
/// the file or on an error); how much was read.
pub(super) fn read_at_most(f: &File, buf: &mut [u8], off: u64) -> usize {
    let mut done = 0;
    while done < buf.len() {
        match f.read_at(&mut buf[done..], off + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    done
}
