//! Test fixtures: records older code wrote, kept under `runtime/tests/fixtures/`
//! (each directory's README says how they were captured). The tests of the
//! typed records (`state::run_record`, `resume::interrupted`) parse and
//! write back every one.

use std::path::PathBuf;

/// The `*.json` files of `runtime/tests/fixtures/<dir>` as (file stem,
/// text), sorted by name; at least `min` of them, or the test fails
/// naming the directory (a fixture set that went missing must not pass
/// by reading nothing).
pub(crate) fn json_fixtures(dir: &str, min: usize) -> Vec<(String, String)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(dir);
    let mut out: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect();
    out.sort();
    assert!(out.len() >= min, "fixtures in {}", dir.display());
    out
}
