//! The operator's registry commands, without their printing (that is the
//! CLI's): publish a component or a bundle with its signature, pull a step
//! into a file or a bundle directory, and sign a step in a registry.

use super::cache::Entry;
use super::client::Client;
use super::fetch::{Fetched, Fetcher};
use super::layout::{self, Artifact};
use super::reference::Reference;
use super::RegistryError;
use crate::sandbox::bundle::{self, COMPONENT, MANIFEST};
use crate::signing::{self, sidecar, SecretKey, Signature};
use std::path::{Path, PathBuf};

/// What a source path holds.
#[derive(Debug)]
pub struct Source {
    /// The component file.
    pub component: PathBuf,
    /// Its bytes.
    pub bytes: Vec<u8>,
    /// The bundle's `manifest.toml`, for a bundle.
    pub bundle_manifest: Option<String>,
    /// The signature beside the component, if any.
    pub signature: Option<Signature>,
}

/// Read `path`: a component file, or a bundle (a directory with
/// `manifest.toml`, or the manifest) — which must verify first.
pub fn read_source(path: &Path, cache: &crate::sandbox::ArtifactCache) -> Result<Source, String> {
    let is_bundle = path.is_dir() || path.file_name().is_some_and(|n| n == MANIFEST);
    let (component, bundle_manifest) = if is_bundle {
        let problems = bundle::verify(path, cache);
        if !problems.is_empty() {
            return Err(format!(
                "the bundle does not verify: {}",
                problems
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ")
            ));
        }
        let (dir, manifest) = bundle::locate(path);
        let text = std::fs::read_to_string(&manifest)
            .map_err(|e| format!("{}: {e}", manifest.display()))?;
        (dir.join(COMPONENT), Some(text))
    } else {
        (path.to_path_buf(), None)
    };
    let bytes = std::fs::read(&component).map_err(|e| format!("{}: {e}", component.display()))?;
    let signature = sidecar::read(&component).map_err(|e| e.to_string())?;
    Ok(Source {
        component,
        bytes,
        bundle_manifest,
        signature,
    })
}

/// A published step.
#[derive(Debug, Clone)]
pub struct Published {
    /// The reference at the pushed manifest's digest.
    pub reference: Reference,
    /// The component's blake3.
    pub blake3: String,
    /// Bytes of the component.
    pub size: usize,
    /// Whether a signature was pushed with it.
    pub signed: bool,
}

/// Publish `source` as `r` (whose digest, if any, is ignored: a push names
/// a tag), with its signature under `sha256-<hex>.sig`.
pub fn publish(client: &Client, source: &Source, r: &Reference) -> Result<Published, String> {
    if r.tag.is_none() {
        return Err(format!("{r}: publishing needs a tag (oci://HOST/REPO:TAG)"));
    }
    let info = layout::component_info(&source.bytes)
        .map_err(|e| format!("{}: {e}", source.component.display()))?;
    let blake3 = crate::sandbox::digest_of(&source.bytes);
    let artifact = Artifact {
        component: source.bytes.clone(),
        file_name: source
            .component
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| COMPONENT.into()),
        blake3: blake3.clone(),
        info,
        bundle_manifest: source.bundle_manifest.clone(),
    };
    let encoded = layout::encode(&artifact);
    let target = Reference {
        digest: None,
        ..r.clone()
    };
    let digest = client
        .push(&target, &encoded, &source.bytes)
        .map_err(|e| e.to_string())?;
    if let Some(sig) = &source.signature {
        client
            .push_signature(&target, &digest, sig.text(), &sig.key_id().to_string())
            .map_err(|e| e.to_string())?;
    }
    Ok(Published {
        reference: target.at(&digest),
        blake3,
        size: source.bytes.len(),
        signed: source.signature.is_some(),
    })
}

/// Where a pulled step was written.
#[derive(Debug, Clone)]
pub struct Written {
    /// The fetched step.
    pub fetched: Fetched,
    /// The component file written.
    pub component: PathBuf,
    /// The bundle directory, when a bundle was written.
    pub bundle: Option<PathBuf>,
    /// The signature file written, if the step is signed.
    pub signature: Option<PathBuf>,
}

/// Pull `r` (a tag is resolved: this is the operator's own command) through
/// the cache and write it to `out`: a bundle directory when the artifact is
/// a bundle and `out` is a directory or ends in `.bundle`, else a component
/// file (default: `./<last repository part>.wasm`). Its signature lands
/// beside the component.
pub fn pull(
    fetcher: &Fetcher,
    r: &Reference,
    out: Option<&Path>,
) -> Result<Written, RegistryError> {
    let fetched = fetcher.fetch(r, None, true)?;
    let entry: &Entry = &fetched.entry;
    let io = |p: &Path, e: std::io::Error| RegistryError::Cache {
        path: p.display().to_string(),
        detail: e.to_string(),
    };
    let bytes = std::fs::read(&entry.path).map_err(|e| io(&entry.path, e))?;
    // The cache is checked at every use.
    if crate::sandbox::digest_of(&bytes) != entry.blake3 {
        let _ = std::fs::remove_file(&entry.path);
        return Err(RegistryError::Digest {
            reference: fetched.reference.to_string(),
            what: "cached component".into(),
            expected: entry.blake3.clone(),
            got: crate::sandbox::digest_of(&bytes),
        });
    }
    let wants_bundle = entry.bundle_manifest.is_some()
        && out.is_some_and(|o| o.is_dir() || o.extension().is_some_and(|x| x == "bundle"));
    let (component, bundle) = if wants_bundle {
        let dir = out.expect("checked").to_path_buf();
        std::fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
        let manifest = dir.join(MANIFEST);
        crate::state::write_atomic(
            &manifest,
            entry
                .bundle_manifest
                .as_deref()
                .unwrap_or_default()
                .as_bytes(),
        )
        .map_err(|e| io(&manifest, e))?;
        (dir.join(COMPONENT), Some(dir))
    } else {
        let file = match out {
            Some(o) => o.to_path_buf(),
            None => PathBuf::from(format!(
                "{}.wasm",
                r.repository.rsplit('/').next().unwrap_or("step")
            )),
        };
        (file, None)
    };
    crate::state::write_atomic(&component, &bytes).map_err(|e| io(&component, e))?;
    let cached_sig = sidecar::path_of(&entry.path);
    let signature = match std::fs::read(&cached_sig) {
        Ok(text) => {
            let path = sidecar::path_of(&component);
            crate::state::write_atomic(&path, &text).map_err(|e| io(&path, e))?;
            Some(path)
        }
        Err(_) => {
            let _ = std::fs::remove_file(sidecar::path_of(&component));
            None
        }
    };
    Ok(Written {
        fetched,
        component,
        bundle,
        signature,
    })
}

/// Sign the step `r` names (pulled and verified first) with `key`, and
/// store the signature in the registry; returns the reference signed.
pub fn sign_in_registry(
    fetcher: &Fetcher,
    r: &Reference,
    key: &SecretKey,
) -> Result<(Reference, Signature), String> {
    let fetched = fetcher.fetch(r, None, true).map_err(|e| e.to_string())?;
    let bytes = std::fs::read(&fetched.entry.path).map_err(|e| e.to_string())?;
    if crate::sandbox::digest_of(&bytes) != fetched.entry.blake3 {
        return Err(format!(
            "{}: the cached component was altered; run again",
            fetched.reference
        ));
    }
    let name = fetched
        .entry
        .title
        .clone()
        .unwrap_or_else(|| fetched.reference.to_string());
    let sig = signing::sign(key, &bytes, &name).map_err(|e| e.to_string())?;
    fetcher
        .client()
        .push_signature(
            &fetched.reference,
            &fetched.entry.manifest_digest,
            sig.text(),
            &sig.key_id().to_string(),
        )
        .map_err(|e| e.to_string())?;
    // The cached copy now carries it too.
    let _ = sidecar::write(&fetched.entry.path, &sig);
    Ok((fetched.reference, sig))
}

/// Sign a local component or bundle: the signature lands beside the
/// component (`FILE.minisig`, in a bundle `step.wasm.minisig`).
pub fn sign_file(path: &Path, key: &SecretKey) -> Result<(PathBuf, Signature), String> {
    let component = if path.is_dir() || path.file_name().is_some_and(|n| n == MANIFEST) {
        bundle::locate(path).0.join(COMPONENT)
    } else {
        path.to_path_buf()
    };
    let bytes = std::fs::read(&component).map_err(|e| format!("{}: {e}", component.display()))?;
    layout::component_info(&bytes).map_err(|e| format!("{}: {e}", component.display()))?;
    let name = component
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let sig = signing::sign(key, &bytes, &name).map_err(|e| e.to_string())?;
    let written = sidecar::write(&component, &sig).map_err(|e| e.to_string())?;
    Ok((written, sig))
}
