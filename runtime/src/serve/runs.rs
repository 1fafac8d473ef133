//! The run registry and the runs API: every run has a record, so `GET
//! /v1/runs/{runId}` answers after a restart. A run whose id was handed out
//! before it settled (a 202, a resume, any run on PostgreSQL) has a key in
//! its tenant's store (`serve_run_<runId>`), written when it starts and
//! when it settles (a record left `running` by a process that ended reads
//! `interrupted`). A run answered within its `wait` on the files store was
//! never seen by anyone before it settled: its one record is a line in the
//! tenant's run log ([`crate::state::runlog`]), group-committed instead of
//! a file and two fsyncs of its own. Run ids begin with the second they
//! were made, which is how the log finds old records. Each run
//! paused at a gate has a key of its own (`serve_pending_<runId>`), listed
//! by prefix (the approvals list): nothing is read-modified-written by
//! several nodes. A gate is decided through [`crate::app::gate::take`], as
//! at every door: the decision is checked first (an invalid answer leaves
//! the gate open), then the gate is taken once by a mark keyed by the
//! paused run in the tenant's store: of racers on any node and any door,
//! one wins; the others get 409.
//!
//! With a PostgreSQL store several nodes share the records: a run's record
//! names its `node`, stored `running` as soon as it starts; each node
//! refreshes `serve_node_<node>` in the root store every third of the
//! lease, so a `running` record whose node stopped beating for a lease
//! reads `interrupted` on every node.
//!
//! The work itself is [`crate::app::start`] (on the blocking pool), with
//! the tenant's settings (policy, catalog, steps,
//! store): the same authority, limits, claims and digests as the CLI.

use super::offload::offload;
use super::state::{AppState, Live};
use super::tenant::{RunSlot, Tenant};
use super::{authed, body_json, ApiError, Log};
use crate::app::request::{limit_fields, resume_fields};
use crate::app::{self, Request, ResumeCall, RunRequest, RunTarget};
use crate::kernel::{Cancel, CancelReason};
use crate::resume::approval_id::now_iso;
use crate::resume::{Decider, Decision};
use crate::state::runlog::time_prefixed_id;
use crate::state::StateStore;
use crate::value::Item;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Default `wait` of `POST /v1/runs` (ms).
pub const DEFAULT_WAIT_MS: u64 = 10_000;
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
fn node_gone(app: &AppState, node: &str) -> Result<bool, ApiError> {
    let age = app.root.age(&node_key(node)).map_err(ApiError::store)?;
    Ok(age.is_none_or(|a| a > app.root.lease()))
}

fn pending_key(run_id: &str) -> String {
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

fn save_record(store: &StateStore, record: &Value, log: &Log) {
    let id = record["runId"].as_str().unwrap_or_default();
    if let Err(e) = store.set(&record_key(id), record) {
        log(&format!("lobster serve: cannot write run record {id}: {e}"));
    }
}

/// Save a settled run's record, retrying while the store is down (a
/// database restart) for up to [`SETTLE_SAVE_FOR`]: the run was
/// acknowledged, so its outcome must not be lost to a short outage.
fn save_settled(store: &StateStore, record: &Value, log: &Log) {
    let id = record["runId"].as_str().unwrap_or_default();
    save_retrying(store, &record_key(id), record, log)
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

/// Decide the gate of the paused run `rec` through the one gate function
/// ([`crate::app::gate::take`]): `call`'s decision checked against the gate
/// and `rule`, then the gate taken once, on this node or another. The
/// winner takes the run off the pending list.
fn take_gate(
    tenant: &Tenant,
    run_id: &str,
    call: &ResumeCall,
    rule: app::gate::Rule,
    log: &Log,
) -> Result<app::gate::Taken, ApiError> {
    let taken =
        app::gate::take(&tenant.store, &call.request, rule).map_err(|r| refusal(run_id, r))?;
    if let Err(e) = tenant.store.remove(&pending_key(run_id)) {
        log(&format!(
            "lobster serve: cannot take {run_id} off the pending list: {e}"
        ));
    }
    Ok(taken)
}

/// A refused decision as the HTTP answer: 400 for a decision that does not
/// fit the gate, 403 for a decider the tenant does not allow, 409 for a gate
/// decided already.
pub fn refusal(run_id: &str, refused: app::gate::Refused) -> ApiError {
    use app::gate::Refused;
    match refused {
        Refused::Invalid(e) => ApiError::bad_request(e.to_string()),
        Refused::Forbidden(e) => {
            ApiError::new(StatusCode::FORBIDDEN, "approval_required", e.to_string())
        }
        Refused::Taken(_) if run_id.is_empty() => ApiError::decided(
            "no paused run of this tenant has that token or approvalId: it was already decided, or it never existed",
        ),
        Refused::Taken(_) => ApiError::decided(format!("run {run_id}: its gate was already decided")),
        Refused::Store(e) => ApiError::store(e.to_string()),
    }
}

/// The record of `run_id` as it stands: a record still `running` whose run
/// is not going on in this process was left by a process that ended (killed,
/// crashed, power loss), so it is reported, and stored, as `interrupted`.
/// With a PostgreSQL store, a record of another node is left alone while
/// that node's heartbeat is younger than a lease.
pub fn current_record(
    app: &AppState,
    tenant: &Tenant,
    run_id: &str,
) -> Result<Option<Value>, ApiError> {
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
    if rec.as_ref().is_none_or(|r| r["status"] != "running") {
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
    if rec["status"] != "running" || live {
        return Ok(Some(rec));
    }
    let node = rec["node"].as_str().unwrap_or_default().to_string();
    if node.is_empty() && !app.root.is_files() {
        // Queued, not yet taken (or taken by a node that has not stored
        // its record yet): the queue says where it stands.
        use crate::state::JobStatus;
        let job = tenant.store.job_status(run_id).map_err(ApiError::store)?;
        match job {
            Some(JobStatus::Queued | JobStatus::Running) => return Ok(Some(rec)),
            Some(JobStatus::Interrupted) => {}
            None => match load_record(tenant, run_id)? {
                Some(again) if again["status"] != "running" || again["node"].is_string() => {
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
            return Ok(Some(paused));
        }
        Reopen::StillClaimed => return Ok(Some(rec)),
        Reopen::No => {}
    }
    rec["status"] = json!("interrupted");
    rec["updatedAt"] = json!(now_iso());
    rec["reason"] = json!(reason);
    save_record(&tenant.store, &rec, &app.log);
    Ok(Some(rec))
}

/// What becomes of a resume whose process stopped.
enum Reopen {
    /// Every step after the gate is pure and the dead resumer's claim has
    /// ended: the run is paused at its gate again (this record).
    Reopened(Value),
    /// Pure, but the store still holds the dead resumer's claim (its lease
    /// has not run out yet): report it running until it does.
    StillClaimed,
    /// Not a resume, or not pure: the run is interrupted.
    No,
}

/// A resume (`rec["gate"]`, the paused record it decided) whose process
/// stopped: when the store says its run may be claimed again
/// ([`crate::resume::claim::claimable`]: every step after the gate is pure),
/// put the paused record back — the gate is open again and takes a new
/// decision; the store's claim still lets exactly one resume run it.
fn reopen_gate(tenant: &Tenant, rec: &Value, reason: &str) -> Result<Reopen, ApiError> {
    let Some(paused) = rec.get("gate").filter(|g| g.is_object()) else {
        return Ok(Reopen::No);
    };
    let Some(token) = gate_token(paused) else {
        return Ok(Reopen::No);
    };
    let store = &tenant.store;
    let Ok(key) = crate::resume::token::decode(store, &token).map(|t| t.state_key) else {
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
    reopened["updatedAt"] = json!(now_iso());
    reopened["reason"] = json!(format!(
        "{reason} during the resume; every step after the gate is pure, so the gate is open again"
    ));
    // The gate was taken by the resume that died: give it back.
    app::gate::reopen(store, &key);
    if let Some(entry) = pending_entry(&reopened) {
        store
            .set(
                &pending_key(rec["runId"].as_str().unwrap_or_default()),
                &entry,
            )
            .map_err(ApiError::store)?;
    }
    Ok(Reopen::Reopened(reopened))
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

/// What a caller may attach to a run it starts: the run is cancelled with
/// `cancel` too, and its step logs go to `log` (an MCP call's client).
#[derive(Default)]
pub struct Attach {
    pub cancel: Option<Cancel>,
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
    pub slot: RunSlot,
    pub run_id: String,
    pub job: Request,
    pub created_at: Option<String>,
    pub stored: bool,
    /// A resume: the paused record it decides, kept in the running record
    /// (`gate`) so that a gate whose resumer died can open again
    /// ([`reopen_gate`]).
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
            super::approvals::notify_gate(app, tenant, &rec);
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

/// The pending-list entry of a record paused at a gate.
fn pending_entry(rec: &Value) -> Option<Value> {
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

/// Whether an error envelope is the policy authority's refusal.
fn is_policy_refusal(envelope: &Value) -> bool {
    envelope["ok"] == false
        && envelope["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("policy"))
}

/// Wait up to `wait` for the run to settle.
async fn settle(
    mut rx: tokio::sync::watch::Receiver<Option<Value>>,
    wait: Duration,
) -> Option<Value> {
    let got = tokio::time::timeout(wait, rx.wait_for(Option::is_some)).await;
    match got {
        Ok(Ok(v)) => v.clone(),
        _ => None,
    }
}

/// Before a 202 hands out the id of a run still going on, store its
/// `running` record (unless it settled meanwhile: settling stores the final
/// record and leaves the live set under the same lock).
fn hand_out(app: &AppState, tenant: &Tenant, run_id: &str) {
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

/// `{runId, …envelope}` (200) for a settled run, `{runId, status:"running"}`
/// (202) otherwise; 400 for a decision refused before its gate was spent.
fn answer(run_id: &str, settled: Option<Value>) -> Result<Response, ApiError> {
    if let Some(rec) = settled.as_ref().filter(|r| r["refused"] == true) {
        let message = rec["envelope"]["error"]["message"]
            .as_str()
            .unwrap_or("the decision was refused");
        return Err(ApiError::bad_request(format!(
            "{message} (the gate is still open)"
        )));
    }
    let mut response = match settled {
        Some(rec) => {
            let mut out = Map::new();
            out.insert("runId".into(), json!(run_id));
            if let Some(env) = rec["envelope"].as_object() {
                out.extend(env.clone());
            }
            (StatusCode::OK, Json(Value::Object(out))).into_response()
        }
        None => (
            StatusCode::ACCEPTED,
            Json(json!({"runId": run_id, "status": "running"})),
        )
            .into_response(),
    };
    // For the request log.
    response
        .extensions_mut()
        .insert(super::request_log::RunId(run_id.to_string()));
    Ok(response)
}

fn wait_of(
    app: &AppState,
    body: &Map<String, Value>,
    query: &HashMap<String, String>,
) -> Result<Duration, ApiError> {
    let ms = match (query.get("wait"), body.get("wait")) {
        (Some(q), _) => Some(
            q.parse::<u64>()
                .map_err(|_| ApiError::bad_request("wait must be a number of milliseconds"))?,
        ),
        (None, Some(Value::Null)) | (None, None) => None,
        (None, Some(v)) => Some(
            v.as_u64()
                .ok_or_else(|| ApiError::bad_request("wait must be a number of milliseconds"))?,
        ),
    };
    Ok(Duration::from_millis(ms.unwrap_or(DEFAULT_WAIT_MS)).min(app.config.request_timeout))
}

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

/// `POST /v1/runs`.
pub async fn create(
    State(app): State<Arc<AppState>>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: Result<axum::body::Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Response, ApiError> {
    let tenant = authed(&app, &headers)?;
    let body = body_json(body)?;
    let wait = wait_of(&app, &body, &query)?;
    let slot = if tenant.store.is_files() {
        slot(&app, &tenant)?
    } else {
        if app.stopping() {
            slot(&app, &tenant)?;
        }
        match tenant.admit_run() {
            // Nodes on one database: a node with a free run slot runs the
            // run itself (no queue round trips, no wake-up to wait for)…
            Ok(slot) => slot,
            // …a busy one queues it for whichever node is free.
            Err(_) => {
                let run_id = time_prefixed_id();
                let (t, id) = (tenant.clone(), run_id.clone());
                offload(move || {
                    run_request(&t, &body)?;
                    super::queue::submit(&t, &id, &body)
                })
                .await?;
                let settled = super::queue::settled(&app, &tenant, &run_id, wait).await;
                return answer(&run_id, settled);
            }
        }
    };
    let run_id = time_prefixed_id();
    let rx = if tenant.store.is_files() {
        // Nothing to wait for in the store: no hop to the blocking pool.
        let request = run_request(&tenant, &body)?;
        start(
            &app,
            &tenant,
            slot,
            run_id.clone(),
            Request::Run(request),
            None,
            false,
        )?
    } else {
        let (a, t, id) = (app.clone(), tenant.clone(), run_id.clone());
        offload(move || {
            let request = run_request(&t, &body)?;
            start(&a, &t, slot, id, Request::Run(request), None, false)
        })
        .await?
    };
    let settled = settle(rx, wait).await;
    // PostgreSQL: its `running` record is stored already (by `start`).
    if settled.is_none() && tenant.store.is_files() {
        hand_out(&app, &tenant, &run_id);
    }
    answer(&run_id, settled)
}

/// The run request of a `POST /v1/runs` body.
pub(crate) fn run_request(
    tenant: &Tenant,
    body: &Map<String, Value>,
) -> Result<RunRequest, ApiError> {
    const FIELDS: [&str; 7] = [
        "pipeline",
        "workflow",
        "workflowText",
        "args",
        "timeoutMs",
        "maxStdoutBytes",
        "wait",
    ];
    if let Some(k) = body.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(ApiError::bad_request(format!(
            "unknown field {k}: POST /v1/runs takes {}",
            FIELDS.join(", ")
        )));
    }
    let text = |k: &str| -> Result<Option<String>, ApiError> {
        match body.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.clone())),
            Some(_) => Err(ApiError::bad_request(format!(
                "{k} must be a non-empty string"
            ))),
        }
    };
    let target = match (text("pipeline")?, text("workflow")?, text("workflowText")?) {
        (Some(p), None, None) => RunTarget::Pipeline(p),
        (None, Some(w), None) => RunTarget::Workflow(w),
        (None, None, Some(doc)) => RunTarget::WorkflowPath(super::inline::keep(tenant, &doc)?),
        (None, None, None) => {
            return Err(ApiError::bad_request(
                "give one of pipeline, workflow (a catalog name) or workflowText",
            ))
        }
        _ => {
            return Err(ApiError::bad_request(
                "give only one of pipeline, workflow and workflowText",
            ))
        }
    };
    let args = match body.get("args") {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => Some(m.clone()),
        Some(_) => return Err(ApiError::bad_request("args must be an object")),
    };
    let strict = matches!(target, RunTarget::Workflow(_));
    let request = RunRequest {
        target,
        args,
        args_json: None,
        cwd: None,
        limits: limit_fields(body).map_err(|e| ApiError::bad_request(e.to_string()))?,
        strict_args: strict,
        mode: crate::kernel::Mode::Tool,
    };
    // The target rule's refusals (a file of the server) as a 400, before
    // anything is stored or started.
    crate::app::target::check_request(&tenant.settings, &request)
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    Ok(request)
}

/// `GET /v1/runs/{runId}`.
pub async fn get(
    State(app): State<Arc<AppState>>,
    Path(run_id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let tenant = authed(&app, &headers)?;
    let (a, t, id) = (app.clone(), tenant.clone(), run_id.clone());
    let rec = offload(move || current_record(&a, &t, &id))
        .await?
        .ok_or_else(|| ApiError::no_run(&run_id))?;
    Ok(Json(rec).into_response())
}

/// `POST /v1/runs/{runId}/resume`.
pub async fn resume_run(
    State(app): State<Arc<AppState>>,
    Path(run_id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: Result<axum::body::Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Response, ApiError> {
    let tenant = authed(&app, &headers)?;
    let body = body_json(body)?;
    let wait = wait_of(&app, &body, &query)?;
    let (a, t, id) = (app.clone(), tenant.clone(), run_id.clone());
    let rec = offload(move || current_record(&a, &t, &id))
        .await?
        .ok_or_else(|| ApiError::no_run(&run_id))?;
    decide(
        &app,
        &tenant,
        &rec,
        body,
        wait,
        Decider::TenantAgent(tenant.name.clone()),
    )
    .await
}

/// `POST /v1/resume` `{token | approvalId, …}`.
pub async fn resume_by_token(
    State(app): State<Arc<AppState>>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: Result<axum::body::Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Response, ApiError> {
    let tenant = authed(&app, &headers)?;
    let body = body_json(body)?;
    let wait = wait_of(&app, &body, &query)?;
    let token = body
        .get("token")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    let approval = body
        .get("approvalId")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    if token.is_none() && approval.is_none() {
        return Err(ApiError::bad_request("token or approvalId required"));
    }
    // The run this token belongs to, when it is one of the tenant's paused runs.
    let (t, token, approval) = (
        tenant.clone(),
        token.map(String::from),
        approval.map(String::from),
    );
    let found = offload(move || {
        // One spelling per token: any other is refused, not looked up.
        if let Some(t_) = token.as_deref() {
            crate::resume::token::decode(&t.store, t_)
                .map_err(|e| ApiError::bad_request(e.to_string()))?;
        }
        find_paused(&t, token.as_deref(), approval.as_deref())
    })
    .await?;
    if let Some(rec) = found {
        let agent = Decider::TenantAgent(tenant.name.clone());
        return decide(&app, &tenant, &rec, body, wait, agent).await;
    }
    Err(ApiError::decided(
        "no paused run of this tenant has that token or approvalId: it was already decided, or it never existed",
    ))
}

/// The resume token of a paused run's record.
pub fn gate_token(rec: &Value) -> Option<String> {
    let env = &rec["envelope"];
    env["requiresApproval"]["resumeToken"]
        .as_str()
        .or_else(|| env["requiresInput"]["resumeToken"].as_str())
        .map(String::from)
}

/// Decide the gate of the paused run `rec` with the fields of `body`
/// (`approve`, `response`, `cancel`, limits) as `decider` — who the door
/// authenticated (the tenant's token, a signed-in approver). A body's
/// `approver` is refused: nothing a request says names who decided.
pub async fn decide(
    app: &Arc<AppState>,
    tenant: &Arc<Tenant>,
    rec: &Value,
    mut body: Map<String, Value>,
    wait: Duration,
    decider: Decider,
) -> Result<Response, ApiError> {
    paused_status(rec)?;
    if body.contains_key("approver") {
        return Err(ApiError::bad_request(
            "approver is not accepted here: a decision's identity is who authenticated it (the tenant's token, or an approver signed in on the approval page)",
        ));
    }
    let token =
        gate_token(rec).ok_or_else(|| ApiError::internal("the run record has no resume token"))?;
    body.remove("approvalId");
    body.insert("token".into(), json!(token));
    let mut call = resume_fields(&body).map_err(|e| ApiError::bad_request(e.to_string()))?;
    call.request.decider = decider;
    let (a, t, r) = (app.clone(), tenant.clone(), rec.clone());
    let (run_id, rx) = offload(move || decide_call(&a, &t, &r, call, Attach::default())).await?;
    let settled = settle(rx, wait).await;
    // PostgreSQL: its `running` record is stored already (by `start`).
    if settled.is_none() && tenant.store.is_files() {
        hand_out(app, tenant, &run_id);
    }
    answer(&run_id, settled)
}

/// The tenant's approver rule, which [`crate::app::gate::take`] asks for
/// every serve door: whether `request`'s decider may make its decision at
/// `gate` (of the paused run `rec`, when the gateway lists it). Approving an
/// approval gate takes a signed-in approver of the tenant, the tenant's
/// agent where `self_approve = true`, or an elicited answer where
/// `elicitation_is_human = true` ([`may_approve`]); denying, cancelling and
/// answering an input gate take any decider of the tenant. A refusal of a
/// listed gate carries a fresh approval link to forward to a human.
pub fn may_decide(
    app: &AppState,
    tenant: &Tenant,
    rec: Option<&Value>,
    gate: &app::gate::Gate,
    request: &crate::resume::ResumeRequest,
) -> crate::error::Result<()> {
    let approving = gate.approval && request.decision == Decision::Approve(true);
    if !approving || may_approve(tenant, &request.decider) {
        return Ok(());
    }
    Err(crate::error::Error::parse(match rec {
        Some(rec) => {
            let link = super::approvals::link_for(app, tenant, rec);
            format!(
                "this tenant's token cannot approve its own runs (self_approve = false): send a human approver this approval link (also in GET /v1/approvals as approveUrl): {link} — they sign in and decide; you may still deny or cancel"
            )
        }
        None => "approve: true is refused: this tenant's token cannot approve (self_approve = false), and this gate is not among the tenant's listed ones".to_string(),
    }))
}

/// Whether `decider` may say yes at an approval gate of `tenant`.
pub fn may_approve(tenant: &Tenant, decider: &Decider) -> bool {
    match decider {
        Decider::Approver { tenant: t, .. } => *t == tenant.name,
        Decider::TenantAgent(t) => *t == tenant.name && tenant.self_approve,
        Decider::Elicited => tenant.elicitation_is_human,
        Decider::Operator(_) | Decider::Unnamed => false,
    }
}

/// Start the resume `call` of the paused run `rec` (its gate token is the
/// call's target), exactly once over every node and door: the run's id and
/// the receiver of its settled record. Every serve door comes through here:
/// the decision is checked against the gate and the tenant's rule
/// ([`may_decide`]) by the one gate function before the gate is taken.
pub fn decide_call(
    app: &Arc<AppState>,
    tenant: &Arc<Tenant>,
    rec: &Value,
    call: ResumeCall,
    attach: Attach,
) -> Result<(String, tokio::sync::watch::Receiver<Option<Value>>), ApiError> {
    paused_status(rec)?;
    let run_id = rec["runId"].as_str().unwrap_or_default().to_string();
    let token =
        gate_token(rec).ok_or_else(|| ApiError::internal("the run record has no resume token"))?;
    let slot = slot(app, tenant)?;
    // A workflowText run paused on another node: its document, from the store.
    super::inline::materialise(&tenant.store, tenant.workdir(), &run_id, &token)?;
    // Exactly once on every node and door: the one gate function checks the
    // decision, then the tenant's rule, then takes the gate by the paused
    // run's key (the store's claim of the resume state is the second lock).
    let rule = |gate: &app::gate::Gate, request: &crate::resume::ResumeRequest| {
        may_decide(app, tenant, Some(rec), gate, request)
    };
    let taken = take_gate(tenant, &run_id, &call, &rule, &app.log)?;
    let launch = Launch {
        slot,
        run_id: run_id.clone(),
        job: Request::Resume(call),
        created_at: rec["createdAt"].as_str().map(String::from),
        stored: false,
        paused: Some(rec.clone()),
        gate: Some(taken.clone()),
    };
    let rx = start_attached(app, tenant, launch, attach).inspect_err(|_| {
        // Not started (the store failed): give the gate back, so it can be
        // decided once the store is back (best effort; the resume state
        // itself was never claimed).
        app::gate::release(&tenant.store, &taken);
        if let Some(entry) = pending_entry(rec) {
            let _ = tenant.store.set(&pending_key(&run_id), &entry);
        }
    })?;
    Ok((run_id, rx))
}

/// The status of a run paused at a gate, or the 409 for any other record.
fn paused_status(rec: &Value) -> Result<&str, ApiError> {
    let status = rec["status"].as_str().unwrap_or_default();
    if status != "needs_approval" && status != "needs_input" {
        return Err(ApiError::decided(format!(
            "run {} is {status}: its gate was already decided (or it has none)",
            rec["runId"].as_str().unwrap_or_default()
        )));
    }
    Ok(status)
}

/// The tenant's paused run whose gate has resume token `token` or approval
/// id `approval`.
pub fn find_paused(
    tenant: &Tenant,
    token: Option<&str>,
    approval: Option<&str>,
) -> Result<Option<Value>, ApiError> {
    for entry in pending(tenant)? {
        let Some(id) = entry["runId"].as_str() else {
            continue;
        };
        let matches = match (token, approval) {
            (None, Some(a)) => entry["approvalId"].as_str() == Some(a),
            (Some(_), _) => true,
            (None, None) => false,
        };
        if !matches {
            continue;
        }
        let Some(rec) = load_record(tenant, id)? else {
            continue;
        };
        if token.is_none() || gate_token(&rec).as_deref() == token {
            return Ok(Some(rec));
        }
    }
    Ok(None)
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

/// Item access used by the approvals list.
pub fn envelope_gate(rec: &Value) -> &Item {
    &rec["envelope"]["requiresApproval"]
}
