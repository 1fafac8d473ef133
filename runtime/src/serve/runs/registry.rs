//! The run registry in the tenant's store: the keys of run records and of
//! the pending list, reading and saving records (retrying a settled one
//! while the store is down), the handing out of a run's id before it
//! settles, the nodes' heartbeats and the live set's shutdown.

use crate::kernel::CancelReason;
use crate::resume::approval_id::now_iso;
use crate::serve::state::AppState;
use crate::serve::tenant::Tenant;
use crate::serve::{ApiError, Log};
use crate::state::StateStore;
use serde_json::{json, Value};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

const PENDING: &str = "serve_pending_";

fn node_key(node: &str) -> String {
    format!("serve_node_{node}")
}

/// Record that `node` is alive now (its heartbeat key in the root store).
pub fn beat(root: &StateStore, node: &str) -> crate::error::Result<()> {
    root.set(&node_key(node), &json!({ "node": node, "at": now_iso() }))
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
    let age = app.root.age(&node_key(node)).map_err(ApiError::store)?;
    Ok(age.is_none_or(|a| a > app.root.lease()))
}

pub(super) fn pending_key(run_id: &str) -> String {
    format!("{PENDING}{run_id}")
}

pub(crate) fn record_key(run_id: &str) -> String {
    format!("serve_run_{run_id}")
}

/// Whether `id` looks like a runId (32 lowercase hex).
pub fn valid_run_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The record of `run_id` among the tenant's: its key in the store, else
/// the run log (runs answered within their `wait`, files store).
pub fn load_record(tenant: &Tenant, run_id: &str) -> Result<Option<Value>, ApiError> {
    if !valid_run_id(run_id) {
        return Ok(None);
    }
    if let Some(rec) = tenant
        .store
        .get(&record_key(run_id))
        .map_err(ApiError::store)?
    {
        return Ok(Some(rec));
    }
    match &tenant.run_log {
        Some(log) => log.get(run_id).map_err(ApiError::store),
        None => Ok(None),
    }
}

pub(super) fn save_record(store: &StateStore, record: &Value, log: &Log) {
    let id = record["runId"].as_str().unwrap_or_default();
    if let Err(e) = store.set(&record_key(id), record) {
        log(&format!("lobster serve: cannot write run record {id}: {e}"));
    }
}

/// Save a settled run's record, retrying while the store is down (a
/// database restart) for up to [`SETTLE_SAVE_FOR`]: the run was
/// acknowledged, so its outcome must not be lost to a short outage.
pub(super) fn save_settled(store: &StateStore, record: &Value, log: &Log) {
    let id = record["runId"].as_str().unwrap_or_default();
    save_retrying(store, &record_key(id), record, log)
}

/// Write `key`, retrying while the store is down for up to [`SETTLE_SAVE_FOR`].
pub(super) fn save_retrying(store: &StateStore, key: &str, value: &Value, log: &Log) {
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

/// The tenant's paused runs: `[{runId, approvalId?, kind, createdAt}]`,
/// by runId.
pub fn pending(tenant: &Tenant) -> Result<Vec<Value>, ApiError> {
    Ok(tenant
        .store
        .list_prefix(PENDING)
        .map_err(ApiError::store)?
        .into_iter()
        .map(|(_, v)| v)
        .collect())
}

/// The pending-list entry of a record paused at a gate.
pub(super) fn pending_entry(rec: &Value) -> Option<Value> {
    let status = rec["status"].as_str()?;
    (status == "needs_approval" || status == "needs_input").then(|| {
        json!({
            "runId": rec["runId"],
            "approvalId": rec["envelope"]["requiresApproval"]["approvalId"],
            "kind": status,
            "createdAt": rec["updatedAt"],
        })
    })
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
