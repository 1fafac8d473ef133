//! A record left `running` by a process that ended: reported, and stored,
//! as `interrupted` — unless its node on a shared PostgreSQL store is still
//! beating, or it was a resume whose steps after the gate are all pure, in
//! which case the gate opens again.

use super::registry::{load_record, node_gone, save_record, valid_run_id};
use crate::app;
use crate::resume::approval_id::now_iso;
use crate::serve::state::AppState;
use crate::serve::tenant::Tenant;
use crate::serve::ApiError;
use crate::state::{PendingEntry, RunRecord, RunStatus};

/// The record of `run_id` as it stands: a record still `running` whose run
/// is not going on in this process was left by a process that ended (killed,
/// crashed, power loss), so it is reported, and stored, as `interrupted`.
/// With a PostgreSQL store, a record of another node is left alone while
/// that node's heartbeat is younger than a lease.
pub fn current_record(
    app: &AppState,
    tenant: &Tenant,
    run_id: &str,
) -> Result<Option<RunRecord>, ApiError> {
    if !valid_run_id(run_id) {
        return Ok(None);
    }
    if let Some(l) = app
        .live
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(run_id)
        .filter(|l| l.tenant == tenant.name)
    {
        return Ok(Some(l.record.clone()));
    }
    let rec = load_record(tenant, run_id)?;
    if rec.as_ref().is_none_or(|r| r.status != RunStatus::Running) {
        return Ok(rec);
    }
    // Settling saves the record and leaves the live set under this lock
    // (PostgreSQL: it saves first, then leaves the live set under the lock).
    let _g = tenant.index_lock.lock().unwrap_or_else(|p| p.into_inner());
    let Some(mut rec) = load_record(tenant, run_id)? else {
        return Ok(None);
    };
    let live = app
        .live
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .contains_key(run_id);
    if rec.status != RunStatus::Running || live {
        return Ok(Some(rec));
    }
    let node = rec.node.clone().unwrap_or_default();
    if node.is_empty() && !app.root.is_files() {
        // Queued, not yet taken (or taken by a node that has not stored
        // its record yet): the queue says where it stands.
        use crate::state::JobStatus;
        let job = tenant.store.job_status(run_id).map_err(ApiError::store)?;
        match job {
            Some(JobStatus::Queued | JobStatus::Running) => return Ok(Some(rec)),
            Some(JobStatus::Interrupted) => {}
            None => match load_record(tenant, run_id)? {
                Some(again) if again.status != RunStatus::Running || again.node.is_some() => {
                    return Ok(Some(again))
                }
                _ => {}
            },
        }
    }
    if !app.root.is_files() && node == app.node {
        // A queued run this node took: its record names this node just
        // before it joins the live set. Going on while its job is held.
        use crate::state::JobStatus;
        let job = tenant.store.job_status(run_id).map_err(ApiError::store)?;
        if matches!(job, Some(JobStatus::Running)) {
            return Ok(Some(rec));
        }
    }
    let elsewhere = !app.root.is_files() && !node.is_empty() && node != app.node;
    if elsewhere && !node_gone(app, &node)? {
        return Ok(Some(rec));
    }
    let reason = if elsewhere {
        format!("node {node}, which ran it, stopped (no heartbeat for a lease)")
    } else {
        "the server stopped while the run was going on".to_string()
    };
    match reopen_gate(tenant, &rec, &reason)? {
        Reopen::Reopened(paused) => {
            save_record(&tenant.store, &paused, &app.log);
            return Ok(Some(*paused));
        }
        Reopen::StillClaimed => return Ok(Some(rec)),
        Reopen::No => {}
    }
    rec.status = RunStatus::Interrupted;
    rec.updated_at = Some(now_iso());
    rec.reason = Some(reason);
    save_record(&tenant.store, &rec, &app.log);
    Ok(Some(rec))
}

/// What becomes of a resume whose process stopped.
enum Reopen {
    /// Every step after the gate is pure and the dead resumer's claim has
    /// ended: the run is paused at its gate again (this record).
    Reopened(Box<RunRecord>),
    /// Pure, but the store still holds the dead resumer's claim (its lease
    /// has not run out yet): report it running until it does.
    StillClaimed,
    /// Not a resume, or not pure: the run is interrupted.
    No,
}

/// A resume (`rec.gate`, the paused record it decided) whose process
/// stopped: when the store says its run may be claimed again
/// ([`crate::resume::claim::claimable`]: what runs after the gate may run again),
/// put the paused record back — the gate is open again and takes a new
/// decision; the store's claim still lets exactly one resume run it.
fn reopen_gate(tenant: &Tenant, rec: &RunRecord, reason: &str) -> Result<Reopen, ApiError> {
    let Some(paused) = rec.gate.as_deref() else {
        return Ok(Reopen::No);
    };
    let Some(token) = paused.gate_token() else {
        return Ok(Reopen::No);
    };
    let store = &tenant.store;
    let Ok(key) = crate::resume::token::decode(store, token).map(|t| t.state_key) else {
        return Ok(Reopen::No);
    };
    if crate::resume::claim::claimable(store, &key)
        .map_err(ApiError::store)?
        .is_none()
    {
        let held = match store.pg().map_err(ApiError::store)? {
            Some(pg) => crate::state::key_to_file_name(&key)
                .ok()
                .map(|name| pg.run_status(&name))
                .transpose()
                .map_err(ApiError::store)?
                .flatten()
                .is_some_and(|row| row.rerun && row.status == "resuming"),
            None => false,
        };
        return Ok(if held {
            Reopen::StillClaimed
        } else {
            Reopen::No
        });
    }
    let mut reopened = paused.clone();
    reopened.updated_at = Some(now_iso());
    reopened.reason = Some(format!(
        "{reason} during the resume; what runs after the gate may run again, so the gate is open again"
    ));
    // The gate was taken by the resume that died: give it back.
    app::gate::reopen(store, &key);
    if let Some(entry) = reopened.pending_entry() {
        store
            .set(&PendingEntry::key(&rec.run_id), &entry.to_value())
            .map_err(ApiError::store)?;
    }
    Ok(Reopen::Reopened(Box::new(reopened)))
}
