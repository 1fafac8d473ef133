//! What the sandbox test binaries share: where the guests are, the
//! component cache, the default limits. Each binary uses part of it,
//! hence the `allow`.
#![allow(dead_code)]

use lobster::sandbox::{self, ArtifactCache, EffectiveLimits};
use std::path::{Path, PathBuf};
use std::time::Duration;

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

/// The default limits, with a deadline long enough for a loaded machine.
pub fn limits() -> EffectiveLimits {
    EffectiveLimits {
        fuel: sandbox::DEFAULT_FUEL,
        memory_bytes: sandbox::DEFAULT_MEMORY_BYTES,
        timeout: Some(Duration::from_secs(30)),
        output_bytes: sandbox::DEFAULT_OUTPUT_BYTES,
    }
}

/// A step's arguments.
pub fn args(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
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

/// Two components to put in each other's place on disk — noop and probe,
/// their bytes and digests — and a `steps/` folder under a fresh canonical
/// temporary directory: the set-up of the tests that change a component
/// file under the resolver.
pub struct SwapSetup {
    /// noop's bytes.
    pub noop: Vec<u8>,
    /// probe's bytes.
    pub probe: Vec<u8>,
    /// noop's blake3 digest, in hex.
    pub noop_digest: String,
    /// probe's blake3 digest, in hex.
    pub probe_digest: String,
    /// The temporary directory, canonical (the resolver compares paths).
    pub cwd: PathBuf,
    /// `cwd/steps`, created.
    pub steps: PathBuf,
    _tmp: tempfile::TempDir,
}

/// [`SwapSetup`], or `None` when the guests are not built (see [`wasm`]).
pub fn swap_setup() -> Option<SwapSetup> {
    let noop = std::fs::read(guest("noop.wasm")?).unwrap();
    let probe = std::fs::read(guest("probe.wasm")?).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path().canonicalize().unwrap();
    let steps = cwd.join("steps");
    std::fs::create_dir_all(&steps).unwrap();
    Some(SwapSetup {
        noop_digest: blake3::hash(&noop).to_hex().to_string(),
        probe_digest: blake3::hash(&probe).to_hex().to_string(),
        noop,
        probe,
        cwd,
        steps,
        _tmp: tmp,
    })
}
