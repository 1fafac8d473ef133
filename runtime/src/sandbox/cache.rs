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
use super::flight::{self, Failure, Landed, Role};
use crate::state::{sweep_orphans, write_atomic, ORPHAN_AGE};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};
use wasmtime::component::Component;

const MAGIC: &str = "lobster-cwasm v1";

/// How long an entry may go unused before the next compile removes it.
pub const MAX_IDLE: Duration = Duration::from_secs(30 * 24 * 60 * 60);

/// Default bound on the artefacts' total size (`LOBSTER_WASM_CACHE_BYTES`
/// overrides): 1 GiB, about 25 compiled Python steps. Past it the least
/// recently used entries go first.
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;

/// `LOBSTER_WASM_CACHE_BYTES` when it is a number, else [`DEFAULT_MAX_BYTES`].
fn max_bytes_from_env() -> u64 {
    std::env::var("LOBSTER_WASM_CACHE_BYTES")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(DEFAULT_MAX_BYTES)
}

fn compile_limit() -> Result<Duration, SandboxError> {
    super::compile::compile_limit()
}

/// How a component was obtained.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheOutcome {
    /// Loaded from a valid cache entry.
    Hit,
    /// Compiled (no entry, or no cache directory).
    Compiled,
    /// An entry existed but was rejected (the reason) and was recompiled.
    Recompiled(String),
    /// Compiled once for several loads at the same time: this one waited
    /// for another's compile (see [`super::flight`]).
    Joined,
}

/// Where compiled artefacts live; `None` compiles every time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtifactCache {
    dir: Option<PathBuf>,
    max_bytes: u64,
}

impl ArtifactCache {
    /// A cache in `dir` (created on first write).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        ArtifactCache {
            dir: Some(dir.into()),
            max_bytes: max_bytes_from_env(),
        }
    }

    /// The cache of a state directory: `<state>/cache/wasm`, or
    /// `LOBSTER_WASM_CACHE_DIR` when set (one cache shared by several state
    /// directories, e.g. warmed once at deploy time).
    pub fn in_state_dir(state_dir: &Path) -> Self {
        match std::env::var_os("LOBSTER_WASM_CACHE_DIR").filter(|v| !v.is_empty()) {
            Some(dir) => ArtifactCache::new(PathBuf::from(dir)),
            None => ArtifactCache::new(state_dir.join("cache").join("wasm")),
        }
    }

    /// No cache: compile in memory every time.
    pub fn disabled() -> Self {
        ArtifactCache {
            dir: None,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }

    /// The same cache bounded to `max_bytes` of artefacts.
    pub fn with_max_bytes(mut self, max_bytes: u64) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// The bound on the artefacts' total size.
    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
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
    ///
    /// One load per digest and cache directory at a time: a caller that
    /// asks while another's load of the same component is under way waits
    /// for that one ([`super::flight`]) and gets [`CacheOutcome::Joined`]
    /// when it compiled.
    pub fn load(
        &self,
        engine: &'static SandboxEngine,
        bytes: &[u8],
        digest: &str,
        source: &Path,
    ) -> Result<(Component, CacheOutcome), SandboxError> {
        if let Some(why) = not_a_component(bytes) {
            return Err(SandboxError::BadComponent {
                path: source.to_path_buf(),
                detail: why,
            });
        }
        let limit = compile_limit()?;
        let lead = match flight::lead_or_follow(self.dir(), digest) {
            Role::Follow(flight) => {
                let landed = super::compile::wait(&flight, source, bytes.len(), limit)?;
                let outcome = match landed.outcome {
                    CacheOutcome::Hit => CacheOutcome::Hit,
                    _ => CacheOutcome::Joined,
                };
                return Ok((landed.component, outcome));
            }
            Role::Lead(lead) => lead,
        };
        let entry = self.entry_paths(engine, digest);
        let outcome = match &entry {
            None => CacheOutcome::Compiled,
            Some((art, meta)) => match read_valid(engine, digest, art, meta) {
                Ok(c) => {
                    // Mark the entry used (see `prune`); failing that is harmless.
                    let _ = std::fs::File::options()
                        .write(true)
                        .open(art)
                        .and_then(|f| f.set_modified(SystemTime::now()));
                    lead.land(Ok(Landed {
                        component: c.clone(),
                        outcome: CacheOutcome::Hit,
                        stored: true,
                    }));
                    return Ok((c, CacheOutcome::Hit));
                }
                Err(Reject::Missing) => CacheOutcome::Compiled,
                Err(Reject::Invalid(why)) => CacheOutcome::Recompiled(why),
            },
        };
        let flight = lead.flight();
        let owned = bytes.to_vec();
        let (dig, max_bytes) = (digest.to_string(), self.max_bytes);
        super::compile::spawn(move || {
            let compiled = engine
                .engine()
                .precompile_component(&owned)
                .map_err(|e| Failure::Bad(bad_detail(e)));
            let landed = compiled.and_then(|compiled| {
                // A cache we cannot write is not fatal: the step still runs.
                let stored = entry.as_ref().is_some_and(|(art, meta)| {
                    store(engine, &dig, &compiled, art, meta, max_bytes).is_ok()
                });
                // SAFETY: `compiled` was produced by this engine a moment ago.
                let component = unsafe { Component::deserialize(engine.engine(), &compiled) }
                    .map_err(|e| Failure::Bad(bad_detail(e)))?;
                Ok(Landed {
                    component,
                    outcome,
                    stored,
                })
            });
            lead.land(landed);
        })?;
        let landed = super::compile::wait(&flight, source, bytes.len(), limit)?;
        Ok((landed.component, landed.outcome))
    }
}

fn bad_detail(e: wasmtime::Error) -> String {
    format!(
        "not a valid WebAssembly component: {}",
        one_line(&format!("{e:#}"))
    )
}

/// What is wrong with `bytes` before any parsing: not WebAssembly at all, or
/// a core module rather than a component. `None` when the header is a
/// component's (what is inside is the compiler's to judge).
pub fn not_a_component(bytes: &[u8]) -> Option<String> {
    const FIX: &str = "a step is a component built for wasm32-wasip2 (`cargo build --target wasm32-wasip2`, `lobster step build`)";
    if bytes.len() < 8 || &bytes[..4] != b"\0asm" {
        return Some(format!(
            "not a WebAssembly file ({} bytes, without the \\0asm header); {FIX}",
            bytes.len()
        ));
    }
    match &bytes[4..8] {
        [1, 0, 0, 0] => Some(format!(
            "a core WebAssembly module, not a component; {FIX}, or wrap the module with `wasm-tools component new`"
        )),
        _ => None,
    }
}

/// A compiler message on one line: wasmparser's debug output spreads byte
/// arrays over many indented lines (`expected=[\n    0x0,\n …]`).
fn one_line(text: &str) -> String {
    let mut out = String::new();
    for part in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if !(out.is_empty() || out.ends_with('[') || part.starts_with(']')) {
            out.push(' ');
        }
        out.push_str(part);
    }
    out.replace(",]", "]")
}

enum Reject {
    Missing,
    Invalid(String),
}

fn header(engine: &SandboxEngine, digest: &str, artefact: &[u8]) -> String {
    header_of(
        engine,
        digest,
        &blake3::hash(artefact),
        artefact.len() as u64,
    )
}

/// The header of an artefact whose blake3 is `hash` and length `len`.
fn header_of(engine: &SandboxEngine, digest: &str, hash: &blake3::Hash, len: u64) -> String {
    format!(
        "{MAGIC}\nsource {digest}\nfingerprint {}\nartifact {}\nlength {len}\n",
        engine.fingerprint(),
        hash.to_hex(),
    )
}

/// The cached component for `digest` when its header matches its artefact.
///
/// The artefact is opened once; that open file is hashed (read through a
/// small buffer) and then deserialised **mapped** from the same file
/// (`/proc/self/fd/N` names exactly the inode that was hashed), so its
/// code and data pages come straight from the page cache instead of being
/// read into the heap and copied into fresh memory — the copies and the
/// page faults of two 0.3 MB buffers were a quarter of a one-step `lobster
/// run` (runtime/benches/RESULTS.md). Where the mapping cannot be made (no
/// `/proc`, a `noexec` mount refusing executable file mappings), the bytes
/// are read, hashed again and deserialised from memory as before. Cache
/// entries are only ever replaced by an atomic rename, never written in
/// place, so the mapped file is the hashed one for as long as it is used.
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
    let unreadable = |e: std::io::Error| Reject::Invalid(format!("unreadable artefact: {e}"));
    let mut file = std::fs::File::open(art).map_err(unreadable)?;
    let mut hasher = blake3::Hasher::new();
    hasher.update_reader(&file).map_err(unreadable)?;
    let len = file.metadata().map_err(unreadable)?.len();
    if meta_text != header_of(engine, digest, &hasher.finalize(), len) {
        return Err(mismatch());
    }
    if let Some(component) = deserialize_mapped(engine, &file, len) {
        return Ok(component);
    }
    let mut artefact = Vec::new();
    file.seek(SeekFrom::Start(0)).map_err(unreadable)?;
    file.read_to_end(&mut artefact).map_err(unreadable)?;
    if meta_text != header(engine, digest, &artefact) {
        return Err(mismatch());
    }
    // SAFETY: the artefact is byte-for-byte what this host wrote for this
    // engine configuration (checked through the header's blake3 digest).
    unsafe { Component::deserialize(engine.engine(), &artefact) }
        .map_err(|e| Reject::Invalid(format!("deserialize failed: {e}")))
}

fn mismatch() -> Reject {
    Reject::Invalid("header does not match the artefact (corrupt or stale)".into())
}

/// `file` (an artefact whose `len` bytes were just checked against its
/// header) deserialised from a mapping of that very file, or `None` when
/// it cannot be mapped (the caller then reads it).
fn deserialize_mapped(engine: &SandboxEngine, file: &std::fs::File, len: u64) -> Option<Component> {
    use std::os::fd::AsRawFd;
    let path = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
    // The link must lead to the file checked: same inode, same length.
    let (ours, there) = (file.metadata().ok()?, std::fs::metadata(&path).ok()?);
    use std::os::unix::fs::MetadataExt;
    if (ours.dev(), ours.ino(), ours.len()) != (there.dev(), there.ino(), len) {
        return None;
    }
    // SAFETY: the file is byte-for-byte what this host wrote for this
    // engine configuration (its blake3 matched the header just now), and
    // cache entries are replaced only by rename, never modified in place,
    // so the mapping keeps these bytes while the component lives.
    unsafe { Component::deserialize_file(engine.engine(), &path) }.ok()
}

fn store(
    engine: &SandboxEngine,
    digest: &str,
    artefact: &[u8],
    art: &Path,
    meta: &Path,
    max_bytes: u64,
) -> std::io::Result<()> {
    if let Some(dir) = art.parent() {
        std::fs::create_dir_all(dir)?;
    }
    write_atomic(art, artefact)?;
    write_atomic(meta, header(engine, digest, artefact).as_bytes())?;
    if let Some(dir) = art.parent() {
        prune(dir, MAX_IDLE);
        prune_to_size(dir, max_bytes, art);
    }
    Ok(())
}

/// Remove the least recently used entries of cache directory `dir` (by
/// the artefact's modification time, which a hit touches) until the
/// artefacts total at most `max_bytes`; `keep` (the entry just written)
/// stays even when it alone is larger. Returns how many entries went.
pub fn prune_to_size(dir: &Path, max_bytes: u64, keep: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut artefacts: Vec<(SystemTime, u64, PathBuf)> = entries
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "cwasm"))
        .filter_map(|e| {
            let m = e.metadata().ok()?;
            Some((m.modified().ok()?, m.len(), e.path()))
        })
        .collect();
    let mut total: u64 = artefacts.iter().map(|a| a.1).sum();
    artefacts.sort();
    let mut removed = 0;
    for (_, len, path) in artefacts {
        if total <= max_bytes {
            break;
        }
        if path == keep {
            continue;
        }
        if std::fs::remove_file(&path).is_ok() {
            let _ = std::fs::remove_file(path.with_extension("meta"));
            total = total.saturating_sub(len);
            removed += 1;
        }
    }
    removed
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
    fn bad_files_are_named_plainly() {
        assert!(not_a_component(b"garbage!")
            .unwrap()
            .starts_with("not a WebAssembly file (8 bytes"));
        let core = not_a_component(b"\0asm\x01\x00\x00\x00").unwrap();
        assert!(
            core.starts_with("a core WebAssembly module, not a component"),
            "{core}"
        );
        assert_eq!(not_a_component(b"\0asm\x0d\x00\x01\x00"), None);
        assert_eq!(
            one_line("bad magic - expected=[\n    0x0,\n    0x61,\n] actual=[\n    0x67,\n] (at offset 0x0)"),
            "bad magic - expected=[0x0, 0x61] actual=[0x67] (at offset 0x0)"
        );
    }

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

    #[test]
    fn prune_to_size_drops_least_recently_used_first_and_keeps_the_new_entry() {
        let dir = tempfile::tempdir().unwrap();
        let now = SystemTime::now();
        for (i, name) in ["a", "b", "c", "d"].iter().enumerate() {
            let art = dir.path().join(format!("{name}.cwasm"));
            std::fs::write(&art, vec![0u8; 100]).unwrap();
            std::fs::write(dir.path().join(format!("{name}.meta")), "h").unwrap();
            // a is the oldest, d the newest
            std::fs::File::options()
                .write(true)
                .open(&art)
                .unwrap()
                .set_modified(now - Duration::from_secs(100 - i as u64 * 10))
                .unwrap();
        }
        // Keep "a" (just written) although it is the oldest: b and c go.
        let keep = dir.path().join("a.cwasm");
        assert_eq!(prune_to_size(dir.path(), 250, &keep), 2);
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["a.cwasm", "a.meta", "d.cwasm", "d.meta"]);
        // Under the bound nothing goes.
        assert_eq!(prune_to_size(dir.path(), 1000, &keep), 0);
    }
}
