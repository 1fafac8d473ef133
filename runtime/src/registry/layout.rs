//! The OCI layout of a step, the one the WebAssembly tools use (`wkg oci
//! push`, `oci-wasm`): an image manifest whose config has media type
//! `application/vnd.wasm.config.v0+json` and exactly one
//! `application/wasm` layer, the component (annotated with its file name).
//!
//! Lobster adds manifest annotations that other tools ignore:
//! `dev.lobster.blake3` (the component's blake3, checked at pull) and, for a
//! bundle, `dev.lobster.bundle.manifest` (the bundle's `manifest.toml`
//! text). A second layer would make `wkg`/`oci-wasm` refuse the artifact
//! ("Wasm components must have exactly one layer"), so the bundle manifest
//! is an annotation.
//!
//! A signature is a separate manifest under the tag `sha256-<hex>.sig` of
//! the artifact's manifest digest: empty config
//! (`application/vnd.oci.empty.v1+json`), one layer of media type
//! [`SIGNATURE_MEDIA_TYPE`] holding the `.minisig` text.

use oci_client::manifest::{OciDescriptor, OciImageManifest};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// The manifest media type.
pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
/// The wasm config media type.
pub const WASM_CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// The component layer's media type.
pub const WASM_LAYER_MEDIA_TYPE: &str = "application/wasm";
/// The empty config of a signature manifest.
pub const EMPTY_MEDIA_TYPE: &str = "application/vnd.oci.empty.v1+json";
/// A minisign signature layer.
pub const SIGNATURE_MEDIA_TYPE: &str = "application/vnd.dev.lobster.minisign.signature.v1";
/// Annotation: the component's blake3.
pub const BLAKE3_ANNOTATION: &str = "dev.lobster.blake3";
/// Annotation: a bundle's `manifest.toml`.
pub const BUNDLE_ANNOTATION: &str = "dev.lobster.bundle.manifest";
/// Annotation: a file's name (the layer's).
pub const TITLE_ANNOTATION: &str = "org.opencontainers.image.title";

/// `sha256:<hex>` of `bytes`.
pub fn sha256_digest(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let mut s = String::with_capacity(71);
    s.push_str("sha256:");
    for b in hash {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// The wasm config (`oci-wasm`'s `WasmConfig`).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WasmConfig {
    /// RFC 3339 time (`SOURCE_DATE_EPOCH` when set, so a rebuild publishes
    /// the same manifest digest).
    pub created: String,
    /// Author, if known.
    pub author: Option<String>,
    /// `wasm`.
    pub architecture: String,
    /// `wasip2` for components.
    pub os: String,
    /// The layer's digest.
    pub layer_digests: Vec<String>,
    /// The component's world, as interface names.
    pub component: Option<ComponentInfo>,
}

/// Imports and exports of the component.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ComponentInfo {
    /// Exported names.
    pub exports: Vec<String>,
    /// Imported names.
    pub imports: Vec<String>,
    /// The world, if known.
    pub target: Option<String>,
}

/// The top-level imports and exports of component `bytes`, read without
/// compiling it; an error when the bytes are not a component.
pub fn component_info(bytes: &[u8]) -> Result<ComponentInfo, String> {
    use wasmparser::{Encoding, Parser, Payload};
    let mut depth = 0usize;
    let mut info = ComponentInfo {
        exports: Vec::new(),
        imports: Vec::new(),
        target: None,
    };
    for payload in Parser::new(0).parse_all(bytes) {
        let payload = payload.map_err(|e| format!("not a WebAssembly component: {e}"))?;
        match payload {
            Payload::Version { encoding, .. } => {
                if depth == 0 && encoding != Encoding::Component {
                    return Err(
                        "a core WebAssembly module, not a component (build for wasm32-wasip2)"
                            .into(),
                    );
                }
                depth += 1;
            }
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::ComponentImportSection(r) if depth == 1 => {
                for i in r {
                    let i = i.map_err(|e| format!("not a WebAssembly component: {e}"))?;
                    info.imports.push(i.name.name.to_string());
                }
            }
            Payload::ComponentExportSection(r) if depth == 1 => {
                for e in r {
                    let e = e.map_err(|e| format!("not a WebAssembly component: {e}"))?;
                    info.exports.push(e.name.name.to_string());
                }
            }
            _ => {}
        }
    }
    if info.imports.is_empty() && info.exports.is_empty() && depth != 0 {
        return Err("not a WebAssembly component: it ends early".into());
    }
    Ok(info)
}

/// What to publish.
#[derive(Debug, Clone)]
pub struct Artifact {
    /// The component's bytes.
    pub component: Vec<u8>,
    /// Its file name (the layer's title).
    pub file_name: String,
    /// Its blake3.
    pub blake3: String,
    /// Its imports and exports.
    pub info: ComponentInfo,
    /// The bundle's `manifest.toml`, when publishing a bundle.
    pub bundle_manifest: Option<String>,
}

/// The bytes pushed for an artifact: config blob, layer blob, manifest.
#[derive(Debug, Clone)]
pub struct Encoded {
    /// The config blob and its digest.
    pub config: (Vec<u8>, String),
    /// The layer digest (the layer is [`Artifact::component`]).
    pub layer_digest: String,
    /// The manifest's bytes.
    pub manifest: Vec<u8>,
    /// `sha256:` of the manifest.
    pub manifest_digest: String,
}

fn created() -> String {
    let secs = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|v| v.trim().parse::<i64>().ok());
    let time = match secs {
        Some(s) => chrono::DateTime::from_timestamp(s, 0).unwrap_or_default(),
        None => chrono::Utc::now(),
    };
    time.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Encode `artifact` in the wasm OCI layout.
pub fn encode(artifact: &Artifact) -> Encoded {
    let layer_digest = sha256_digest(&artifact.component);
    let config = WasmConfig {
        created: created(),
        author: None,
        architecture: "wasm".into(),
        os: "wasip2".into(),
        layer_digests: vec![layer_digest.clone()],
        component: Some(artifact.info.clone()),
    };
    let config_bytes = serde_json::to_vec(&config).unwrap_or_default();
    let config_digest = sha256_digest(&config_bytes);
    let mut annotations = BTreeMap::new();
    annotations.insert(BLAKE3_ANNOTATION.to_string(), artifact.blake3.clone());
    if let Some(m) = &artifact.bundle_manifest {
        annotations.insert(BUNDLE_ANNOTATION.to_string(), m.clone());
    }
    let manifest = OciImageManifest {
        schema_version: 2,
        media_type: Some(MANIFEST_MEDIA_TYPE.into()),
        config: descriptor(
            WASM_CONFIG_MEDIA_TYPE,
            &config_digest,
            config_bytes.len(),
            None,
        ),
        layers: vec![descriptor(
            WASM_LAYER_MEDIA_TYPE,
            &layer_digest,
            artifact.component.len(),
            Some(BTreeMap::from([(
                TITLE_ANNOTATION.to_string(),
                artifact.file_name.clone(),
            )])),
        )],
        subject: None,
        artifact_type: None,
        annotations: Some(annotations),
    };
    let manifest_bytes = serde_json::to_vec(&manifest).unwrap_or_default();
    Encoded {
        manifest_digest: sha256_digest(&manifest_bytes),
        config: (config_bytes, config_digest),
        layer_digest,
        manifest: manifest_bytes,
    }
}

fn descriptor(
    media_type: &str,
    digest: &str,
    size: usize,
    annotations: Option<BTreeMap<String, String>>,
) -> OciDescriptor {
    OciDescriptor {
        media_type: media_type.into(),
        digest: digest.into(),
        size: i64::try_from(size).unwrap_or(i64::MAX),
        urls: None,
        annotations,
        artifact_type: None,
    }
}

/// The empty config blob (`{}`).
pub const EMPTY_CONFIG: &[u8] = b"{}";

/// The signature manifest for `sig_text` (whose layer digest is returned too).
pub fn encode_signature(sig_text: &str, key_id: &str) -> (Vec<u8>, String) {
    let layer_digest = sha256_digest(sig_text.as_bytes());
    let manifest = OciImageManifest {
        schema_version: 2,
        media_type: Some(MANIFEST_MEDIA_TYPE.into()),
        config: descriptor(
            EMPTY_MEDIA_TYPE,
            &sha256_digest(EMPTY_CONFIG),
            EMPTY_CONFIG.len(),
            None,
        ),
        layers: vec![descriptor(
            SIGNATURE_MEDIA_TYPE,
            &layer_digest,
            sig_text.len(),
            Some(BTreeMap::from([(
                "dev.lobster.signature.key-id".to_string(),
                key_id.to_string(),
            )])),
        )],
        subject: None,
        artifact_type: None,
        annotations: None,
    };
    (
        serde_json::to_vec(&manifest).unwrap_or_default(),
        layer_digest,
    )
}

/// A pulled manifest, checked to be a step: the wasm config and one wasm
/// layer.
#[derive(Debug, Clone)]
pub struct StepManifest {
    /// The component layer.
    pub layer: OciDescriptor,
    /// The manifest's annotations.
    pub annotations: BTreeMap<String, String>,
}

/// Parse manifest `bytes` as a step artifact; the error says what it is
/// instead.
pub fn parse_step(bytes: &[u8]) -> Result<StepManifest, String> {
    let m: OciImageManifest = serde_json::from_slice(bytes)
        .map_err(|e| format!("the manifest is not an OCI image manifest: {e}"))?;
    if m.config.media_type != WASM_CONFIG_MEDIA_TYPE {
        return Err(format!(
            "it is not a WebAssembly artifact (config media type {}, expected {WASM_CONFIG_MEDIA_TYPE})",
            m.config.media_type
        ));
    }
    let wasm: Vec<&OciDescriptor> = m
        .layers
        .iter()
        .filter(|l| l.media_type == WASM_LAYER_MEDIA_TYPE)
        .collect();
    match (wasm.as_slice(), m.layers.len()) {
        ([one], 1) => Ok(StepManifest {
            layer: (*one).clone(),
            annotations: m.annotations.unwrap_or_default(),
        }),
        _ => Err(format!(
            "a step artifact has exactly one {WASM_LAYER_MEDIA_TYPE} layer; this one has {} layers",
            m.layers.len()
        )),
    }
}

/// The signature layer of a signature manifest.
pub fn parse_signature(bytes: &[u8]) -> Result<OciDescriptor, String> {
    let m: OciImageManifest = serde_json::from_slice(bytes)
        .map_err(|e| format!("the signature manifest is not an OCI image manifest: {e}"))?;
    m.layers
        .into_iter()
        .find(|l| l.media_type == SIGNATURE_MEDIA_TYPE)
        .ok_or_else(|| format!("the signature manifest has no {SIGNATURE_MEDIA_TYPE} layer"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_the_wasm_layout_and_reads_it_back() {
        let artifact = Artifact {
            component: b"\0asm fake".to_vec(),
            file_name: "greet.wasm".into(),
            blake3: "b".repeat(64),
            info: ComponentInfo {
                exports: vec!["run".into()],
                imports: vec![],
                target: None,
            },
            bundle_manifest: Some("name = \"greet\"\n".into()),
        };
        let e = encode(&artifact);
        assert_eq!(e.manifest_digest, sha256_digest(&e.manifest));
        let m = parse_step(&e.manifest).unwrap();
        assert_eq!(m.layer.digest, sha256_digest(b"\0asm fake"));
        assert_eq!(m.layer.size, 9);
        assert_eq!(m.annotations[BLAKE3_ANNOTATION], "b".repeat(64));
        assert!(m.annotations[BUNDLE_ANNOTATION].contains("greet"));
        let v: serde_json::Value = serde_json::from_slice(&e.manifest).unwrap();
        assert_eq!(v["config"]["mediaType"], WASM_CONFIG_MEDIA_TYPE);
        assert_eq!(
            v["layers"][0]["annotations"][TITLE_ANNOTATION],
            "greet.wasm"
        );
        let c: serde_json::Value = serde_json::from_slice(&e.config.0).unwrap();
        assert_eq!(c["os"], "wasip2");
        let (sig, _) = encode_signature("untrusted comment: x\n", "ABC");
        assert!(parse_step(&sig)
            .unwrap_err()
            .contains("not a WebAssembly artifact"));
        assert!(parse_signature(&sig).is_ok());
    }
}
