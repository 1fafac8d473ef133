//! Starting a run on the blocking pool and settling it: its `running`
//! record and place in the live set, its settled record (or, for a resume
//! refused before its gate was spent, the paused record given back), and
//! the tenant's run slots.

use super::registry::{pending_entry, pending_key, record_key, save_retrying, save_settled};
use crate::app::{self, Request, RunRequest, RunTarget};
use crate::kernel::Cancel;
use crate::resume::approval_id::now_iso;
use crate::serve::state::{AppState, Live};
use crate::serve::tenant::{RunSlot, Tenant};
use crate::serve::ApiError;
use axum::http::StatusCode;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// A run slot for `tenant`, or the 429.
pub fn slot(app: &AppState, tenant: &Arc<Tenant>) -> Result<RunSlot, ApiError> {
    if app.stopping() {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "shutting_down",
            "the server is shutting down; retry against its replacement",
        ));
    }
    tenant.admit_run().map_err(|_| {
        app.metrics.limited(&tenant.name, "too_many_runs");
        ApiError::too_many_runs(tenant.max_concurrent_runs)
    })
}

/// What a caller may attach to a run it starts: the run is cancelled with
/// `cancel` too, and its step logs go to `log` (an MCP call's client).
#[derive(Default)]
pub struct Attach {
    /// The caller's cancel, which the run's shares (default: a fresh one).
    pub cancel: Option<Cancel>,
    /// Where the run's step logs go (default: nowhere).
    pub log: Option<crate::kernel::LogSink>,
}

/// Start `job` as run `run_id` of `tenant` on the blocking pool; the
/// receiver gets the settled record. `stored`: its `running` record (with
/// this node) is in the store already (a queued run the worker took).
pub fn start(
    app: &Arc<AppState>,
    tenant: &Arc<Tenant>,
    slot: RunSlot,
    run_id: String,
    job: Request,
    created_at: Option<String>,
    stored: bool,
) -> Result<tokio::sync::watch::Receiver<Option<Value>>, ApiError> {
    let launch = Launch {
        slot,
        run_id,
        job,
        created_at,
        stored,
        paused: None,
        gate: None,
    };
    start_attached(app, tenant, launch, Attach::default())
}

/// The parts of a run [`start_attached`] starts.
pub struct Launch {
    /// The tenant's run slot the run holds until it settles.
    pub slot: RunSlot,
    /// The run's id (its records' key).
    pub run_id: String,
    /// What to run: a run or a resume.
    pub job: Request,
    /// When the run was first made (a resume keeps its run's); `None`: now.
    pub created_at: Option<String>,
    /// Its `running` record (with this node) is in the store already.
    pub stored: bool,
    /// A resume: the paused record it decides, kept in the running record
    /// (`gate`) so that a gate whose resumer died can open again
    /// (`recovery::reopen_gate`).
    pub paused: Option<Value>,
    /// A resume: its gate, taken ([`crate::app::gate::take`]).
    pub gate: Option<app::gate::Taken>,
}

/// [`start`] with an [`Attach`].
pub fn start_attached(
    app: &Arc<AppState>,
    tenant: &Arc<Tenant>,
    launch: Launch,
    attach: Attach,
) -> Result<tokio::sync::watch::Receiver<Option<Value>>, ApiError> {
    let Launch {
        slot,
        run_id,
        job,
        created_at,
        stored,
        paused,
        gate,
    } = launch;
    let now = now_iso();
    let mut record = json!({
        "runId": run_id,
        "tenant": tenant.name,
        "node": app.node,
        "status": "running",
        "createdAt": created_at.clone().unwrap_or_else(|| now.clone()),
        "updatedAt": now,
    });
    if let Some(paused) = paused {
        record["gate"] = paused;
    }
    if let Request::Resume(c) = &job {
        // Who decided: the door's authenticated decider, never a body's word.
        record["decidedBy"] = json!(c.request.decider.describe());
    }
    let cancel = attach.cancel.unwrap_or_default();
    let log_sink = attach.log;
    let by_shutdown = Arc::new(AtomicBool::new(false));
    // Files: the `running` record is stored only when the run's id is
    // handed out before it settles ([`hand_out`]): a run that settles within
    // the wait costs one store write. PostgreSQL: at once, so every node
    // can answer for it.
    app.live.lock().unwrap_or_else(|p| p.into_inner()).insert(
        run_id.clone(),
        Live {
            tenant: tenant.name.clone(),
            cancel: cancel.clone(),
            by_shutdown: by_shutdown.clone(),
            record: record.clone(),
            in_store: stored || created_at.is_some() || !tenant.store.is_files(),
        },
    );
    if !stored && (created_at.is_some() || !tenant.store.is_files()) {
        // A resume: its gate is spent from here on, so the record says so
        // at once (a process that dies now leaves it `interrupted`). On
        // PostgreSQL every run: any node may be asked for it. A store that
        // is down refuses the run (503) before anything starts.
        if let Err(e) = tenant.store.set(&record_key(&run_id), &record) {
            app.live
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&run_id);
            return Err(ApiError::store(format!(
                "run not started: cannot write its record: {e}"
            )));
        }
    }
    app.metrics.in_flight(1);
    let (tx, rx) = tokio::sync::watch::channel(None);
    let inline: Vec<String> = match &job {
        Request::Run(RunRequest {
            target: RunTarget::WorkflowPath(path),
            ..
        }) => {
            // Its path, and its name in the tenant's root.
            let names = [path.as_os_str(), path.file_name().unwrap_or_default()];
            names
                .map(|n| n.to_string_lossy().into_owned())
                .into_iter()
                .filter(|n| !n.is_empty())
                .collect()
        }
        _ => Vec::new(),
    };
    let started = Instant::now();
    let settle = {
        let (app, tenant) = (app.clone(), tenant.clone());
        move |finished: &app::Finished| {
            let mut reply = finished.reply();
            if finished.refused {
                // Refused before the gate was spent: the paused record and
                // its pending entry are back, nothing of this try is kept.
                let rec = give_back(&app, &tenant, record, &reply);
                app.metrics.in_flight(-1);
                drop(slot);
                app.run_ended.notify_waiters();
                let _ = tx.send(Some(rec));
                return;
            }
            for shown in &inline {
                // Messages name the inline document, not where the server keeps it.
                if let Some(m) = reply.envelope.pointer_mut("/error/message") {
                    if let Some(text) = m.as_str().filter(|t| t.contains(shown.as_str())) {
                        *m = json!(text.replace(shown.as_str(), "workflowText"));
                    }
                }
            }
            let rec = settle_record(&app, &tenant, record, &reply, &by_shutdown, started);
            app.metrics.in_flight(-1);
            drop(slot);
            app.run_ended.notify_waiters();
            let _ = tx.send(Some(rec));
        }
    };
    app::start(
        tenant.settings.clone(),
        job,
        app::StartOptions {
            cancel,
            log: log_sink,
            on_settle: Some(Box::new(settle)),
            // The journal of a run is kept under its runId.
            run_id: Some(run_id),
            gate,
        },
    );
    Ok(rx)
}

/// A resume refused before its gate was spent: put the paused record
/// (`record["gate"]`) and its pending entry back and leave the live set.
/// Returns what the waiter gets: the paused record's id and status with
/// the refusal's envelope, marked `refused`.
fn give_back(app: &AppState, tenant: &Tenant, record: Value, reply: &app::Reply) -> Value {
    let run_id = record["runId"].as_str().unwrap_or_default().to_string();
    let paused = record.get("gate").cloned().unwrap_or(Value::Null);
    {
        let _g = tenant.index_lock.lock().unwrap_or_else(|p| p.into_inner());
        if paused.is_object() {
            if let Some(entry) = pending_entry(&paused) {
                save_retrying(&tenant.store, &pending_key(&run_id), &entry, &app.log);
            }
            save_settled(&tenant.store, &paused, &app.log);
        }
        app.live
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&run_id);
    }
    json!({
        "runId": run_id,
        "status": paused["status"],
        "refused": true,
        "envelope": reply.envelope,
    })
}

/// Store a settled run's record (and its pending entry when it paused),
/// and take it out of the live set; returns the record.
fn settle_record(
    app: &AppState,
    tenant: &Tenant,
    record: Value,
    reply: &app::Reply,
    by_shutdown: &AtomicBool,
    started: Instant,
) -> Value {
    let shut = by_shutdown.load(Ordering::SeqCst);
    let status = status_of(reply, shut);
    let mut rec = record;
    if let Some(r) = rec.as_object_mut() {
        r.remove("gate"); // the gate it decided is history now
    }
    rec["status"] = json!(status);
    rec["updatedAt"] = json!(now_iso());
    rec["envelope"] = reply.envelope.clone();
    if shut && !reply.ok() {
        rec["reason"] = json!("cancelled by the server's shutdown (shutdown_grace_ms passed)");
    }
    if is_policy_refusal(&reply.envelope) {
        app.metrics.policy_refused(&tenant.name);
    }
    app.metrics
        .run_settled(&tenant.name, status, started.elapsed());
    let paused = status == "needs_approval" || status == "needs_input";
    let run_id = rec["runId"].as_str().unwrap_or_default().to_string();
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
        if let Some(entry) = pending_entry(&rec) {
            save_retrying(&tenant.store, &pending_key(&run_id), &entry, log);
        }
        save_settled(&tenant.store, &rec, log);
        if status == "needs_approval" {
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

/// Status of a settled run from its reply.
fn status_of(reply: &app::Reply, by_shutdown: bool) -> &'static str {
    if by_shutdown && !reply.ok() {
        return "cancelled";
    }
    match (reply.ok(), reply.status()) {
        (true, Some("needs_approval")) => "needs_approval",
        (true, Some("needs_input")) => "needs_input",
        (true, Some("cancelled")) => "cancelled",
        (true, _) => "ok",
        (false, _) => "failed",
    }
}

/// Whether an error envelope is the policy authority's refusal.
fn is_policy_refusal(envelope: &Value) -> bool {
    envelope["ok"] == false
        && envelope["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("policy"))
}
