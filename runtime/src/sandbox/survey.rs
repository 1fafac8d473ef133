//! What is on the step path and what this host allows, for `lobster help`,
//! `commands.list` and `lobster doctor`.
//!
//! Listing goes through the public resolver API ([`StepResolver::path`],
//! [`StepResolver::cache`]) and [`load_file`]; it never changes how names
//! resolve.

use super::cache::ArtifactCache;
use super::component::{digest_of, load_bytes, ComponentKind};
use super::describe::StepMeta;
use super::resolve::StepResolver;
use std::path::{Path, PathBuf};

/// One `.wasm` file found on the step path.
#[derive(Debug, Clone)]
pub struct FoundStep {
    /// The file.
    pub path: PathBuf,
    /// blake3 of its bytes (empty when it could not be read).
    pub digest: String,
    /// Whether a compiled artefact for it was in the cache before this look.
    pub cached: bool,
    /// What loading it gave: the world and its `describe`, or why it failed.
    pub loaded: Result<(ComponentKind, Option<StepMeta>), String>,
}

impl FoundStep {
    /// The stage name: the described name, else the file stem.
    pub fn name(&self) -> String {
        match &self.loaded {
            Ok((_, Some(meta))) => meta.name.clone(),
            _ => self
                .path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
        }
    }

    /// The WIT world it implements, when it loaded.
    pub fn world(&self) -> Option<&'static str> {
        match &self.loaded {
            Ok((ComponentKind::Step, _)) => Some("lobster:step"),
            Ok((ComponentKind::Command, _)) => Some("wasi:cli/command"),
            Err(_) => None,
        }
    }
}

/// The `.wasm` files of one step-path directory, sorted by file name.
pub fn wasm_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "wasm") && p.is_file())
        .collect();
    files.sort();
    files
}

/// Read, hash and load `path` (compiling it, or loading it from `cache`);
/// a file unchanged since this process last loaded it comes from the
/// [`super::file_memo`] (`commands.list` under `lobster serve` surveys every
/// step file on every run).
pub fn inspect_file(path: &Path, cache: &ArtifactCache) -> FoundStep {
    if let Ok(component) = super::file_memo::load(path, cache) {
        let digest = component.digest().to_string();
        let cached = super::engine::engine()
            .ok()
            .and_then(|engine| cache.entry_paths(engine, &digest))
            .is_some_and(|(artefact, _)| artefact.is_file());
        return FoundStep {
            path: path.to_path_buf(),
            digest,
            cached,
            loaded: Ok((component.kind(), component.meta().cloned())),
        };
    }
    // Unreadable or not a component: read it again for the digest and the
    // error to show.
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            return FoundStep {
                path: path.to_path_buf(),
                digest: String::new(),
                cached: false,
                loaded: Err(format!("cannot read it: {e}")),
            }
        }
    };
    let digest = digest_of(&bytes);
    let cached = super::engine::engine()
        .ok()
        .and_then(|engine| cache.entry_paths(engine, &digest))
        .is_some_and(|(artefact, _)| artefact.is_file());
    let loaded = load_bytes(&bytes, path, cache)
        .map(|c| (c.kind(), c.meta().cloned()))
        .map_err(|e| e.to_string());
    FoundStep {
        path: path.to_path_buf(),
        digest,
        cached,
        loaded,
    }
}

/// Every `.wasm` on the resolver's step path, in path order. A name found in
/// an earlier directory hides the same name later (as resolution does).
pub fn list_steps(resolver: &StepResolver) -> Vec<FoundStep> {
    let mut out: Vec<FoundStep> = Vec::new();
    for dir in resolver.path().dirs() {
        for file in wasm_files(dir) {
            let found = inspect_file(&file, resolver.cache());
            if out.iter().all(|f| f.name() != found.name()) {
                out.push(found);
            }
        }
    }
    out
}

/// Whether the kernel grants an address-space reservation of `bytes`
/// (`PROT_NONE`, nothing committed), as the default allocator needs 4 GiB
/// plus guard pages per linear memory. `false` under a small `ulimit -v` or
/// with `vm.overcommit_memory=2` and little swap.
pub fn can_reserve(bytes: usize) -> bool {
    // SAFETY: an anonymous PROT_NONE mapping touches no existing memory; it
    // is unmapped at once with the same address and length.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        );
        if p == libc::MAP_FAILED {
            return false;
        }
        libc::munmap(p, bytes);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_that_is_not_a_component_is_reported_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("junk.wasm"), b"not wasm").unwrap();
        std::fs::write(dir.path().join("notes.txt"), b"x").unwrap();
        let files = wasm_files(dir.path());
        assert_eq!(files.len(), 1);
        let found = inspect_file(&files[0], &ArtifactCache::disabled());
        assert_eq!(found.name(), "junk");
        assert!(found.loaded.is_err());
        assert_eq!(found.world(), None);
        assert_eq!(found.digest, digest_of(b"not wasm"));
    }

    #[test]
    fn a_small_reservation_is_granted() {
        assert!(can_reserve(1 << 20));
    }
}
