//! Starting a run on the blocking pool: its `running` record and place in
//! the live set, the tenant's run slots; once it ends, [`super::settle`]
//! stores what it came to.

use super::settle::{give_back, settle_record, Settled, SettledRx};
use crate::app::{self, Request, RunRequest, RunTarget};
use crate::kernel::Cancel;
use crate::resume::approval_id::now_iso;
use crate::serve::state::{AppState, Live};
use crate::serve::tenant::{RunSlot, Tenant};
use crate::serve::ApiError;
use crate::state::{RunRecord, RunStatus};
use axum::http::StatusCode;
use serde_json::json;
use std::sync::atomic::AtomicBool;
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
    /// The door in the run's journal (default: `serve`, the REST API;
    /// see [`crate::serve::doors`]).
    pub door: Option<&'static str>,
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
            door: attach.door,
        },
    );
    Ok(rx)
}
