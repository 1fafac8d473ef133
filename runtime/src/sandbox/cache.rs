//! Compiled-artefact cache under `<state dir>/cache/wasm/`.
//!
//! Key: blake3 of the component bytes + the engine fingerprint (wasmtime
//! version, target, our configuration). Next to every `.cwasm` is a `.meta`
//! header with the same key and the blake3 of the `.cwasm` itself; an entry
//! whose header is missing, stale or does not match its artefact is
//! recompiled, never deserialised. Both files are written atomically
//! (artefact first, header last).
//!
//! A hit touches the artefact's modification time; every compile then
//! removes entries unused for [`MAX_IDLE`] (old component versions, other
//! engine fingerprints) and temp files a killed process left, so the cache
//! does not grow for ever.

use super::engine::SandboxEngine;
use super::error::SandboxError;
use crate::state::{sweep_orphans, write_atomic, ORPHAN_AGE};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};
use wasmtime::component::Component;

const MAGIC: &str = "lobster-cwasm v1";

/// How long an entry may go unused before the next compile removes it.
pub const MAX_IDLE: Duration = Duration::from_secs(30 * 24 * 60 * 60);

/// How a component was obtained.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheOutcome {
    /// Loaded from a valid cache entry.
    Hit,
    /// Compiled (no entry, or no cache directory).
    Compiled,
    /// An entry existed but was rejected (the reason) and was recompiled.
    Recompiled(String),
}

/// Where compiled artefacts live; `None` compiles every time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtifactCache {
    dir: Option<PathBuf>,
}

impl ArtifactCache {
    /// A cache in `dir` (created on first write).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        ArtifactCache {
            dir: Some(dir.into()),
        }
    }

    /// The cache of a state directory: `<state>/cache/wasm`.
    pub fn in_state_dir(state_dir: &Path) -> Self {
        ArtifactCache::new(state_dir.join("cache").join("wasm"))
    }

    /// No cache: compile in memory every time.
    pub fn disabled() -> Self {
        ArtifactCache { dir: None }
    }

    /// The cache directory, if any.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// Paths of the artefact and its header for `digest` under `engine`.
    pub fn entry_paths(&self, engine: &SandboxEngine, digest: &str) -> Option<(PathBuf, PathBuf)> {
        let dir = self.dir.as_ref()?;
        let stem = format!("{digest}-{}", engine.fingerprint());
        Some((
            dir.join(format!("{stem}.cwasm")),
            dir.join(format!("{stem}.meta")),
        ))
    }

    /// The compiled component for `bytes` (whose blake3 is `digest`).
    pub fn load(
        &self,
        engine: &SandboxEngine,
        bytes: &[u8],
        digest: &str,
        source: &Path,
    ) -> Result<(Component, CacheOutcome), SandboxError> {
        let Some((art, meta)) = self.entry_paths(engine, digest) else {
            let c = Component::new(engine.engine(), bytes).map_err(|e| bad(source, e))?;
            return Ok((c, CacheOutcome::Compiled));
        };
        let outcome = match read_valid(engine, digest, &art, &meta) {
            Ok(c) => {
                // Mark the entry used (see `prune`); failing that is harmless.
                let _ = std::fs::File::options()
                    .write(true)
                    .open(&art)
                    .and_then(|f| f.set_modified(SystemTime::now()));
                return Ok((c, CacheOutcome::Hit));
            }
            Err(Reject::Missing) => CacheOutcome::Compiled,
            Err(Reject::Invalid(why)) => CacheOutcome::Recompiled(why),
        };
        let compiled = engine
            .engine()
            .precompile_component(bytes)
            .map_err(|e| bad(source, e))?;
        // A cache we cannot write is not fatal: the step still runs.
        let _ = store(engine, digest, &compiled, &art, &meta);
        // SAFETY: `compiled` was produced by this engine a moment ago.
        let c = unsafe { Component::deserialize(engine.engine(), &compiled) }
            .map_err(|e| bad(source, e))?;
        Ok((c, outcome))
    }
}

fn bad(source: &Path, e: wasmtime::Error) -> SandboxError {
    SandboxError::BadComponent {
        path: source.to_path_buf(),
        detail: format!("not a valid WebAssembly component: {e:#}"),
    }
}

enum Reject {
    Missing,
    Invalid(String),
}

fn header(engine: &SandboxEngine, digest: &str, artefact: &[u8]) -> String {
    format!(
        "{MAGIC}\nsource {digest}\nfingerprint {}\nartifact {}\nlength {}\n",
        engine.fingerprint(),
        blake3::hash(artefact).to_hex(),
        artefact.len()
    )
}

fn read_valid(
    engine: &SandboxEngine,
    digest: &str,
    art: &Path,
    meta: &Path,
) -> Result<Component, Reject> {
    let meta_text = match std::fs::read_to_string(meta) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Reject::Missing),
        Err(e) => return Err(Reject::Invalid(format!("unreadable header: {e}"))),
    };
    let artefact =
        std::fs::read(art).map_err(|e| Reject::Invalid(format!("unreadable artefact: {e}")))?;
    if meta_text != header(engine, digest, &artefact) {
        return Err(Reject::Invalid(
            "header does not match the artefact (corrupt or stale)".into(),
        ));
    }
    // SAFETY: the artefact is byte-for-byte what this host wrote for this
    // engine configuration (checked through the header's blake3 digest).
    unsafe { Component::deserialize(engine.engine(), &artefact) }
        .map_err(|e| Reject::Invalid(format!("deserialize failed: {e}")))
}

fn store(
    engine: &SandboxEngine,
    digest: &str,
    artefact: &[u8],
    art: &Path,
    meta: &Path,
) -> std::io::Result<()> {
    if let Some(dir) = art.parent() {
        std::fs::create_dir_all(dir)?;
    }
    write_atomic(art, artefact)?;
    write_atomic(meta, header(engine, digest, artefact).as_bytes())?;
    if let Some(dir) = art.parent() {
        prune(dir, MAX_IDLE);
    }
    Ok(())
}

/// Remove from cache directory `dir` every entry whose artefact has not
/// been used for `max_idle` (its header with it), every header without an
/// artefact, and orphaned temp files. Returns how many entries went.
pub fn prune(dir: &Path, max_idle: Duration) -> usize {
    sweep_orphans(dir, ORPHAN_AGE);
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let cutoff = SystemTime::now()
        .checked_sub(max_idle)
        .unwrap_or(SystemTime::UNIX_EPOCH);
    let mut removed = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        let stale = match path.extension().and_then(|e| e.to_str()) {
            Some("cwasm") => entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t < cutoff),
            Some("meta") => !path.with_extension("cwasm").exists(),
            _ => false,
        };
        if stale && std::fs::remove_file(&path).is_ok() {
            let _ = std::fs::remove_file(path.with_extension("meta"));
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prune_removes_idle_entries_and_lone_headers_only() {
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str| {
            std::fs::write(dir.path().join(name), "x").unwrap();
        };
        for name in [
            "old.cwasm",
            "old.meta",
            "new.cwasm",
            "new.meta",
            "lone.meta",
            "other.txt",
        ] {
            file(name);
        }
        let long_ago = SystemTime::now() - Duration::from_secs(40 * 24 * 60 * 60);
        std::fs::File::options()
            .write(true)
            .open(dir.path().join("old.cwasm"))
            .unwrap()
            .set_modified(long_ago)
            .unwrap();
        assert_eq!(prune(dir.path(), MAX_IDLE), 2);
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["new.cwasm", "new.meta", "other.txt"]);
    }
}
