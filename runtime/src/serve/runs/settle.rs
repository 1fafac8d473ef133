//! A run settled: what its waiter gets ([`Settled`]), its record stored
//! (and its pending entry when it paused, or the paused record given back
//! when a resume was refused before its gate was spent), and the live set
//! left.

use super::registry::{save_pending, save_settled};
use crate::app;
use crate::resume::approval_id::now_iso;
use crate::serve::state::AppState;
use crate::serve::tenant::Tenant;
use crate::state::{RunRecord, RunStatus};
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// What a run's waiter gets once it settles.
#[derive(Clone, Debug)]
pub enum Settled {
    /// The run's settled record.
    Record(Box<RunRecord>),
    /// A resume refused before its gate was spent (the gate is still open):
    /// the refusal's envelope.
    Refused(Value),
}

impl Settled {
    /// The envelope the run, or its refusal, answered with.
    pub fn envelope(&self) -> &Value {
        static NULL: Value = Value::Null;
        match self {
            Settled::Record(r) => r.envelope.as_ref().unwrap_or(&NULL),
            Settled::Refused(envelope) => envelope,
        }
    }
}

/// The receiver of a run's [`Settled`] (`None` until it settles).
pub type SettledRx = tokio::sync::watch::Receiver<Option<Settled>>;

/// A resume refused before its gate was spent: put the paused record
/// (`record.gate`) and its pending entry back and leave the live set.
pub(super) fn give_back(app: &AppState, tenant: &Tenant, record: RunRecord) {
    let _g = tenant.index_lock.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(paused) = &record.gate {
        if let Some(entry) = paused.pending_entry() {
            save_pending(&tenant.store, &entry, &app.log);
        }
        save_settled(&tenant.store, paused, &app.log);
    }
    app.live
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .remove(&record.run_id);
}

/// Store a settled run's record (and its pending entry when it paused),
/// and take it out of the live set; returns the record.
pub(super) fn settle_record(
    app: &AppState,
    tenant: &Tenant,
    record: RunRecord,
    reply: &app::Reply,
    by_shutdown: &AtomicBool,
    started: Instant,
) -> RunRecord {
    let shut = by_shutdown.load(Ordering::SeqCst);
    let status = reply.run_status(shut);
    let mut rec = record;
    rec.gate = None; // the gate it decided is history now
    rec.status = status.clone();
    rec.updated_at = Some(now_iso());
    rec.envelope = Some(reply.envelope.clone());
    if shut && !reply.ok() {
        rec.reason = Some("cancelled by the server's shutdown (shutdown_grace_ms passed)".into());
    }
    if is_policy_refusal(&reply.envelope) {
        app.metrics.policy_refused(&tenant.name);
    }
    app.metrics
        .run_settled(&tenant.name, status.as_str(), started.elapsed());
    let paused = status.is_paused();
    let run_id = rec.run_id.clone();
    let log = &app.log;
    // Files: everything under the lock. PostgreSQL: the writes go
    // outside it and only leaving the live set is under it, so runs
    // of one tenant settle side by side instead of one store round
    // trip at a time. A reader ([`current_record`]) holds the lock
    // across reading the record and the live set: a run it finds
    // gone from the live set has its final record stored already.
    let files = tenant.store.is_files();
    let mut g = files.then(|| tenant.index_lock.lock().unwrap_or_else(|p| p.into_inner()));
    let in_store = app
        .live
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&run_id)
        .is_none_or(|l| l.in_store);
    let logged = files
        && !paused
        && !in_store
        && tenant.run_log.as_ref().is_some_and(|l| {
            l.append(&run_id, &rec)
                .inspect_err(|e| log(&format!("lobster serve: {e}")))
                .is_ok()
        });
    // Answered within its wait with nothing of it stored yet: one
    // line in the run log (group-committed; the answer does not
    // wait for the disk). Otherwise its key in the store.
    if !logged {
        // The pending entry first: whoever sees the paused record
        // can find the gate listed.
        if let Some(entry) = rec.pending_entry() {
            save_pending(&tenant.store, &entry, log);
        }
        save_settled(&tenant.store, &rec, log);
        if status == RunStatus::NeedsApproval {
            crate::serve::approvals::notify_gate(app, tenant, &rec);
        }
    }
    if g.is_none() {
        g = Some(tenant.index_lock.lock().unwrap_or_else(|p| p.into_inner()));
    }
    let _g = g;
    app.live
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .remove(&run_id);
    rec
}

/// Whether an error envelope is the policy authority's refusal.
fn is_policy_refusal(envelope: &Value) -> bool {
    envelope["ok"] == false
        && crate::state::error_message(envelope).is_some_and(|m| m.contains("policy"))
}
