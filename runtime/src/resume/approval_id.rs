//! Short approval ids: 8 lowercase hex characters aliasing a resume state.
//!
//! The alias is a file `approval_<id>.json` holding
//! `{"stateKey":"…","createdAt":"<ISO>"}`, published with a hard link so an
//! existing alias is never overwritten.

use crate::error::{Error, Result};
use crate::state::{random_hex, StateStore};
use serde_json::{json, Value};
use std::fs::{self, OpenOptions};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

const ATTEMPTS: usize = 16;

fn index_path(store: &StateStore, id: &str) -> PathBuf {
    store.dir().join(alias_name(id))
}

/// The alias's file name (files) or row key (PostgreSQL).
fn alias_name(id: &str) -> String {
    format!("approval_{id}.json")
}

/// Publish a fresh id for `state_key`. `Ok(None)` when this filesystem cannot
/// hold the alias (no hard links, read-only, full): the token still works.
///
/// The directory is not fsynced here: the caller writes the state file into
/// the same directory next, and that write's directory fsync covers the link.
pub fn publish(store: &StateStore, state_key: &str) -> Result<Option<String>> {
    let mut body =
        crate::value::to_js_json(&json!({"stateKey": state_key, "createdAt": now_iso()}));
    body.push('\n');
    if let Some(pg) = store.pg()? {
        for _ in 0..ATTEMPTS {
            let id = random_hex(4);
            if pg.kv_insert_new(&alias_name(&id), body.clone())? {
                return Ok(Some(id));
            }
        }
        return Err(Error::runtime("Could not allocate a unique approval ID"));
    }
    store.ensure_dir()?;
    for _ in 0..ATTEMPTS {
        let id = random_hex(4);
        let tmp = store
            .dir()
            .join(format!(".approval_{id}.{}.tmp", random_hex(6)));
        let result = (|| {
            let mut f = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&tmp)?;
            f.write_all(body.as_bytes())?;
            f.sync_all()?;
            fs::hard_link(&tmp, index_path(store, &id))
        })();
        let _ = fs::remove_file(&tmp);
        match result {
            Ok(()) => return Ok(Some(id)),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
            Err(_) => return Ok(None),
        }
    }
    Err(Error::runtime("Could not allocate a unique approval ID"))
}

/// The state key behind `raw` (characters outside `[a-f0-9]` are dropped first).
pub fn lookup(store: &StateStore, raw: &str) -> Result<(String, String)> {
    let id: String = raw
        .chars()
        .filter(|c| matches!(c, 'a'..='f' | '0'..='9'))
        .collect();
    let not_found = || {
        Error::parse(format!("Approval ID \"{id}\" not found or expired"))
            .with_hint("the run was already resumed or cancelled, or the id belongs to another state directory")
    };
    if id.is_empty() {
        return Err(not_found());
    }
    let text = match store.pg()? {
        Some(pg) => pg.kv_get(&alias_name(&id))?.ok_or_else(not_found)?,
        None => fs::read_to_string(index_path(store, &id)).map_err(|_| not_found())?,
    };
    let parsed: Value = serde_json::from_str(&text).map_err(|_| not_found())?;
    let key = parsed
        .get("stateKey")
        .and_then(Value::as_str)
        .ok_or_else(not_found)?;
    Ok((id, key.to_string()))
}

/// Remove the alias (missing is fine). Not fsynced: if the removal is lost in
/// a crash, the alias points at a state that is gone and reads as expired.
pub fn remove(store: &StateStore, id: &str) {
    if let Ok(Some(pg)) = store.pg() {
        let _ = pg.kv_remove(&alias_name(id));
        return;
    }
    let _ = fs::remove_file(index_path(store, id));
}

/// Current UTC time as JavaScript's `toISOString()`.
pub fn now_iso() -> String {
    chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn publish_lookup_remove() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::new(dir.path());
        let id = publish(&store, "pipeline_resume_1").unwrap().unwrap();
        assert_eq!(id.len(), 8);
        assert_eq!(lookup(&store, &id).unwrap().1, "pipeline_resume_1");
        // Uppercase characters are dropped, as in the reference (an id of
        // digits only has none).
        if id.chars().any(|c| c.is_ascii_alphabetic()) {
            assert!(lookup(&store, &id.to_uppercase()).is_err());
        }
        remove(&store, &id);
        let e = lookup(&store, &id).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("Approval ID \"{id}\" not found or expired")
        );
        assert_eq!(e.kind(), "parse_error");
    }

    #[test]
    fn corrupt_index_is_expired() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::new(dir.path());
        fs::write(dir.path().join("approval_0badf00d.json"), "{not json").unwrap();
        assert!(lookup(&store, "0badf00d").is_err());
    }
}
