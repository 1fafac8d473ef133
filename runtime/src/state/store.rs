//! The file-backed key/value store.

use super::atomic::{sync_dir, write_atomic};
use crate::error::{Error, Result};
use crate::value::{to_js_json_pretty, Item};
use std::fs::{self, DirBuilder};
use std::io::ErrorKind;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

/// JSON files in one directory, one per key.
#[derive(Debug, Clone)]
pub struct StateStore {
    dir: PathBuf,
}

impl StateStore {
    /// A store rooted at `dir` (created on first write).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        StateStore { dir: dir.into() }
    }

    /// `LOBSTER_STATE_DIR` (trimmed, if non-empty), else `~/.lobster/state`.
    pub fn from_env() -> Self {
        let configured = std::env::var("LOBSTER_STATE_DIR")
            .ok()
            .map(|s| s.trim().to_string());
        match configured.filter(|s| !s.is_empty()) {
            Some(dir) => StateStore::new(dir),
            None => {
                let home = std::env::var_os("HOME")
                    .map(PathBuf::from)
                    .unwrap_or_else(|| PathBuf::from("."));
                StateStore::new(home.join(".lobster").join("state"))
            }
        }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Create the directory (0700) if missing.
    pub fn ensure_dir(&self) -> Result<()> {
        if self.dir.is_dir() {
            return Ok(());
        }
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .map_err(|e| {
                Error::runtime(format!(
                    "cannot create state directory {}: {e}",
                    self.dir.display()
                ))
            })
    }

    /// The file that holds `key`.
    pub fn path_for(&self, key: &str) -> Result<PathBuf> {
        Ok(self.dir.join(key_to_file_name(key)?))
    }

    /// Read `key`; `None` when there is no such file.
    pub fn get(&self, key: &str) -> Result<Option<Item>> {
        let path = self.path_for(key)?;
        match fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
                Error::runtime(format!(
                    "state file {} is not valid JSON: {e}",
                    path.display()
                ))
            }),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::runtime(format!(
                "cannot read state file {}: {e}",
                path.display()
            ))),
        }
    }

    /// Write `key` atomically as `JSON.stringify(value, null, 2) + "\n"`.
    pub fn set(&self, key: &str, value: &Item) -> Result<()> {
        self.ensure_dir()?;
        let path = self.path_for(key)?;
        let mut text = to_js_json_pretty(value);
        text.push('\n');
        write_atomic(&path, text.as_bytes())
            .map_err(|e| Error::runtime(format!("cannot write state file {}: {e}", path.display())))
    }

    /// Write `key` atomically as compact JSON, refusing (and writing nothing)
    /// when that is more than `max_bytes`. Returns the bytes written. For
    /// values an untrusted writer chose: a pretty-printed deeply nested value
    /// can be a hundred times its compact size.
    pub fn set_compact(&self, key: &str, value: &Item, max_bytes: usize) -> Result<usize> {
        let text = crate::value::to_js_json(value);
        if text.len() > max_bytes {
            return Err(Error::runtime(format!(
                "state value is {} bytes as stored (limit {max_bytes})",
                text.len()
            )));
        }
        self.ensure_dir()?;
        let path = self.path_for(key)?;
        write_atomic(&path, text.as_bytes()).map_err(|e| {
            Error::runtime(format!("cannot write state file {}: {e}", path.display()))
        })?;
        Ok(text.len())
    }

    /// Remove `key`; a missing key is not an error.
    pub fn remove(&self, key: &str) -> Result<()> {
        let path = self.path_for(key)?;
        match fs::remove_file(&path) {
            Ok(()) => sync_dir(&self.dir).map_err(Error::from),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::runtime(format!(
                "cannot remove state file {}: {e}",
                path.display()
            ))),
        }
    }
}

/// The reference's `keyToPath`: lower-case; each run of characters outside
/// `[a-z0-9._-]` becomes `_`; runs of `_` collapse; one leading and one
/// trailing `_` are removed; then `.json` is appended. Keys are therefore
/// case-insensitive (`My/Key` and `my_key` are the same file).
pub fn key_to_file_name(key: &str) -> Result<String> {
    let mut safe = String::with_capacity(key.len());
    for ch in key.to_lowercase().chars() {
        let keep = ch.is_ascii_lowercase() || ch.is_ascii_digit() || matches!(ch, '.' | '_' | '-');
        let c = if keep { ch } else { '_' };
        if c == '_' && safe.ends_with('_') {
            continue;
        }
        safe.push(c);
    }
    let safe = safe.strip_prefix('_').unwrap_or(&safe);
    let safe = safe.strip_suffix('_').unwrap_or(safe);
    if safe.is_empty() {
        return Err(Error::runtime("state key is empty/invalid"));
    }
    Ok(format!("{safe}.json"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_normalisation_matches_reference() {
        assert_eq!(key_to_file_name("_Demo KEY_").unwrap(), "demo_key.json");
        assert_eq!(key_to_file_name("-Demo KEY-").unwrap(), "-demo_key-.json");
        assert_eq!(key_to_file_name(".Demo KEY.").unwrap(), ".demo_key..json");
        assert_eq!(
            key_to_file_name("My/Key").unwrap(),
            key_to_file_name("my_key").unwrap()
        );
        assert_eq!(
            key_to_file_name("../../etc/passwd").unwrap(),
            ".._.._etc_passwd.json"
        );
        assert!(key_to_file_name("///").is_err());
        assert!(key_to_file_name("").is_err());
    }

    #[test]
    fn compact_writes_are_bounded_in_stored_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::new(dir.path());
        let mut v = json!("x".repeat(1000));
        for _ in 0..100 {
            v = json!([v]);
        }
        let n = store.set_compact("deep", &v, 2000).unwrap();
        assert_eq!(n, 1000 + 2 + 200);
        assert_eq!(
            fs::metadata(store.path_for("deep").unwrap()).unwrap().len(),
            n as u64
        );
        assert_eq!(store.get("deep").unwrap(), Some(v.clone()));
        let err = store.set_compact("big", &v, 1000).unwrap_err();
        assert!(err.to_string().contains("limit 1000"), "{err}");
        assert!(!store.path_for("big").unwrap().exists());
    }

    #[test]
    fn set_get_remove_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::new(dir.path().join("nested"));
        assert_eq!(store.get("k").unwrap(), None);
        store.set("k", &json!({"a": [1, 2]})).unwrap();
        assert_eq!(store.get("K").unwrap(), Some(json!({"a": [1, 2]})));
        let text = fs::read_to_string(store.path_for("k").unwrap()).unwrap();
        assert_eq!(text, "{\n  \"a\": [\n    1,\n    2\n  ]\n}\n");
        store.remove("k").unwrap();
        store.remove("k").unwrap();
        assert_eq!(store.get("k").unwrap(), None);
    }
}
