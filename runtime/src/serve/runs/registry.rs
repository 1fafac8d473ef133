//! The run registry in the tenant's store: the keys of run records and of
//! the pending list, reading and saving records (retrying a settled one
//! while the store is down), the handing out of a run's id before it
//! settles, the nodes' heartbeats and the live set's shutdown.

use crate::kernel::CancelReason;
use crate::resume::approval_id::now_iso;
use crate::serve::state::AppState;
use crate::serve::tenant::Tenant;
use crate::serve::{ApiError, Log};
use crate::state::{NodeBeat, PendingEntry, RunRecord, StateStore};
use serde_json::{Map, Value};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Record that `node` is alive now (its heartbeat key in the root store).
pub fn beat(root: &StateStore, node: &str) -> crate::error::Result<()> {
    let beat = NodeBeat {
        node: node.to_string(),
        at: now_iso(),
        extra: Map::new(),
    };
    root.set(&NodeBeat::key(node), &beat.to_value())
}

/// Beat every third of the lease while the server runs (a failed beat is
/// logged; the next one retries).
pub async fn keep_beating(app: Arc<AppState>) {
    let every = app.root.lease() / 3;
    loop {
        tokio::time::sleep(every).await;
        let a = app.clone();
        let res = tokio::task::spawn_blocking(move || beat(&a.root, &a.node)).await;
        if let Ok(Err(e)) = res {
            (app.log)(&format!(
                "lobster serve: cannot record this node's heartbeat: {e}"
            ));
        }
    }
}

/// Whether `node`'s heartbeat is older than a lease (or missing): it
/// stopped, and its runs will not settle.
pub(super) fn node_gone(app: &AppState, node: &str) -> Result<bool, ApiError> {
    let age = app
        .root
        .age(&NodeBeat::key(node))
        .map_err(ApiError::store)?;
    Ok(age.is_none_or(|a| a > app.root.lease()))
}

/// Whether `id` looks like a runId (32 lowercase hex).
pub fn valid_run_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The record of `run_id` among the tenant's: its key in the store, else
/// the run log (runs answered within their `wait`, files store).
/// A stored record that cannot be read is a 500 naming the run.
pub fn load_record(tenant: &Tenant, run_id: &str) -> Result<Option<RunRecord>, ApiError> {
    match read_record(tenant, run_id)? {
        Some(Ok(rec)) => Ok(Some(rec)),
        Some(Err(e)) => Err(ApiError::internal(e.to_string())),
        None => Ok(None),
    }
}

/// [`load_record`], with a stored record that is JSON but not a run record
/// this version can read given as `Some(Err)` (for a caller that skips it)
/// instead of a 500. A store that fails is still a 503.
pub fn read_record(
    tenant: &Tenant,
    run_id: &str,
) -> Result<Option<crate::error::Result<RunRecord>>, ApiError> {
    if !valid_run_id(run_id) {
        return Ok(None);
    }
    if let Some(rec) = tenant
        .store
        .get(&RunRecord::key(run_id))
        .map_err(ApiError::store)?
    {
        return Ok(Some(RunRecord::from_value(rec)));
    }
    match &tenant.run_log {
        Some(log) => Ok(log.get(run_id).map_err(ApiError::store)?.map(Ok)),
        None => Ok(None),
    }
}

pub(super) fn save_record(store: &StateStore, record: &RunRecord, log: &Log) {
    let id = &record.run_id;
    if let Err(e) = store.set(&RunRecord::key(id), &record.to_value()) {
        log(&format!("lobster serve: cannot write run record {id}: {e}"));
    }
}

/// Save a settled run's record, retrying while the store is down (a
/// database restart) for up to [`SETTLE_SAVE_FOR`]: the run was
/// acknowledged, so its outcome must not be lost to a short outage.
pub(super) fn save_settled(store: &StateStore, record: &RunRecord, log: &Log) {
    let key = RunRecord::key(&record.run_id);
    save_retrying(store, &key, &record.to_value(), log)
}

/// Save the pending entry of a paused run, retrying as [`save_settled`].
pub(super) fn save_pending(store: &StateStore, entry: &PendingEntry, log: &Log) {
    let key = PendingEntry::key(&entry.run_id);
    save_retrying(store, &key, &entry.to_value(), log)
}

/// Write `key`, retrying while the store is down for up to [`SETTLE_SAVE_FOR`].
fn save_retrying(store: &StateStore, key: &str, value: &Value, log: &Log) {
    let until = Instant::now() + SETTLE_SAVE_FOR;
    let mut pause = Duration::from_millis(100);
    loop {
        match store.set(key, value) {
            Ok(()) => return,
            Err(e) if Instant::now() >= until => {
                return log(&format!(
                    "lobster serve: cannot write {key} (gave up after {}s): {e}",
                    SETTLE_SAVE_FOR.as_secs()
                ))
            }
            Err(_) => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_secs(2));
            }
        }
    }
}

/// How long a settled record's save is retried while the store is down.
const SETTLE_SAVE_FOR: Duration = Duration::from_secs(60);

/// The tenant's paused runs, by runId (an entry that is not one is
/// skipped, as before: its run's record still answers for it).
pub fn pending(tenant: &Tenant) -> Result<Vec<PendingEntry>, ApiError> {
    Ok(tenant
        .store
        .list_prefix(PendingEntry::PREFIX)
        .map_err(ApiError::store)?
        .into_iter()
        .filter_map(|(_, v)| PendingEntry::from_value(v).ok())
        .collect())
}

/// Before a 202 hands out the id of a run still going on, store its
/// `running` record (unless it settled meanwhile: settling stores the final
/// record and leaves the live set under the same lock).
pub(super) fn hand_out(app: &AppState, tenant: &Tenant, run_id: &str) {
    let _g = tenant.index_lock.lock().unwrap_or_else(|p| p.into_inner());
    let record = app
        .live
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get_mut(run_id)
        .map(|l| {
            l.in_store = true;
            l.record.clone()
        });
    if let Some(r) = record {
        save_record(&tenant.store, &r, &app.log);
    }
}

/// Cancel every run going on (the shutdown's last step); returns how many.
pub fn cancel_all(app: &AppState) -> usize {
    let live = app.live.lock().unwrap_or_else(|p| p.into_inner());
    for l in live.values() {
        l.by_shutdown.store(true, Ordering::SeqCst);
        l.cancel.trigger(CancelReason::Signal {
            name: "SIGTERM",
            number: 15,
        });
    }
    live.len()
}
