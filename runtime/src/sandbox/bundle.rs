//! Step bundles: a directory holding the component (`step.wasm`) and a
//! manifest (`manifest.toml`) that says what it is, what it may ask for and
//! its blake3 digest, so a reviewer can read the manifest and
//! `lobster bundle verify` can prove it matches the bytes.
//!
//! ```toml
//! format = 1
//! name = "inbox.list"
//! version = "0.1.0"
//! summary = "List messages"
//! world = "lobster:step/step@0.1.0"
//! component = "step.wasm"
//! blake3 = "…64 hex digits…"
//! source = "https://example.org/steps"   # from the source DIR's bundle.toml
//! license = "MIT"
//! capabilities = ["read /mail", "env LANG"]   # or "write /mail"
//! [[flags]]
//! name = "limit"
//! kind = "number"
//! default = "10"
//! description = "At most N messages"
//! ```

use crate::error::{Error, Result};
use crate::policy::finding::Finding;
use crate::sandbox::inspect::inspect;
use crate::sandbox::{
    load_bytes, Access, ArtifactCache, ComponentKind, FlagKind, Requirement, StepMeta,
};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The manifest's file name inside a bundle.
pub const MANIFEST: &str = "manifest.toml";
/// The component's file name inside a bundle.
pub const COMPONENT: &str = "step.wasm";
/// World of `lobster:step` components.
pub const STEP_WORLD: &str = "lobster:step/step@0.1.0";
/// World of plain command components.
pub const COMMAND_WORLD: &str = "wasi:cli/command@0.2.0";

/// One flag, as in `describe`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestFlag {
    /// Name without `--`.
    pub name: String,
    /// `switch`, `text` or `number`.
    pub kind: String,
    /// Default as text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// One line of help.
    pub description: String,
}

/// A bundle's manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Format version (1).
    pub format: u32,
    /// Step name.
    pub name: String,
    /// Step version.
    pub version: String,
    /// One line of help.
    pub summary: String,
    /// The WIT world the component implements.
    pub world: String,
    /// Component file, relative to the bundle directory.
    pub component: String,
    /// blake3 of the component (64 hex digits).
    pub blake3: String,
    /// Where the source lives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// SPDX licence expression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub license: Option<String>,
    /// Capabilities from `describe`: `read /P`, `write /P`, `env NAME`.
    #[serde(default)]
    pub capabilities: Vec<String>,
    /// Flags from `describe`.
    #[serde(default)]
    pub flags: Vec<ManifestFlag>,
}

/// `bundle.toml` next to the `.wasm` in a source directory.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BundleSource {
    /// Source URL.
    pub source: Option<String>,
    /// Licence.
    pub license: Option<String>,
    /// Name (plain commands only; steps take theirs from `describe`).
    pub name: Option<String>,
    /// Version (plain commands only).
    pub version: Option<String>,
    /// Summary (plain commands only).
    pub summary: Option<String>,
}

/// A capability as manifest text.
pub fn capability_text(r: &Requirement) -> String {
    match r {
        Requirement::Dir {
            path,
            access: Access::Read,
        } => format!("read {path}"),
        Requirement::Dir {
            path,
            access: Access::ReadWrite,
        } => format!("write {path}"),
        Requirement::Env { name } => format!("env {name}"),
        Requirement::Tool {
            name,
            optional: false,
        } => format!("tool {name}"),
        Requirement::Tool {
            name,
            optional: true,
        } => format!("tool {name}?"),
        Requirement::Llm => "llm".to_string(),
    }
}

fn flags_of(meta: &StepMeta) -> Vec<ManifestFlag> {
    meta.flags
        .iter()
        .map(|f| ManifestFlag {
            name: f.name.clone(),
            kind: match f.kind {
                FlagKind::Switch => "switch",
                FlagKind::Text => "text",
                FlagKind::Number => "number",
            }
            .into(),
            default: f.default.clone(),
            description: f.description.clone(),
        })
        .collect()
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::runtime(format!("{}: {e}", path.display()))
}

/// Build a bundle from `dir` (exactly one `.wasm`, optional `bundle.toml`)
/// into `out` (default: `./NAME-VERSION.bundle`). Returns the bundle path.
pub fn build(dir: &Path, out: Option<&Path>, cache: &ArtifactCache) -> Result<PathBuf> {
    let mut wasm: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io(dir))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "wasm") && p.is_file())
        .collect();
    wasm.sort();
    let wasm = match wasm.as_slice() {
        [one] => one.clone(),
        [] => {
            return Err(Error::parse(format!(
                "{}: no .wasm component in the directory",
                dir.display()
            )))
        }
        many => {
            return Err(Error::parse(format!(
                "{}: more than one .wasm component ({}); a bundle holds exactly one",
                dir.display(),
                many.iter()
                    .filter_map(|p| p.file_name())
                    .map(|n| n.to_string_lossy())
                    .collect::<Vec<_>>()
                    .join(", ")
            )))
        }
    };
    let src_path = dir.join("bundle.toml");
    let src: BundleSource = if src_path.is_file() {
        let text = std::fs::read_to_string(&src_path).map_err(io(&src_path))?;
        toml::from_str(&text).map_err(|e| {
            Error::parse(format!(
                "invalid {}: {}",
                src_path.display(),
                e.to_string().trim_end()
            ))
        })?
    } else {
        BundleSource::default()
    };
    let bytes = std::fs::read(&wasm).map_err(io(&wasm))?;
    let seen = inspect(&bytes, &wasm, cache)?;
    let refused = seen.import_problems();
    if !refused.is_empty() {
        return Err(Error::runtime(format!(
            "{}: {}",
            wasm.display(),
            refused.join("; ")
        )));
    }
    let component = load_bytes(&bytes, &wasm, cache)?;
    let manifest = match component.meta() {
        Some(meta) => Manifest {
            format: 1,
            name: meta.name.clone(),
            version: meta.version.clone(),
            summary: meta.summary.clone(),
            world: STEP_WORLD.into(),
            component: COMPONENT.into(),
            blake3: component.digest().into(),
            source: src.source,
            license: src.license,
            capabilities: meta.requires.iter().map(capability_text).collect(),
            flags: flags_of(meta),
        },
        None => Manifest {
            format: 1,
            name: src.name.unwrap_or_else(|| {
                wasm.file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default()
            }),
            version: src.version.unwrap_or_else(|| "0.0.0".into()),
            summary: src.summary.unwrap_or_default(),
            world: COMMAND_WORLD.into(),
            component: COMPONENT.into(),
            blake3: component.digest().into(),
            source: src.source,
            license: src.license,
            capabilities: Vec::new(),
            flags: Vec::new(),
        },
    };
    let out = out
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from(format!("{}-{}.bundle", manifest.name, manifest.version)));
    std::fs::create_dir_all(&out).map_err(io(&out))?;
    std::fs::write(out.join(COMPONENT), &bytes).map_err(io(&out))?;
    let text = toml::to_string(&manifest)
        .map_err(|e| Error::runtime(format!("cannot write the manifest: {e}")))?;
    std::fs::write(out.join(MANIFEST), text).map_err(io(&out))?;
    Ok(out)
}

/// The bundle directory and manifest path for `path` (a bundle directory or
/// its `manifest.toml`).
pub fn locate(path: &Path) -> (PathBuf, PathBuf) {
    if path.is_dir() {
        (path.to_path_buf(), path.join(MANIFEST))
    } else {
        (
            path.parent().unwrap_or(Path::new(".")).to_path_buf(),
            path.to_path_buf(),
        )
    }
}

fn line_of(text: &str, key: &str) -> Option<usize> {
    text.lines()
        .position(|l| {
            let l = l.trim_start();
            l.strip_prefix(key)
                .is_some_and(|r| r.trim_start().starts_with('='))
                || l == format!("[[{key}]]")
        })
        .map(|i| i + 1)
}

/// Check a bundle: the manifest parses, the component's digest matches it,
/// its imports are allowed, and `describe` says what the manifest says.
/// Returns every problem found (empty: the bundle is good).
pub fn verify(path: &Path, cache: &ArtifactCache) -> Vec<Finding> {
    let (dir, manifest_path) = locate(path);
    let here = |msg: String| Finding::new(&manifest_path, msg);
    let text = match std::fs::read_to_string(&manifest_path) {
        Ok(t) => t,
        Err(e) => return vec![here(format!("cannot read the manifest: {e}"))],
    };
    let m: Manifest = match toml::from_str(&text) {
        Ok(m) => m,
        Err(e) => {
            let line = e.span().map(|s| {
                text.as_bytes()[..s.start.min(text.len())]
                    .iter()
                    .filter(|b| **b == b'\n')
                    .count()
                    + 1
            });
            return vec![here(format!("invalid manifest: {}", e.message())).at_line(line)];
        }
    };
    let at = |key: &str, msg: String| here(msg).at_line(line_of(&text, key));
    let mut out = Vec::new();
    if m.format != 1 {
        out.push(at(
            "format",
            format!("format {} is not supported (expected 1)", m.format),
        ));
    }
    let wasm = dir.join(&m.component);
    if Path::new(&m.component)
        .components()
        .any(|c| !matches!(c, std::path::Component::Normal(_)))
    {
        out.push(at(
            "component",
            format!(
                "component {:?} must be a file inside the bundle",
                m.component
            ),
        ));
        return out;
    }
    let bytes = match std::fs::read(&wasm) {
        Ok(b) => b,
        Err(e) => {
            out.push(at(
                "component",
                format!("cannot read component {}: {e}", wasm.display()),
            ));
            return out;
        }
    };
    let digest = crate::sandbox::digest_of(&bytes);
    if digest != m.blake3 {
        out.push(at(
            "blake3",
            format!(
                "component {} has blake3 {digest}, but the manifest says {}: the bundle was tampered with or is stale",
                m.component, m.blake3
            ),
        ));
        return out;
    }
    out.extend(
        component_findings(&bytes, &wasm, cache)
            .into_iter()
            .map(|f| f.at_line(None)),
    );
    if !out.is_empty() {
        return out;
    }
    let Ok(component) = load_bytes(&bytes, &wasm, cache) else {
        return out;
    };
    let (world, meta) = match (component.kind(), component.meta()) {
        (ComponentKind::Step, Some(meta)) => (STEP_WORLD, Some(meta)),
        _ => (COMMAND_WORLD, None),
    };
    if m.world != world {
        out.push(at(
            "world",
            format!(
                "manifest says world {}, but the component implements {world}",
                m.world
            ),
        ));
    }
    if let Some(meta) = meta {
        let mut differ = |key: &str, said: String, real: String| {
            if said != real {
                out.push(at(
                    key,
                    format!("manifest says {key} {said}, but describe returns {real}"),
                ));
            }
        };
        differ("name", format!("{:?}", m.name), format!("{:?}", meta.name));
        differ(
            "version",
            format!("{:?}", m.version),
            format!("{:?}", meta.version),
        );
        differ(
            "summary",
            format!("{:?}", m.summary),
            format!("{:?}", meta.summary),
        );
        let real: Vec<String> = meta.requires.iter().map(capability_text).collect();
        differ(
            "capabilities",
            format!("[{}]", m.capabilities.join(", ")),
            format!("[{}]", real.join(", ")),
        );
        let real_flags = flags_of(meta);
        if m.flags != real_flags {
            let names = |f: &[ManifestFlag]| {
                f.iter()
                    .map(|f| format!("--{} ({})", f.name, f.kind))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            out.push(at(
                "flags",
                format!(
                    "manifest flags [{}] differ from describe's [{}]",
                    names(&m.flags),
                    names(&real_flags)
                ),
            ));
        }
    }
    out
}

/// Problems of a component file itself: not a component of a known world,
/// imports Lobster refuses, or failing to link or describe.
pub fn component_findings(bytes: &[u8], path: &Path, cache: &ArtifactCache) -> Vec<Finding> {
    let seen = match inspect(bytes, path, cache) {
        Ok(s) => s,
        // The finding names the path already.
        Err(crate::sandbox::SandboxError::BadComponent { detail, .. }) => {
            return vec![Finding::new(path, detail)]
        }
        Err(e) => return vec![Finding::new(path, format!("not a valid component: {e}"))],
    };
    let mut out: Vec<Finding> = seen
        .import_problems()
        .into_iter()
        .map(|m| Finding::new(path, m))
        .collect();
    if seen.kind.is_none() {
        out.push(Finding::new(
            path,
            "implements neither the lobster:step world (exports describe and run) nor wasi:cli/command (exports wasi:cli/run)",
        ));
    }
    if out.is_empty() {
        if let Err(e) = load_bytes(bytes, path, cache) {
            out.push(Finding::new(path, e.to_string()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities_as_text_and_keys_by_line() {
        let caps = [
            Requirement::Dir {
                path: "/mail".into(),
                access: Access::Read,
            },
            Requirement::Dir {
                path: "/out".into(),
                access: Access::ReadWrite,
            },
            Requirement::Env {
                name: "LANG".into(),
            },
        ];
        let text: Vec<String> = caps.iter().map(capability_text).collect();
        assert_eq!(text, ["read /mail", "write /out", "env LANG"]);
        let manifest = "format = 1\nname = \"x\"\ncapabilities = []\n\n[[flags]]\nname = \"n\"\n";
        assert_eq!(line_of(manifest, "capabilities"), Some(3));
        assert_eq!(line_of(manifest, "flags"), Some(5));
        assert_eq!(line_of(manifest, "blake3"), None);
    }

    #[test]
    fn a_missing_or_broken_manifest_is_a_finding() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = ArtifactCache::disabled();
        let f = verify(tmp.path(), &cache);
        assert_eq!(f.len(), 1);
        assert!(
            f[0].message.starts_with("cannot read the manifest"),
            "{f:?}"
        );
        std::fs::write(tmp.path().join(MANIFEST), "format = 1\nname = 3\n").unwrap();
        let f = verify(tmp.path(), &cache);
        assert_eq!(f[0].line, Some(2), "{f:?}");
        assert!(f[0].message.starts_with("invalid manifest"), "{f:?}");
    }
}
