//! The index folded in memory, kept per journal directory and brought up to
//! date by reading only what was appended since the last look.
//!
//! Every read of the journal (a resume continuing its run's chain, `runs
//! show`, `GET /v1/runs/{id}/journal`, a run page, `runs list`) used to read
//! and fold the whole `index.log`: two lines per run ever journaled, so a
//! resume after 60,000 runs read ~30 MB. Now each process keeps, per
//! directory, each run's summary and extents folded from the index up to the
//! end of its last whole line, with the index file held open: a later read
//! folds only the lines appended since (by any process). A prune replaces the
//! index (a new file, renamed over it): the path then names another inode
//! than the held file — which, being open, cannot be freed and its inode
//! number reused — and the fold starts again from the new file. A line not
//! yet whole (a write in progress, or a torn tail) is read again next time;
//! a line that does not parse (a torn line the writer ended with a newline)
//! is skipped, as before.

use super::io_error;
use crate::error::Result;
use crate::state::journal::{RunSummary, SummaryUpdate};
use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// Where some of a run's records are: segment file name, offset, length.
pub(in crate::state) type Extent = (String, u64, u64);

/// Each run's summary and the extents of its records in the order written.
pub(in crate::state) type Folded = HashMap<String, (RunSummary, Vec<Extent>)>;

/// One directory's index as folded so far.
struct Cache {
    /// The index file the fold was read from (held open: see the module docs).
    file: File,
    /// Bytes of it folded (the end of the last whole line).
    read_to: u64,
    runs: Folded,
}

fn caches() -> &'static Mutex<HashMap<PathBuf, Cache>> {
    static CACHES: OnceLock<Mutex<HashMap<PathBuf, Cache>>> = OnceLock::new();
    CACHES.get_or_init(Mutex::default)
}

/// Fold the lines of `text` (whole lines only) into `runs`.
pub(in crate::state) fn fold_into(runs: &mut Folded, text: &[u8]) {
    // A torn line (a power cut) does not parse and is skipped.
    for line in text.split(|&b| b == b'\n') {
        if line.is_empty() {
            continue;
        }
        let Ok(mut u) = serde_json::from_slice::<SummaryUpdate>(line) else {
            continue;
        };
        let (s, extents) = runs.entry(u.run_id.clone()).or_default();
        extents.append(&mut u.extents);
        u.apply(s);
    }
}

/// Append `u` to `out` as one index line (no newline): the JSON serde
/// writes for a [`SummaryUpdate`] (same fields, order and omissions; the
/// fold reads it back with serde), written by hand because the writer
/// writes one per run per window (through serde it cost ~4,000
/// instructions, most of `lobster serve`'s per-run index work).
pub(in crate::state) fn push_index_line(out: &mut String, u: &SummaryUpdate) {
    use crate::value::write_json_string as string;
    let mut n = itoa::Buffer::new();
    out.push_str("{\"run_id\":");
    string(out, &u.run_id);
    out.push_str(",\"events\":");
    out.push_str(n.format(u.events));
    out.push_str(",\"head\":");
    string(out, &u.head);
    if let Some((name, door, at)) = &u.started {
        out.push_str(",\"started\":[");
        string(out, name);
        out.push(',');
        string(out, door);
        out.push(',');
        string(out, at);
        out.push(']');
    }
    for (key, v) in [(",\"status\":", &u.status), (",\"gate\":", &u.gate)] {
        if let Some(v) = v {
            out.push_str(key);
            string(out, v);
        }
    }
    if u.clear_gate {
        out.push_str(",\"clear_gate\":true");
    }
    if let Some(at) = &u.ended_at {
        out.push_str(",\"ended_at\":");
        string(out, at);
    }
    if !u.extents.is_empty() {
        out.push_str(",\"extents\":[");
        for (i, (seg, off, len)) in u.extents.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push('[');
            string(out, seg);
            out.push(',');
            out.push_str(n.format(*off));
            out.push(',');
            out.push_str(n.format(*len));
            out.push(']');
        }
        out.push(']');
    }
    out.push('}');
}

/// Call `f` with the index of the journal in `dir` folded up to date
/// (everything this process sent is written first); `None` when there is
/// no index.
pub(in crate::state) fn with_index<R>(
    dir: &Path,
    f: impl FnOnce(&Folded) -> R,
) -> Result<Option<R>> {
    super::writers::flush_dir(dir);
    let path = dir.join("index.log");
    let live = match std::fs::metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            caches()
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(dir);
            return Ok(None);
        }
        Err(e) => return Err(io_error("cannot read the run index", &path, e)),
    };
    let mut all = caches().lock().unwrap_or_else(|p| p.into_inner());
    let same = all.get(dir).is_some_and(|c| {
        c.file
            .metadata()
            .is_ok_and(|m| m.ino() == live.ino() && m.dev() == live.dev() && m.len() >= c.read_to)
    });
    if !same {
        all.remove(dir);
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_error("cannot read the run index", &path, e)),
        };
        all.insert(
            dir.to_path_buf(),
            Cache {
                file,
                read_to: 0,
                runs: Folded::new(),
            },
        );
    }
    let cache = all.get_mut(dir).expect("inserted");
    let len = cache
        .file
        .metadata()
        .map_err(|e| io_error("cannot read the run index", &path, e))?
        .len();
    if len > cache.read_to {
        let mut bytes = vec![0u8; (len - cache.read_to) as usize];
        let mut done = 0;
        while done < bytes.len() {
            match cache
                .file
                .read_at(&mut bytes[done..], cache.read_to + done as u64)
            {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io_error("cannot read the run index", &path, e)),
            }
        }
        bytes.truncate(done);
        // Whole lines only: the rest is read again next time.
        let whole = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        fold_into(&mut cache.runs, &bytes[..whole]);
        cache.read_to += whole as u64;
    }
    Ok(Some(f(&cache.runs)))
}

/// Forget the folded indexes (tests: as a new process would start).
#[cfg(test)]
pub(in crate::state) fn forget() {
    caches().lock().unwrap_or_else(|p| p.into_inner()).clear();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::journal::{test_record as rec, RunFilter, SummaryUpdate};
    use crate::state::StateStore;

    /// Run `id`: started at second `at` of the day, two records, ended.
    fn journal_run(store: &StateStore, id: &str, at: u32) {
        let mut w = store.journal_writer(id).unwrap();
        let start = SummaryUpdate {
            run_id: id.into(),
            started: Some((
                "w".into(),
                "cli".into(),
                format!(
                    "2026-12-01T{:02}:{:02}:{:02}.000Z",
                    at / 3600,
                    at / 60 % 60,
                    at % 60
                ),
            )),
            status: Some("running".into()),
            ..Default::default()
        };
        w.append(rec(0).as_record(), Some(start), false).unwrap();
        let end = SummaryUpdate {
            run_id: id.into(),
            status: Some("ok".into()),
            ended_at: Some("2026-12-01T23:59:59.000Z".into()),
            ..Default::default()
        };
        w.append(rec(1).as_record(), Some(end), false).unwrap();
    }

    /// Everything a reader sees of `store`: the list, each run's summary
    /// and journal.
    fn seen(store: &StateStore) -> Vec<(String, String, u64, Option<String>)> {
        store
            .journal_runs(&RunFilter::default())
            .unwrap()
            .into_iter()
            .map(|s| {
                let one = store.journal_summary(&s.run_id).unwrap().unwrap();
                assert_eq!(one, s);
                let text = store.journal_text(&s.run_id).unwrap();
                (s.run_id, s.status, s.events, text)
            })
            .collect()
    }

    /// The fold kept in memory, and the index's length.
    fn cached(dir: &Path) -> (u64, usize, u64) {
        let all = caches().lock().unwrap();
        let c = &all[&dir.join("journal")];
        let len = std::fs::metadata(dir.join("journal/index.log"))
            .unwrap()
            .len();
        (c.read_to, c.runs.len(), len)
    }

    #[test]
    fn the_folded_index_stays_the_index_across_many_runs_a_prune_and_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::new(dir.path());
        for i in 0..300 {
            journal_run(&store, &format!("r{i:04}"), i);
        }
        let first = seen(&store);
        assert_eq!(first.len(), 300);
        assert!(first.iter().all(|(_, st, n, t)| st == "ok"
            && *n == 2
            && t.as_deref().is_some_and(|t| t.lines().count() == 2)));
        let (read_to, runs, len) = cached(dir.path());
        assert_eq!((read_to, runs), (len, 300));
        // More runs: read on from where the fold stopped, and the same as a
        // fold of the whole index (a new process).
        for i in 300..700 {
            journal_run(&store, &format!("r{i:04}"), i);
        }
        let more = seen(&store);
        assert_eq!(more.len(), 700);
        assert_eq!(cached(dir.path()).1, 700);
        // A page is the newest of the whole list.
        let all = store.journal_runs(&RunFilter::default()).unwrap();
        for n in [0, 1, 7, 50, 699, 700, 900] {
            let page = RunFilter {
                limit: Some(n),
                ..Default::default()
            };
            assert_eq!(store.journal_runs(&page).unwrap(), all[..n.min(700)]);
        }
        forget();
        assert_eq!(seen(&store), more);
        // A prune replaces the index: the fold starts again from it.
        let pruned = store
            .journal_prune("2026-12-01T00:05:00.000Z", 1000)
            .unwrap();
        assert_eq!(pruned.len(), 300);
        let after = seen(&store);
        assert_eq!(after.len(), 700);
        let tomb = after.iter().find(|r| r.0 == "r0000").unwrap();
        assert_eq!((tomb.1.as_str(), &tomb.3), ("pruned", &None));
        let kept = after.iter().find(|r| r.0 == "r0300").unwrap();
        assert_eq!(kept.3.as_deref().map(|t| t.lines().count()), Some(2));
        journal_run(&store, "r9999", 9999);
        let last = seen(&store);
        assert_eq!(last.len(), 701);
        forget();
        assert_eq!(seen(&store), last);
    }

    /// The hand-written index line is serde's line for every field, set
    /// or not, and strings that need escapes; and it folds back to the same
    /// update.
    #[test]
    fn an_index_line_is_the_summary_update_serde_writes() {
        let full = SummaryUpdate {
            run_id: "r-1".into(),
            events: u64::MAX,
            head: "ab".repeat(32),
            started: Some((
                "wf \"quoted\" \\ tab\t nl\n ctl\u{1} é ✓".into(),
                "serve".into(),
                "2026-12-02T12:00:00.000Z".into(),
            )),
            status: Some("needs_approval".into()),
            gate: Some("abcd1234".into()),
            clear_gate: true,
            ended_at: Some("2026-12-02T12:00:01.000Z".into()),
            extents: vec![
                ("seg-00000001.log".into(), 0, 10),
                ("seg-00000002.log".into(), 7, 0),
            ],
        };
        let bare = SummaryUpdate {
            run_id: "r".into(),
            ..Default::default()
        };
        let some = SummaryUpdate {
            status: Some("ok".into()),
            ended_at: Some("t".into()),
            extents: vec![("seg-00000003.log".into(), 123_456_789, 42)],
            ..full.clone()
        };
        for u in [full, bare, some] {
            let mut line = String::new();
            push_index_line(&mut line, &u);
            let serde = serde_json::to_string(&u).unwrap();
            let ours: serde_json::Value = serde_json::from_str(&line).unwrap();
            let theirs: serde_json::Value = serde_json::from_str(&serde).unwrap();
            assert_eq!(ours, theirs, "{line}");
            // Byte for byte but for the one control character (`\u0001`
            // either way, in other hex case).
            assert_eq!(line.to_lowercase(), serde.to_lowercase());
            let mut folded = Folded::new();
            fold_into(&mut folded, format!("{line}\n").as_bytes());
            let (s, extents) = &folded[&u.run_id];
            let mut want = RunSummary::default();
            u.apply(&mut want);
            assert_eq!((s, extents), (&want, &u.extents));
        }
    }

    #[test]
    fn a_line_another_process_is_still_writing_is_folded_once_whole() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::new(dir.path());
        journal_run(&store, "mine", 1);
        assert_eq!(store.journal_runs(&RunFilter::default()).unwrap().len(), 1);
        // Another process appends a line in two parts (and a torn line it
        // ended with a newline before).
        let line = serde_json::to_string(&SummaryUpdate {
            run_id: "theirs".into(),
            started: Some(("w".into(), "cli".into(), "2026-12-01T00:00:02.000Z".into())),
            status: Some("running".into()),
            ..Default::default()
        })
        .unwrap();
        let index = dir.path().join("journal/index.log");
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&index)
            .unwrap();
        let (a, b) = line.split_at(20);
        std::io::Write::write_all(&mut f, b"{\"run_id\":\"torn\n").unwrap();
        std::io::Write::write_all(&mut f, a.as_bytes()).unwrap();
        assert!(store.journal_summary("theirs").unwrap().is_none());
        std::io::Write::write_all(&mut f, format!("{b}\n").as_bytes()).unwrap();
        let s = store.journal_summary("theirs").unwrap().unwrap();
        assert_eq!(s.status, "running");
        assert_eq!(store.journal_runs(&RunFilter::default()).unwrap().len(), 2);
        assert!(store.journal_summary("torn").unwrap().is_none());
    }
}
