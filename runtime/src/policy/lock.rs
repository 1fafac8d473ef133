//! `lobster.lock`: the blake3 digest every step name is pinned to.
//!
//! ```toml
//! # lobster.lock: written by `lobster lock`; review changes like code.
//! version = 1
//!
//! [steps]
//! "inbox.list" = "3f9a…"   # 64 hex digits of blake3
//!
//! [oci]                     # registry references, by the reference without digest
//! "oci://ghcr.io/acme/greet:0.1" = { digest = "sha256:…", blake3 = "…" }
//! ```
//!
//! Entries are sorted by name, so the file is deterministic. At plan time a
//! pinned step whose component no longer has its pinned digest is refused;
//! a registry reference is fetched by its pinned digest (never by its tag)
//! and its component must have the pinned blake3.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The lock file's name, looked up in the run's working directory.
pub const LOCK_FILE: &str = "lobster.lock";

/// Parsed `lobster.lock`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockFile {
    /// Format version (1).
    pub version: u32,
    /// Step name → blake3 digest (64 lowercase hex digits).
    #[serde(default)]
    pub steps: BTreeMap<String, String>,
    /// `oci://host/repo:tag` → the manifest digest and component blake3.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub oci: BTreeMap<String, OciPin>,
}

/// What a registry reference is pinned to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OciPin {
    /// The OCI manifest digest (`sha256:` and 64 hex digits).
    pub digest: String,
    /// The component's blake3 (64 hex digits).
    pub blake3: String,
}

impl LockFile {
    /// An empty version-1 lock.
    pub fn new() -> Self {
        LockFile {
            version: 1,
            steps: BTreeMap::new(),
            oci: BTreeMap::new(),
        }
    }

    /// Parse lock `text` read from `path`; errors name the file and field.
    pub fn parse(text: &str, path: &Path) -> Result<Self> {
        let bad =
            |msg: String| Error::parse(format!("invalid lock file {}: {msg}", path.display()));
        let lock: LockFile =
            toml::from_str(text).map_err(|e| bad(e.to_string().trim_end().into()))?;
        if lock.version != 1 {
            return Err(bad(format!(
                "version {} is not supported (expected 1)",
                lock.version
            )));
        }
        let blake3 = |d: &str| {
            d.len() == 64
                && d.bytes()
                    .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        };
        for (name, digest) in &lock.steps {
            if !blake3(digest) {
                return Err(bad(format!(
                    "steps.{name:?} must be a blake3 digest (64 lowercase hex digits), got {digest:?}"
                )));
            }
        }
        for (name, pin) in &lock.oci {
            // The reference without digest (`oci://host/repo:tag`); the
            // registry module parses it in full when it is used.
            let rest = name.strip_prefix("oci://").unwrap_or_default();
            let tagged = rest
                .rsplit('/')
                .next()
                .is_some_and(|last| last.contains(':'));
            if !rest.contains('/') || name.contains('@') || !tagged {
                return Err(bad(format!(
                    "oci.{name:?} must be a registry reference without digest (oci://HOST/REPO:TAG)"
                )));
            }
            let sha256 = pin.digest.strip_prefix("sha256:").is_some_and(|h| {
                h.len() == 64
                    && h.bytes()
                        .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
            });
            if !sha256 {
                return Err(bad(format!(
                    "oci.{name:?}.digest must be sha256: and 64 lowercase hex digits, got {:?}",
                    pin.digest
                )));
            }
            if !blake3(&pin.blake3) {
                return Err(bad(format!(
                    "oci.{name:?}.blake3 must be a blake3 digest (64 lowercase hex digits), got {:?}",
                    pin.blake3
                )));
            }
        }
        Ok(lock)
    }

    /// Read `path`.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::parse(format!("cannot read lock file {}: {e}", path.display())))?;
        Self::parse(&text, path)
    }

    /// The pinned digest of `name`.
    pub fn pin(&self, name: &str) -> Option<&str> {
        self.steps.get(name).map(String::as_str)
    }

    /// The pin of registry reference `unpinned` (`oci://host/repo:tag`).
    pub fn oci_pin(&self, unpinned: &str) -> Option<&OciPin> {
        self.oci.get(unpinned)
    }

    /// The file's text (deterministic: sorted, fixed header).
    pub fn to_text(&self) -> String {
        let mut out = String::from(
            "# lobster.lock: written by `lobster lock`; review changes like code.\nversion = 1\n\n[steps]\n",
        );
        for (name, digest) in &self.steps {
            let key = toml::Value::String(name.clone()).to_string();
            out.push_str(&format!("{key} = \"{digest}\"\n"));
        }
        if !self.oci.is_empty() {
            out.push_str("\n[oci]\n");
            for (name, pin) in &self.oci {
                let key = toml::Value::String(name.clone()).to_string();
                out.push_str(&format!(
                    "{key} = {{ digest = \"{}\", blake3 = \"{}\" }}\n",
                    pin.digest, pin.blake3
                ));
            }
        }
        out
    }

    /// The 1-based line of `name`'s entry in `text`, for diagnostics.
    pub fn line_of(text: &str, name: &str) -> Option<usize> {
        let quoted = toml::Value::String(name.to_string()).to_string();
        text.lines()
            .position(|l| {
                let l = l.trim_start();
                l.starts_with(&quoted)
                    || l.starts_with(&format!("{name} "))
                    || l.starts_with(&format!("{name}="))
            })
            .map(|i| i + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_sorted() {
        let mut l = LockFile::new();
        l.steps.insert("z.step".into(), "a".repeat(64));
        l.steps.insert("a.step".into(), "b".repeat(64));
        let text = l.to_text();
        assert!(text.find("a.step").unwrap() < text.find("z.step").unwrap());
        assert_eq!(
            LockFile::parse(&text, Path::new("lobster.lock")).unwrap(),
            l
        );
        assert_eq!(LockFile::line_of(&text, "z.step"), Some(6));
    }

    #[test]
    fn registry_pins_round_trip_and_are_checked() {
        let mut l = LockFile::new();
        l.oci.insert(
            "oci://127.0.0.1:5000/t/greet:0.1".into(),
            OciPin {
                digest: format!("sha256:{}", "c".repeat(64)),
                blake3: "d".repeat(64),
            },
        );
        let text = l.to_text();
        let back = LockFile::parse(&text, Path::new("lobster.lock")).unwrap();
        assert_eq!(back, l);
        let pin = back.oci_pin("oci://127.0.0.1:5000/t/greet:0.1").unwrap();
        assert_eq!(pin.blake3, "d".repeat(64));
        assert_eq!(
            LockFile::line_of(&text, "oci://127.0.0.1:5000/t/greet:0.1"),
            Some(7)
        );
        let bad = text.replace("sha256:", "md5:");
        let msg = LockFile::parse(&bad, Path::new("l"))
            .unwrap_err()
            .to_string();
        assert!(msg.contains("digest must be sha256"), "{msg}");
        let bad = text.replace("greet:0.1", "greet");
        assert!(LockFile::parse(&bad, Path::new("l")).is_err());
    }

    #[test]
    fn bad_digest_is_named() {
        let msg = LockFile::parse("version = 1\n[steps]\nx = \"nothex\"\n", Path::new("l"))
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("steps.\"x\"") && msg.contains("nothex"),
            "{msg}"
        );
    }
}
