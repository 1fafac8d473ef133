//! The run queue of nodes sharing a PostgreSQL store: `POST /v1/runs`
//! stores the run's record and enqueues it in its tenant's queue
//! (`lobster_queue`: `FOR UPDATE SKIP LOCKED` takes, `NOTIFY` wake-ups,
//! polling as the fallback); every node runs one worker per tenant that
//! takes a job whenever it has a free run slot (`max_concurrent_runs`), so
//! a run is executed by whichever node is free. The submitting request
//! waits for the run's stored record up to `wait` (200 with the envelope),
//! else answers 202. With the files store runs start in-process as before.

use super::offload::offload;
use super::runs;
use super::state::AppState;
use super::tenant::Tenant;
use super::wire::{CreateRun, NewRun, WireBody};
use super::ApiError;
use crate::app::Request;
use crate::resume::approval_id::now_iso;
use crate::state::{RunRecord, RunStatus};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long an idle worker listens for a wake-up before it polls again.
const POLL: Duration = Duration::from_millis(250);

/// Store the queued run's record (`running`, no `node` yet) and enqueue it.
/// A store that is down refuses the run (503); nothing is queued.
pub fn submit(tenant: &Tenant, run_id: &str, body: &CreateRun) -> Result<(), ApiError> {
    let now = now_iso();
    let mut record = RunRecord::new(run_id, RunStatus::Running);
    record.tenant = Some(tenant.name.clone());
    record.queued = Some(true);
    record.created_at = Some(now.clone());
    record.updated_at = Some(now.clone());
    let store = &tenant.store;
    store
        .set(&RunRecord::key(run_id), &record.to_value())
        .map_err(|e| ApiError::store(format!("run not queued: cannot write its record: {e}")))?;
    let payload = json!({ "body": body, "createdAt": now });
    if let Err(e) = store.enqueue(run_id, &payload) {
        let _ = store.remove(&RunRecord::key(run_id));
        return Err(ApiError::store(format!("run not queued: {e}")));
    }
    Ok(())
}

/// Wait up to `wait` for the stored record of `run_id` to settle. While the
/// run goes on on this node it is waited for in-process (woken when a run
/// ends here, no store read); otherwise the record is polled, off the
/// async threads, with a backoff.
pub async fn settled(
    app: &Arc<AppState>,
    tenant: &Arc<Tenant>,
    run_id: &str,
    wait: Duration,
) -> Option<runs::Settled> {
    let until = Instant::now() + wait;
    let mut pause = Duration::from_millis(5);
    loop {
        let ended = app.run_ended.notified();
        tokio::pin!(ended);
        ended.as_mut().enable();
        let here = app
            .live
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains_key(run_id);
        if !here {
            let (t, id) = (tenant.clone(), run_id.to_string());
            let rec = offload(move || runs::load_record(&t, &id)).await;
            if let Ok(Some(rec)) = rec {
                if rec.status != RunStatus::Running {
                    return Some(runs::Settled::Record(Box::new(rec)));
                }
            }
        }
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return None;
        }
        if here {
            // Settling stores the record, then leaves the live set, then
            // wakes the waiters.
            let _ = tokio::time::timeout(left, ended).await;
        } else {
            tokio::select! {
                _ = ended => {}
                _ = tokio::time::sleep(pause.min(left)) => {}
            }
            pause = (pause * 2).min(Duration::from_millis(50));
        }
    }
}

/// Start one worker thread per tenant (PostgreSQL stores only).
pub fn spawn_workers(app: &Arc<AppState>, handle: tokio::runtime::Handle) {
    for tenant in &app.tenants {
        let (app, tenant, handle) = (app.clone(), tenant.clone(), handle.clone());
        std::thread::Builder::new()
            .name(format!("lobster-queue-{}", tenant.name))
            .spawn(move || worker(app, tenant, handle))
            .expect("spawn a queue worker thread");
    }
}

/// Take jobs while there is a free run slot, until shutdown.
fn worker(app: Arc<AppState>, tenant: Arc<Tenant>, handle: tokio::runtime::Handle) {
    while !app.stopping() {
        let Ok(slot) = tenant.admit_run() else {
            std::thread::sleep(Duration::from_millis(20));
            continue;
        };
        match tenant.store.take_job() {
            Ok(Some(job)) => execute(&app, &tenant, slot, job, &handle),
            Ok(None) => {
                drop(slot);
                let _ = tenant.store.wait_for_jobs(POLL);
            }
            Err(e) => {
                drop(slot);
                (app.log)(&format!(
                    "lobster serve: cannot take a queued run of tenant {}: {e}",
                    tenant.name
                ));
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    }
}

/// Run a taken job as its run, heartbeating the job until the run settles.
fn execute(
    app: &Arc<AppState>,
    tenant: &Arc<Tenant>,
    slot: super::tenant::RunSlot,
    job: crate::state::Job,
    handle: &tokio::runtime::Handle,
) {
    let run_id = job.id.clone();
    let created = job.payload["createdAt"].as_str().map(String::from);
    // The body as it was submitted (an older node's too: the same fields),
    // its workflowText kept here, where it runs.
    let body = job.payload["body"].as_object().cloned().unwrap_or_default();
    let request = CreateRun::from_map(body)
        .and_then(NewRun::try_from)
        .and_then(|run| run.materialise(tenant));
    let request = match request {
        Ok(r) => r,
        Err(e) => {
            // Checked when it was submitted; a node whose catalog differs
            // may still refuse it: the record says why.
            let mut rec = record(app, tenant, &run_id, RunStatus::Failed, &created);
            rec.envelope = Some(json!({"protocolVersion": 1, "ok": false,
                "error": {"type": "bad_request", "message": e.message}}));
            let _ = tenant.store.set(&RunRecord::key(&run_id), &rec.to_value());
            let _ = job.finish();
            return;
        }
    };
    // Say which node runs it, waiting out a short store outage (the job is
    // heartbeated meanwhile, so it is not taken for dead).
    let until = Instant::now() + Duration::from_secs(60);
    let running = record(app, tenant, &run_id, RunStatus::Running, &created).to_value();
    while let Err(e) = tenant.store.set(&RunRecord::key(&run_id), &running) {
        if Instant::now() >= until || app.stopping() {
            (app.log)(&format!(
                "lobster serve: cannot start queued run {run_id}: {e}"
            ));
            return;
        }
        std::thread::sleep(Duration::from_millis(250));
        let _ = job.heartbeat();
    }
    let started = {
        let _enter = handle.enter();
        runs::start(
            app,
            tenant,
            slot,
            run_id,
            Request::Run(request),
            created,
            true,
        )
    };
    let mut rx = match started {
        Ok(rx) => rx,
        Err(e) => {
            // The store failed before the run began: leave the job to its
            // lease (it reads interrupted, never runs twice).
            (app.log)(&format!(
                "lobster serve: cannot start a queued run: {}",
                e.message
            ));
            return;
        }
    };
    let every = tenant.store.lease() / 3;
    let handle = handle.clone();
    let mut confirmed = Instant::now();
    std::thread::spawn(move || loop {
        let done = handle.block_on(async {
            tokio::time::timeout(every, rx.wait_for(Option::is_some))
                .await
                .is_ok()
        });
        if done {
            let _ = job.finish_retrying(confirmed);
            return;
        }
        let asked = Instant::now();
        if let Ok(true) = job.heartbeat() {
            confirmed = asked;
        }
    });
}

/// A queued run's record on the node that took it.
fn record(
    app: &AppState,
    tenant: &Tenant,
    run_id: &str,
    status: RunStatus,
    created: &Option<String>,
) -> RunRecord {
    let mut rec = RunRecord::new(run_id, status);
    rec.tenant = Some(tenant.name.clone());
    rec.node = Some(app.node.clone());
    rec.created_at = created.clone();
    rec.updated_at = Some(now_iso());
    rec
}
