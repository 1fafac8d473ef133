//! Exactly-once consumption of a resume state, by the store's back end.
//!
//! Files: claiming renames the state file to a name unique to this process.
//! rename(2) is atomic: when many `lobster resume` processes race for one
//! token, exactly one rename succeeds and the others find the file gone. The
//! winner reads the claimed file and removes it at once: the state now lives
//! only in memory, and the token can never run again. A process killed
//! between the rename and the removal leaves the claimed file behind; the
//! next claim sweeps it ([`crate::state::sweep_orphans`]).
//!
//! PostgreSQL: one `UPDATE lobster_runs SET status='resuming',
//! claim_epoch=claim_epoch+1, lease_until=now()+lease … WHERE status='paused'
//! RETURNING body, claim_epoch`: row locking lets exactly one of any number
//! of racers (on any node) match. The winner holds a lease, extended by a
//! heartbeat thread while the run executes; its later writes to the row are
//! fenced by `claim_epoch`. When the resume ends the row is deleted. A
//! claimer that dies stops heartbeating; once its lease expires the run is
//! marked `interrupted` and is never claimed again (see docs/ARCHITECTURE.md,
//! "Store", for the recovery rule).

use super::interrupted::InterruptedRecord;
use crate::error::{Error, Result};
use crate::state::pg::Tenant;
use crate::state::{random_hex, sweep_now_and_then, sync_dir, StateStore};
use serde_json::Value;
use std::fs;
use std::io::ErrorKind;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A resume state this process owns. While it is held, the store keeps a
/// record of the run ([`super::interrupted`]: a record file, or the claimed
/// row); dropping the claim (the resume finished, one way or another) removes
/// it, and a killed process leaves it.
#[derive(Debug)]
pub struct Claim {
    /// The state as it was when claimed.
    pub state: Value,
    store: StateStore,
    hold: Hold,
}

#[derive(Debug)]
enum Hold {
    Files {
        record: Option<String>,
    },
    Postgres {
        pg: Tenant,
        key: String,
        epoch: i64,
        lost: Arc<AtomicBool>,
        /// When the database last confirmed the lease (the claim or a
        /// heartbeat): the lease holds until then + the lease's length.
        confirmed: Arc<Mutex<Instant>>,
        heartbeat: Option<(mpsc::Sender<()>, JoinHandle<()>)>,
    },
    Abandoned,
}

impl Claim {
    /// The claim epoch (PostgreSQL), `None` for the files store.
    pub fn epoch(&self) -> Option<i64> {
        match &self.hold {
            Hold::Postgres { epoch, .. } => Some(*epoch),
            _ => None,
        }
    }

    /// Check, with a fenced write, that this claim is still held: the
    /// PostgreSQL store extends the lease only if the row still carries this
    /// claim's epoch. An error when the lease expired meanwhile (the run was
    /// marked interrupted): what this resume did is then not saved. Always
    /// `Ok` for the files store, whose claims cannot expire.
    pub fn check_held(&self) -> Result<()> {
        let Hold::Postgres {
            pg,
            key,
            epoch,
            lost,
            confirmed,
            ..
        } = &self.hold
        else {
            return Ok(());
        };
        // The database down for a moment does not lose a run whose steps
        // finished: the fenced write is retried while the lease lasts.
        if !lost.load(Ordering::SeqCst)
            && while_leased(pg.lease, confirmed, || pg.heartbeat(key, *epoch))?
        {
            return Ok(());
        }
        lost.store(true, Ordering::SeqCst);
        Err(Error::runtime(format!(
            "the claim on this run expired while it ran (lease {} s, claim epoch {epoch}): it is marked interrupted and its result is not saved",
            pg.lease.as_secs_f64()
        ))
        .with_hint("a heartbeat could not reach the database in time; check the database, then look at what the run did before starting it anew"))
    }

    /// Stop the heartbeat but keep the claim, as a process that hangs (or
    /// loses the database for longer than the lease) would: the lease then
    /// runs out. For tests of lease expiry and fencing.
    pub fn stop_heartbeat(&mut self) {
        if let Hold::Postgres { heartbeat, .. } = &mut self.hold {
            stop(heartbeat.take());
        }
    }

    /// Stop holding the claim without ending it, as a killed process would:
    /// the record stays and the heartbeat stops. For tests of recovery.
    pub fn abandon(mut self) {
        if let Hold::Postgres { heartbeat, .. } = &mut self.hold {
            stop(heartbeat.take());
        }
        self.hold = Hold::Abandoned;
    }
}

fn stop(heartbeat: Option<(mpsc::Sender<()>, JoinHandle<()>)>) {
    if let Some((tx, handle)) = heartbeat {
        drop(tx);
        let _ = handle.join();
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        match &mut self.hold {
            Hold::Files { record: Some(key) } => {
                let _ = self.store.remove(key);
            }
            Hold::Postgres {
                pg,
                key,
                epoch,
                heartbeat,
                confirmed,
                ..
            } => {
                stop(heartbeat.take());
                // Fenced: a claim that expired meanwhile leaves the run
                // marked interrupted. Retried while the lease lasts, so a
                // database restart at this moment does not turn a finished
                // run into an interrupted one.
                let _ = while_leased(pg.lease, confirmed, || pg.release(key, *epoch));
            }
            _ => {}
        }
    }
}

/// Claim `state_key`. `Ok(None)` when it is gone (already resumed, cancelled,
/// interrupted, or never existed).
pub fn claim(store: &StateStore, state_key: &str) -> Result<Option<Claim>> {
    match store.pg()? {
        Some(pg) => claim_row(store, pg, state_key),
        None => claim_file(store, state_key),
    }
}

fn claim_row(store: &StateStore, pg: &Tenant, state_key: &str) -> Result<Option<Claim>> {
    let key = crate::state::key_to_file_name(state_key)?;
    let Some((body, epoch)) = pg.claim(&key, crate::state::pg::claimer())? else {
        return Ok(None);
    };
    let lost = Arc::new(AtomicBool::new(false));
    let confirmed = Arc::new(Mutex::new(Instant::now()));
    let heartbeat = {
        let (tx, rx) = mpsc::channel::<()>();
        let (pg, key, lost) = (pg.clone(), key.clone(), lost.clone());
        let confirmed = confirmed.clone();
        let every = pg.lease / 3;
        let handle = std::thread::Builder::new()
            .name("lobster-lease".into())
            .spawn(move || {
                while let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(every) {
                    let asked = Instant::now();
                    match pg.heartbeat(&key, epoch) {
                        Ok(true) => *confirmed.lock().unwrap_or_else(|p| p.into_inner()) = asked,
                        Ok(false) => {
                            lost.store(true, Ordering::SeqCst);
                            return;
                        }
                        // The database is unreachable for now: try again at
                        // the next beat, while the lease lasts.
                        Err(_) => {}
                    }
                }
            })
            .map_err(|e| Error::runtime(format!("cannot start the lease heartbeat: {e}")))?;
        Some((tx, handle))
    };
    let mut claim = Claim {
        state: Value::Null,
        store: store.clone(),
        hold: Hold::Postgres {
            pg: pg.clone(),
            key,
            epoch,
            lost,
            confirmed,
            heartbeat,
        },
    };
    // A state that does not parse is spent all the same (the claim, dropped
    // here, ends it), as with the files store.
    claim.state =
        serde_json::from_str(&body).map_err(|_| Error::runtime("Invalid pipeline resume state"))?;
    Ok(Some(claim))
}

/// Call `f` until it answers, retrying (with backoff) while it fails and
/// the lease — `lease` from the database's last confirmation — lasts; its
/// last error once the lease is over. The write `f` makes is fenced by the
/// claim epoch, so a retry can never act on a claim taken over by another.
fn while_leased<T>(
    lease: Duration,
    confirmed: &Mutex<Instant>,
    mut f: impl FnMut() -> Result<T>,
) -> Result<T> {
    let mut pause = Duration::from_millis(50);
    loop {
        match f() {
            Ok(v) => return Ok(v),
            Err(e) => {
                let until = *confirmed.lock().unwrap_or_else(|p| p.into_inner()) + lease;
                let left = until.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(e);
                }
                std::thread::sleep(pause.min(left));
                pause = (pause * 2).min(Duration::from_secs(1));
            }
        }
    }
}

fn claim_file(store: &StateStore, state_key: &str) -> Result<Option<Claim>> {
    let path = store.path_for(state_key)?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("state");
    let claimed = store
        .dir()
        .join(format!(".{name}.claimed-{}", random_hex(6)));
    match fs::rename(&path, &claimed) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::NotFound => return take_over_file(store, state_key),
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
        store.set(&key, &body.to_value()).ok().map(|()| key)
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
        hold: Hold::Files { record },
    }))
}

/// The paused state `state_key` names, as a claim would get it, without
/// claiming it: the paused state, or the state of a run whose resumer died
/// when every step after its gate is pure ([`crate::policy::recovery`]).
/// `None` when there is nothing to claim.
pub fn claimable(store: &StateStore, state_key: &str) -> Result<Option<Value>> {
    Ok(claimable_as(store, state_key)?.map(|(state, _)| state))
}

/// [`claimable`], with which claim of the run it would be: `""` for a
/// paused state; for a run whose resumer died, an identity of that dead
/// claim (its interrupted record, or its claim epoch), so that each
/// take-over is told apart from the ones before it.
pub fn claimable_as(store: &StateStore, state_key: &str) -> Result<Option<(Value, String)>> {
    if let Some(state) = store.get(state_key)? {
        return Ok(Some((state, String::new())));
    }
    match store.pg()? {
        Some(pg) => {
            let key = crate::state::key_to_file_name(state_key)?;
            Ok(pg
                .run_get_rerunnable_epoch(&key)?
                .and_then(|(body, epoch)| {
                    let state = serde_json::from_str(&body).ok()?;
                    Some((state, format!("epoch {epoch}")))
                }))
        }
        // The identity is of the record's stored JSON, as every version
        // hashed it (nodes of two versions must name one claim alike).
        None => Ok(dead_rerun_record(store, state_key).map(|(stored, state)| {
            let id = blake3::hash(stored.to_string().as_bytes()).to_hex()[..16].to_string();
            (state, format!("record {id}"))
        })),
    }
}

/// The files store's interrupted record of `state_key` (its stored JSON)
/// and the state it carries, when the record says the run may run again
/// and its claimer is a process that no longer exists (never this one).
fn dead_rerun_record(store: &StateStore, state_key: &str) -> Option<(Value, Value)> {
    let stored = store
        .get(&super::interrupted::record_key(state_key))
        .ok()??;
    let record = InterruptedRecord::from_value(stored.clone())?;
    let state = record.rerun_state()?.clone();
    let pid = record.pid;
    if pid == u64::from(std::process::id()) || super::interrupted::pid_alive(pid) {
        return None;
    }
    Some((stored, state))
}

/// A paused run whose state file is gone may still be claimable: its
/// interrupted record says what runs after the gate may run again
/// ([`crate::policy::recovery`]), carries the state, and names a claimer
/// process that no longer exists (never this process: a resume going on in
/// another of its threads is not taken over). Of many racers, the one whose
/// rename(2) of the record succeeds takes it over and writes a record of its
/// own; the others find nothing.
fn take_over_file(store: &StateStore, state_key: &str) -> Result<Option<Claim>> {
    let Some((record, state)) = dead_rerun_record(store, state_key) else {
        return Ok(None);
    };
    let key = super::interrupted::record_key(state_key);
    let path = store.path_for(&key)?;
    let taken = store.dir().join(format!(
        ".{}.claimed-{}",
        path.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("record"),
        random_hex(6)
    ));
    match fs::rename(&path, &taken) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(Error::runtime(format!(
                "cannot take over the interrupted run {}: {e}",
                path.display()
            )))
        }
    }
    // The file renamed is the record judged above only if no other taker
    // replaced it in between (with a record of its own, a live claimer):
    // compare it whole, and put anything else back.
    let renamed: Option<Value> = fs::read(&taken)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    if renamed.as_ref() != Some(&record) {
        let _ = fs::rename(&taken, &path);
        return Ok(None);
    }
    let record = super::interrupted::record_for(state_key, &state);
    let kept = store.set(&key, &record.to_value()).ok().map(|()| key);
    if fs::remove_file(&taken).is_ok() {
        let _ = sync_dir(store.dir());
    }
    // A claimer killed between writing its record and removing the state
    // file it claimed left that file: the record carries the state, so the
    // copy is garbage now (the sweep would take it only minutes later).
    if let Ok(state_path) = store.path_for(state_key) {
        if let Some(name) = state_path.file_name().and_then(|n| n.to_str()) {
            let prefix = format!(".{name}.claimed-");
            for entry in fs::read_dir(store.dir()).into_iter().flatten().flatten() {
                if entry.file_name().to_string_lossy().starts_with(&prefix) {
                    let _ = fs::remove_file(entry.path());
                }
            }
        }
    }
    Ok(Some(Claim {
        state,
        store: store.clone(),
        hold: Hold::Files { record: kept },
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
