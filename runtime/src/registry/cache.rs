//! Pulled components, content-addressed, under `<state dir>/cache/oci`
//! (or `LOBSTER_OCI_CACHE_DIR`):
//!
//! ```text
//! manifests/<sha256 hex>.json      the artifact manifest, as pulled
//! manifests/<sha256 hex>.blake3    the component's blake3
//! components/<blake3>.wasm         the component
//! components/<blake3>.wasm.minisig its signature from the registry, if any
//! ```
//!
//! Everything is verified as it enters (the manifest's sha256 against the
//! digest it was pulled by, the component's sha256 against the layer and
//! its blake3 against the manifest's `dev.lobster.blake3` annotation when
//! present), and again at every load: a lookup re-hashes the manifest, and
//! the sandbox refuses a `components/<blake3>.wasm` whose bytes do not hash
//! to its name ([`expected_blake3`]). Writes are atomic. Nothing is evicted;
//! removing the directory is always safe.

use super::client::Pulled;
use super::layout::{self, sha256_digest};
use super::RegistryError;
use std::path::{Path, PathBuf};

/// The cache directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cache {
    root: PathBuf,
}

/// A cached step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// `sha256:` of its manifest.
    pub manifest_digest: String,
    /// The component's blake3.
    pub blake3: String,
    /// The component file (`components/<blake3>.wasm`).
    pub path: PathBuf,
    /// The bundle manifest (`manifest.toml` text), when a bundle was published.
    pub bundle_manifest: Option<String>,
    /// The layer's file name, as published.
    pub title: Option<String>,
}

impl Cache {
    /// A cache in `root`.
    pub fn new(root: impl Into<PathBuf>) -> Cache {
        Cache { root: root.into() }
    }

    /// The cache of a state directory: `LOBSTER_OCI_CACHE_DIR`, else
    /// `<state>/cache/oci`.
    pub fn in_state_dir(state_dir: &Path) -> Cache {
        match std::env::var_os("LOBSTER_OCI_CACHE_DIR").filter(|v| !v.is_empty()) {
            Some(dir) => Cache::new(PathBuf::from(dir)),
            None => Cache::new(state_dir.join("cache").join("oci")),
        }
    }

    /// The directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn manifest_path(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
        self.root.join("manifests").join(format!("{hex}.json"))
    }

    /// The file a component with `blake3` is cached in.
    pub fn component_path(&self, blake3: &str) -> PathBuf {
        self.root.join("components").join(format!("{blake3}.wasm"))
    }

    /// The cached step whose manifest has `digest`, if it is there and its
    /// manifest still hashes to `digest`.
    pub fn lookup(&self, digest: &str) -> Result<Option<Entry>, RegistryError> {
        let manifest_path = self.manifest_path(digest);
        let bytes = match std::fs::read(&manifest_path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(cache_error(&manifest_path, e.to_string())),
        };
        if sha256_digest(&bytes) != digest {
            // Altered on disk: forget it; the caller pulls it again.
            let _ = std::fs::remove_file(&manifest_path);
            return Ok(None);
        }
        let blake3 = match std::fs::read_to_string(manifest_path.with_extension("blake3")) {
            Ok(t) => t.trim().to_string(),
            Err(_) => return Ok(None),
        };
        if !is_blake3(&blake3) {
            return Ok(None);
        }
        let path = self.component_path(&blake3);
        if !path.is_file() {
            return Ok(None);
        }
        let manifest = layout::parse_step(&bytes).map_err(|e| cache_error(&manifest_path, e))?;
        Ok(Some(entry(digest, blake3, path, &manifest)))
    }

    /// Store a pulled step (already checked by the client) and its
    /// signature; refuses a component whose blake3 differs from the one
    /// its manifest announces.
    pub fn store(&self, pulled: &Pulled, reference: &str) -> Result<Entry, RegistryError> {
        let blake3 = crate::sandbox::digest_of(&pulled.component);
        if let Some(said) = pulled.manifest.annotations.get(layout::BLAKE3_ANNOTATION) {
            if *said != blake3 {
                return Err(RegistryError::Digest {
                    reference: reference.to_string(),
                    what: "component (blake3)".into(),
                    expected: said.clone(),
                    got: blake3,
                });
            }
        }
        let path = self.component_path(&blake3);
        let write = |p: &Path, bytes: &[u8]| {
            if let Some(dir) = p.parent() {
                std::fs::create_dir_all(dir).map_err(|e| cache_error(dir, e.to_string()))?;
            }
            crate::state::write_atomic(p, bytes).map_err(|e| cache_error(p, e.to_string()))
        };
        write(&path, &pulled.component)?;
        let sig_path = crate::signing::sidecar::path_of(&path);
        match &pulled.signature {
            Some(text) => write(&sig_path, text.as_bytes())?,
            None => {
                let _ = std::fs::remove_file(&sig_path);
            }
        }
        let manifest_path = self.manifest_path(&pulled.manifest_digest);
        // The digest record first: a manifest is only found with it.
        write(&manifest_path.with_extension("blake3"), blake3.as_bytes())?;
        write(&manifest_path, &pulled.manifest_bytes)?;
        Ok(entry(
            &pulled.manifest_digest,
            blake3,
            path,
            &pulled.manifest,
        ))
    }

    /// Whether `path` is a component file of this cache.
    pub fn holds(&self, path: &Path) -> bool {
        path.parent() == Some(self.root.join("components").as_path())
    }
}

fn entry(digest: &str, blake3: String, path: PathBuf, m: &layout::StepManifest) -> Entry {
    Entry {
        manifest_digest: digest.to_string(),
        blake3,
        path,
        bundle_manifest: m.annotations.get(layout::BUNDLE_ANNOTATION).cloned(),
        title: m
            .layer
            .annotations
            .as_ref()
            .and_then(|a| a.get(layout::TITLE_ANNOTATION).cloned()),
    }
}

fn is_blake3(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The blake3 a cached component file must have, from its name
/// (`components/<blake3>.wasm`); `None` for any other file.
pub fn expected_blake3(path: &Path) -> Option<&str> {
    let in_components = path
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|n| n == "components");
    let stem = path.file_name()?.to_str()?.strip_suffix(".wasm")?;
    (in_components && is_blake3(stem)).then_some(stem)
}

fn cache_error(path: &Path, detail: String) -> RegistryError {
    RegistryError::Cache {
        path: path.display().to_string(),
        detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::layout::{encode, Artifact, ComponentInfo};

    fn pulled(component: &[u8], blake3: &str) -> Pulled {
        let e = encode(&Artifact {
            component: component.to_vec(),
            file_name: "s.wasm".into(),
            blake3: blake3.into(),
            info: ComponentInfo {
                exports: vec![],
                imports: vec![],
                target: None,
            },
            bundle_manifest: None,
        });
        Pulled {
            manifest: layout::parse_step(&e.manifest).unwrap(),
            manifest_digest: e.manifest_digest,
            manifest_bytes: e.manifest,
            component: component.to_vec(),
            signature: Some("sig".into()),
        }
    }

    #[test]
    fn stores_looks_up_and_forgets_altered_manifests() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = Cache::new(tmp.path());
        let b3 = crate::sandbox::digest_of(b"comp");
        let p = pulled(b"comp", &b3);
        let e = cache.store(&p, "oci://r/a:1").unwrap();
        assert_eq!(e.path, cache.component_path(&b3));
        assert_eq!(expected_blake3(&e.path), Some(b3.as_str()));
        assert!(cache.holds(&e.path));
        assert_eq!(
            std::fs::read_to_string(crate::signing::sidecar::path_of(&e.path)).unwrap(),
            "sig"
        );
        assert_eq!(cache.lookup(&p.manifest_digest).unwrap(), Some(e));
        let manifest = cache.manifest_path(&p.manifest_digest);
        std::fs::write(&manifest, b"{}").unwrap();
        assert_eq!(cache.lookup(&p.manifest_digest).unwrap(), None);
        assert!(!manifest.exists());
        assert_eq!(expected_blake3(Path::new("/x/steps/a.wasm")), None);
    }

    #[test]
    fn a_component_unlike_its_announced_blake3_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let p = pulled(b"comp", &"0".repeat(64));
        let e = Cache::new(tmp.path()).store(&p, "oci://r/a:1").unwrap_err();
        assert!(e.to_string().contains("blake3"), "{e}");
    }
}
