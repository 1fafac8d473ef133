//! Exactly-once consumption of a resume state.
//!
//! Claiming renames the state file to a name unique to this process. rename(2)
//! is atomic: when many `lobster resume` processes race for one token, exactly
//! one rename succeeds and the others find the file gone. The claimed file is
//! removed when the claim is dropped; if the process is killed first, it stays
//! behind as a tombstone and the token can never run again.

use crate::error::{Error, Result};
use crate::state::{random_hex, sync_dir, StateStore};
use serde_json::Value;
use std::fs;
use std::io::ErrorKind;
use std::path::PathBuf;

/// A resume state this process owns.
#[derive(Debug)]
pub struct Claim {
    path: PathBuf,
    /// The state as it was when claimed.
    pub state: Value,
}

/// Claim `state_key`. `Ok(None)` when it is gone (already resumed, cancelled,
/// or never existed).
pub fn claim(store: &StateStore, state_key: &str) -> Result<Option<Claim>> {
    let path = store.path_for(state_key)?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("state");
    let claimed = store
        .dir()
        .join(format!(".{name}.claimed-{}", random_hex(6)));
    match fs::rename(&path, &claimed) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(Error::runtime(format!(
                "cannot claim resume state {}: {e}",
                path.display()
            )))
        }
    }
    // From here the claim owns the file: dropping it (even on error) removes it.
    let mut claim = Claim {
        path: claimed,
        state: Value::Null,
    };
    let bytes = fs::read(&claim.path)?;
    claim.state = serde_json::from_slice(&bytes)
        .map_err(|_| Error::runtime("Invalid pipeline resume state"))?;
    Ok(Some(claim))
}

impl Drop for Claim {
    fn drop(&mut self) {
        if fs::remove_file(&self.path).is_ok() {
            if let Some(dir) = self.path.parent() {
                let _ = sync_dir(dir);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::{Arc, Barrier};

    #[test]
    fn exactly_one_of_many_racers_wins_and_nothing_is_left() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::new(dir.path());
        store.set("pipeline_resume_x", &json!({"a": 1})).unwrap();
        let barrier = Arc::new(Barrier::new(16));
        let handles: Vec<_> = (0..16)
            .map(|_| {
                let (store, barrier) = (store.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    claim(&store, "pipeline_resume_x")
                        .unwrap()
                        .map(|c| c.state.clone())
                })
            })
            .collect();
        let wins: Vec<_> = handles
            .into_iter()
            .filter_map(|h| h.join().unwrap())
            .collect();
        assert_eq!(wins, vec![json!({"a": 1})]);
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
