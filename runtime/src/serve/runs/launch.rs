//! Starting a run on the blocking pool and settling it: its `running`
//! record and place in the live set, its settled record (or, for a resume
//! refused before its gate was spent, the paused record given back), and
//! the tenant's run slots.

use super::registry::{save_pending, save_settled};
use crate::app::{self, Request, RunRequest, RunTarget};
use crate::kernel::Cancel;
use crate::resume::approval_id::now_iso;
use crate::serve::state::{AppState, Live};
use crate::serve::tenant::{RunSlot, Tenant};
use crate::serve::ApiError;
use crate::state::{RunRecord, RunStatus};
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
) -> Result<SettledRx, ApiError> {
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
    pub paused: Option<RunRecord>,
    /// A resume: its gate, taken ([`crate::app::gate::take`]).
    pub gate: Option<app::gate::Taken>,
}

/// [`start`] with an [`Attach`].
pub fn start_attached(
    app: &Arc<AppState>,
    tenant: &Arc<Tenant>,
    launch: Launch,
    attach: Attach,
) -> Result<SettledRx, ApiError> {
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
    let mut record = RunRecord::new(&run_id, RunStatus::Running);
    record.tenant = Some(tenant.name.clone());
    record.node = Some(app.node.clone());
    record.created_at = Some(created_at.clone().unwrap_or_else(|| now.clone()));
    record.updated_at = Some(now);
    record.gate = paused.map(Box::new);
    if let Request::Resume(c) = &job {
        // Who decided: the door's authenticated decider, never a body's word.
        record.decided_by = Some(c.request.decider.describe());
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
        if let Err(e) = tenant
            .store
            .set(&RunRecord::key(&run_id), &record.to_value())
        {
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
                give_back(&app, &tenant, record);
                app.metrics.in_flight(-1);
                drop(slot);
                app.run_ended.notify_waiters();
                let _ = tx.send(Some(Settled::Refused(reply.envelope)));
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
            let _ = tx.send(Some(Settled::Record(Box::new(rec))));
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
/// (`record.gate`) and its pending entry back and leave the live set.
fn give_back(app: &AppState, tenant: &Tenant, record: RunRecord) {
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
fn settle_record(
    app: &AppState,
    tenant: &Tenant,
    record: RunRecord,
    reply: &app::Reply,
    by_shutdown: &AtomicBool,
    started: Instant,
) -> RunRecord {
    let shut = by_shutdown.load(Ordering::SeqCst);
    let status = status_of(reply, shut);
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

/// Status of a settled run from its reply.
fn status_of(reply: &app::Reply, by_shutdown: bool) -> RunStatus {
    if by_shutdown && !reply.ok() {
        return RunStatus::Cancelled;
    }
    match (reply.ok(), reply.status()) {
        (true, Some("needs_approval")) => RunStatus::NeedsApproval,
        (true, Some("needs_input")) => RunStatus::NeedsInput,
        (true, Some("cancelled")) => RunStatus::Cancelled,
        (true, _) => RunStatus::Ok,
        (false, _) => RunStatus::Failed,
    }
}

/// Whether an error envelope is the policy authority's refusal.
fn is_policy_refusal(envelope: &Value) -> bool {
    envelope["ok"] == false
        && envelope["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("policy"))
}
