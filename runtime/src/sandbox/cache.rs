//! Compiled-artefact cache under `<state dir>/cache/wasm/`.
//!
//! Key: blake3 of the component bytes + the engine fingerprint (wasmtime
//! version, target, our configuration). Next to every `.cwasm` is a `.meta`
//! header with the same key and the blake3 of the `.cwasm` itself; an entry
//! whose header is missing, stale or does not match its artefact is
//! recompiled, never deserialised. Both files are written atomically
//! (artefact first, header last).

use super::engine::SandboxEngine;
use super::error::SandboxError;
use crate::state::write_atomic;
use std::path::{Path, PathBuf};
use wasmtime::component::Component;

const MAGIC: &str = "lobster-cwasm v1";

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
            Ok(c) => return Ok((c, CacheOutcome::Hit)),
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
    write_atomic(meta, header(engine, digest, artefact).as_bytes())
}
