//! The runs API's handlers: `POST /v1/runs`, `GET /v1/runs/{runId}`,
//! `POST /v1/runs/{runId}/resume` and `POST /v1/resume`, with the run
//! request of a body, the `wait` and the answer (200 settled, 202 running).

use super::gate::{decide, find_paused};
use super::launch::{slot, start, Settled, SettledRx};
use super::recovery::current_record;
use super::registry::hand_out;
use crate::app::request::limit_fields;
use crate::app::{Request, RunRequest, RunTarget};
use crate::resume::Decider;
use crate::serve::offload::offload;
use crate::serve::state::AppState;
use crate::serve::tenant::Tenant;
use crate::serve::{authed, body_json, ApiError};
use crate::state::runlog::time_prefixed_id;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
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
                    crate::serve::queue::submit(&t, &id, &body)
                })
                .await?;
                let settled = crate::serve::queue::settled(&app, &tenant, &run_id, wait).await;
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
        (None, None, Some(doc)) => {
            RunTarget::WorkflowPath(crate::serve::inline::keep(tenant, &doc)?)
        }
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
        let message = envelope["error"]["message"]
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
