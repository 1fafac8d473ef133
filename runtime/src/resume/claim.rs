//! Exactly-once consumption of a resume state.
//!
//! Claiming renames the state file to a name unique to this process. rename(2)
//! is atomic: when many `lobster resume` processes race for one token, exactly
//! one rename succeeds and the others find the file gone. The winner reads the
//! claimed file and removes it at once: the state now lives only in memory,
//! and the token can never run again. A process killed between the rename and
//! the removal leaves the claimed file behind; the next claim sweeps it
//! ([`crate::state::sweep_orphans`]).

use crate::error::{Error, Result};
use crate::state::{random_hex, sweep_now_and_then, sync_dir, StateStore};
use serde_json::Value;
use std::fs;
use std::io::ErrorKind;

/// A resume state this process owns. While it is held, the store keeps an
/// [`super::interrupted`] record of the run; dropping the claim (the resume
/// finished, one way or another) removes it, and a killed process leaves it.
#[derive(Debug)]
pub struct Claim {
    /// The state as it was when claimed.
    pub state: Value,
    store: StateStore,
    record: Option<String>,
}

impl Drop for Claim {
    fn drop(&mut self) {
        if let Some(key) = &self.record {
            let _ = self.store.remove(key);
        }
    }
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
    // This process owns the file now: read it, then remove it whatever
    // the read gave (the token is spent either way).
    let bytes = fs::read(&claimed);
    let parsed: Option<Value> = bytes
        .as_ref()
        .ok()
        .and_then(|b| serde_json::from_slice(b).ok());
    // Record the run before the claimed file goes: from here on a kill
    // leaves the record (best effort: a store that cannot hold it still
    // resumes, as before).
    let record = parsed.as_ref().and_then(|state| {
        let key = super::interrupted::record_key(state_key);
        let body = super::interrupted::record_for(state_key, state);
        store.set(&key, &body).ok().map(|()| key)
    });
    if fs::remove_file(&claimed).is_ok() {
        let _ = sync_dir(store.dir());
    }
    sweep_now_and_then(store.dir());
    // A record exists only for a state that was read and parsed.
    let Some(state) = parsed else {
        bytes?;
        return Err(Error::runtime("Invalid pipeline resume state"));
    };
    Ok(Some(Claim {
        state,
        store: store.clone(),
        record,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::{Arc, Barrier};

    /// The files in `dir`, without the sweep marker.
    fn files_in(dir: &std::path::Path) -> Vec<String> {
        fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != ".swept")
            .collect()
    }

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
        assert_eq!(files_in(dir.path()), Vec::<String>::new());
    }

    #[test]
    fn a_claim_leaves_no_file_even_while_its_run_goes_on() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::new(dir.path());
        store.set("pipeline_resume_y", &json!({"b": 2})).unwrap();
        let held = claim(&store, "pipeline_resume_y").unwrap().unwrap();
        assert_eq!(held.state, json!({"b": 2}));
        // The state is in memory only, and the token finds no state; a
        // killed resumer leaves only the record of the interrupted run.
        assert_eq!(
            files_in(dir.path()),
            vec!["interrupted_pipeline_resume_y.json".to_string()]
        );
        assert!(claim(&store, "pipeline_resume_y").unwrap().is_none());
        // A resume that ends removes the record.
        drop(held);
        assert_eq!(files_in(dir.path()), Vec::<String>::new());
    }
}
