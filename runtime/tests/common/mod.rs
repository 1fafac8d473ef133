//! What the sandbox test binaries share: where the guests are, and the
//! component cache. Each binary uses part of it, hence the `allow`.
#![allow(dead_code)]

use lobster::sandbox::ArtifactCache;
use std::path::{Path, PathBuf};

/// The repository's root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The hostile and probe guests `tests/build-guests.sh` builds.
pub fn test_guest_dir() -> PathBuf {
    repo().join("tests/guests/target/wasm32-wasip2/release")
}

/// The example steps.
pub fn example_dir() -> PathBuf {
    repo().join("examples/steps/target/wasm32-wasip2/release")
}

/// The compiled-component cache the tests share.
pub fn cache() -> ArtifactCache {
    ArtifactCache::new(Path::new(env!("CARGO_TARGET_TMPDIR")).join("lobster-wasm-cache"))
}

/// The guest `file` in `dir`, or `None` after a loud skip message. Under CI
/// (and in `tests/run.sh`, which sets `LOBSTER_REQUIRE_GUESTS`) a missing
/// guest fails the test instead: a skipped hostile test proves nothing.
pub fn wasm(dir: &Path, file: &str) -> Option<PathBuf> {
    let path = dir.join(file);
    if path.is_file() {
        Some(path)
    } else if std::env::var_os("CI").is_some()
        || std::env::var_os("LOBSTER_REQUIRE_GUESTS").is_some()
    {
        panic!(
            "{} is missing; tests/build-guests.sh must run first",
            path.display()
        );
    } else {
        eprintln!(
            "\n!!!!!!!!!! SKIPPED: {} is missing; run tests/build-guests.sh first !!!!!!!!!!\n",
            path.display()
        );
        None
    }
}

/// A test guest by file name (see [`wasm`]).
pub fn guest(file: &str) -> Option<PathBuf> {
    wasm(&test_guest_dir(), file)
}
