//! PostgreSQL for tests: the shared cluster's URL (`LOBSTER_TEST_PG_URL`), and
//! a throwaway cluster of one test's own, for tests that stop or restart their
//! database (so no other test is disturbed). Shared by the journal's unit
//! tests, the store conformance suite and the cli and serve test crates
//! (included with `#[path]`).

use std::path::{Path, PathBuf};

/// The PostgreSQL URL for tests, or `None` (after a loud skip message).
pub fn pg_url() -> Option<String> {
    match std::env::var("LOBSTER_TEST_PG_URL") {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "LOBSTER_TEST_PG_URL is not set under CI=true: the PostgreSQL store tests must run \
                 (start a cluster with `bash tests/pg.sh start` and export its URL)"
            );
            eprintln!(
                "\n*** SKIPPED: a PostgreSQL store test: set LOBSTER_TEST_PG_URL \
                 (e.g. `export LOBSTER_TEST_PG_URL=$(bash tests/pg.sh start)`) ***\n"
            );
            None
        }
    }
}

/// `tests/pg.sh what` with `LOBSTER_PG_DIR=dir`; its stdout, trimmed.
/// Fails the test when the script fails.
pub fn pg_sh(dir: &Path, what: &str) -> String {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/pg.sh");
    let out = std::process::Command::new("bash")
        .arg(script)
        .arg(what)
        .env("LOBSTER_PG_DIR", dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "pg.sh {what}: {out:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// A cluster started by tests/pg.sh (as CI starts the shared one) in a
/// directory of its own; stopped when dropped.
pub struct OwnCluster {
    _parent: tempfile::TempDir,
    /// Its data directory (for `pg_sh(dir, "kill" | "start")`).
    pub dir: PathBuf,
    /// Its URL (a unix socket).
    pub url: String,
}

impl OwnCluster {
    /// Start one.
    pub fn start() -> OwnCluster {
        let parent = tempfile::tempdir().unwrap();
        // The server runs as the postgres user: let it reach its directory.
        std::fs::set_permissions(
            parent.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        let dir = parent.path().join("pg");
        let url = pg_sh(&dir, "start");
        OwnCluster {
            _parent: parent,
            dir,
            url,
        }
    }
}

impl Drop for OwnCluster {
    fn drop(&mut self) {
        // Not pg_sh: a failed stop must not panic inside a drop.
        let _ = std::process::Command::new("bash")
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/pg.sh"))
            .arg("stop")
            .env("LOBSTER_PG_DIR", &self.dir)
            .output();
    }
}
