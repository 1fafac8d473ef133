//! The runs API's handlers: `POST /v1/runs`, `GET /v1/runs/{runId}`,
//! `POST /v1/runs/{runId}/resume` and `POST /v1/resume`, with the
//! `wait` and the answer (200 settled, 202 running). Each takes the
//! tenant from its token ([`crate::serve::Authed`]) and a typed body
//! ([`crate::serve::wire`]).

use super::gate::{decide, find_paused};
use super::launch::{slot, start};
use super::recovery::current_record;
use super::registry::hand_out;
use super::settle::{Settled, SettledRx};
use crate::app::Request;
use crate::resume::Decider;
use crate::serve::offload::offload;
use crate::serve::state::AppState;
use crate::serve::wire::{CreateRun, JsonBody, NewRun, ResumeBody};
use crate::serve::{ApiError, Authed};
use crate::state::runlog::time_prefixed_id;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// Default `wait` of `POST /v1/runs` (ms).
pub const DEFAULT_WAIT_MS: u64 = 10_000;

/// `POST /v1/runs`.
pub async fn create(
    State(app): State<Arc<AppState>>,
    Authed(tenant): Authed,
    Query(query): Query<HashMap<String, String>>,
    JsonBody(body): JsonBody<CreateRun>,
) -> Result<Response, ApiError> {
    let wait = wait_of(&app, body.wait, &query)?;
    // A run that may be queued travels as its body.
    let queued = (!tenant.store.is_files()).then(|| body.clone());
    let new_run = NewRun::try_from(body)?;
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
            // …a busy one queues it for whichever node is free: checked
            // here, its workflowText kept by the node that runs it.
            Err(_) => {
                new_run.check(&tenant)?;
                let run_id = time_prefixed_id();
                let (t, id) = (tenant.clone(), run_id.clone());
                let body = queued.unwrap_or_default();
                offload(move || crate::serve::queue::submit(&t, &id, &body)).await?;
                let settled = crate::serve::queue::settled(&app, &tenant, &run_id, wait).await;
                return answer(&run_id, settled);
            }
        }
    };
    let run_id = time_prefixed_id();
    let rx = if tenant.store.is_files() {
        // Nothing to wait for in the store: no hop to the blocking pool.
        let request = new_run.materialise(&tenant)?;
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
            let request = new_run.materialise(&t)?;
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

/// `GET /v1/runs/{runId}`.
pub async fn get(
    State(app): State<Arc<AppState>>,
    Authed(tenant): Authed,
    Path(run_id): Path<String>,
) -> Result<Response, ApiError> {
    let (a, t, id) = (app.clone(), tenant.clone(), run_id.clone());
    let rec = offload(move || current_record(&a, &t, &id))
        .await?
        .ok_or_else(|| ApiError::no_run(&run_id))?;
    Ok(Json(rec).into_response())
}

/// `POST /v1/runs/{runId}/resume`.
pub async fn resume_run(
    State(app): State<Arc<AppState>>,
    Authed(tenant): Authed,
    Path(run_id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
    JsonBody(body): JsonBody<ResumeBody>,
) -> Result<Response, ApiError> {
    let wait = wait_of(&app, body.wait, &query)?;
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
        crate::serve::doors::REST,
    )
    .await
}

/// `POST /v1/resume` `{token | approvalId, …}`.
pub async fn resume_by_token(
    State(app): State<Arc<AppState>>,
    Authed(tenant): Authed,
    Query(query): Query<HashMap<String, String>>,
    JsonBody(body): JsonBody<ResumeBody>,
) -> Result<Response, ApiError> {
    let wait = wait_of(&app, body.wait, &query)?;
    body.fields
        .target()
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    // The run this token belongs to, when it is one of the tenant's paused runs.
    let (t, token, approval) = (
        tenant.clone(),
        body.fields.token().map(String::from),
        body.fields.approval_id().map(String::from),
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
        let door = crate::serve::doors::REST;
        return decide(&app, &tenant, &rec, body, wait, agent, door).await;
    }
    Err(ApiError::decided(
        "no paused run of this tenant has that token or approvalId: it was already decided, or it never existed",
    ))
}

/// Wait up to `wait` for the run to settle.
pub(super) async fn settle(mut rx: SettledRx, wait: Duration) -> Option<Settled> {
    let got = tokio::time::timeout(wait, rx.wait_for(Option::is_some)).await;
    match got {
        Ok(Ok(v)) => v.clone(),
        _ => None,
    }
}

/// `{runId, …envelope}` (200) for a settled run, `{runId, status:"running"}`
/// (202) otherwise; 400 for a decision refused before its gate was spent.
pub(super) fn answer(run_id: &str, settled: Option<Settled>) -> Result<Response, ApiError> {
    if let Some(Settled::Refused(envelope)) = &settled {
        return Err(super::gate::still_open(envelope));
    }
    let mut response = match settled {
        Some(rec) => {
            let mut out = Map::new();
            out.insert("runId".into(), json!(run_id));
            if let Some(env) = rec.envelope().as_object() {
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
        .insert(crate::serve::request_log::RunId(run_id.to_string()));
    Ok(response)
}

fn wait_of(
    app: &AppState,
    body: Option<u64>,
    query: &HashMap<String, String>,
) -> Result<Duration, ApiError> {
    let ms = match query.get("wait") {
        Some(q) => Some(
            q.parse::<u64>()
                .map_err(|_| ApiError::bad_request("wait must be a number of milliseconds"))?,
        ),
        None => body,
    };
    Ok(Duration::from_millis(ms.unwrap_or(DEFAULT_WAIT_MS)).min(app.config.request_timeout))
}
