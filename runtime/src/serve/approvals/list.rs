//! `GET /v1/approvals`, the signed link of a paused run's gate, and the
//! notifier's message about it.

use crate::serve::link;
use crate::serve::page;
use crate::serve::runs;
use crate::serve::state::AppState;
use crate::serve::tenant::Tenant;
use crate::serve::{ApiError, Authed};
use crate::state::{RunRecord, RunStatus};
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use serde_json::{json, Value};
use std::sync::Arc;

/// `GET /v1/approvals`.
pub async fn list(
    State(app): State<Arc<AppState>>,
    Authed(tenant): Authed,
) -> Result<Response, ApiError> {
    let mut out = Vec::new();
    for entry in runs::pending(&tenant)? {
        if entry.kind != RunStatus::NeedsApproval {
            continue;
        }
        let id = entry.run_id.as_str();
        let rec = match runs::read_record(&tenant, id)? {
            Some(Ok(rec)) => rec,
            // One unreadable record does not hide the others: named (never
            // shown) in the log, left out of the list.
            Some(Err(_)) => {
                (app.log)(&format!(
                    "lobster serve: tenant {}: run record {} cannot be read; left out of GET /v1/approvals",
                    tenant.name,
                    RunRecord::key(id)
                ));
                continue;
            }
            None => continue,
        };
        if rec.status != RunStatus::NeedsApproval {
            continue;
        }
        let gate = rec.asked_approval();
        let info = gate
            .resume_token
            .as_deref()
            .and_then(|t| crate::app::gate::gate_info(&tenant.store, t));
        let (workflow, step) = match info {
            Some(i) => (i.workflow, Some(i.step)),
            None => (None, None),
        };
        let approve_url = link_for(&app, &tenant, &rec);
        out.push(PendingApproval {
            run_id: id.to_string(),
            preview: page::gate_preview(&gate),
            approval_id: gate.approval_id,
            workflow,
            step,
            prompt: gate.prompt,
            items: gate.items,
            capabilities: gate.capabilities,
            created_at: entry.created_at,
            approve_url,
        });
    }
    Ok(Json(out).into_response())
}

/// One gate of `GET /v1/approvals`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PendingApproval {
    run_id: String,
    approval_id: Option<String>,
    /// The workflow, by catalog name or file (`None`: a pipeline).
    workflow: Option<String>,
    /// The gate's step.
    step: Option<String>,
    prompt: String,
    items: Vec<Value>,
    /// The gate's own preview, else the items printed.
    preview: Option<String>,
    capabilities: Vec<String>,
    created_at: Option<String>,
    approve_url: String,
}

/// Tell the tenant's notifier (if the operator configured one) that the run
/// `rec` waits at an approval gate: its prompt and a fresh link, signed
/// with the operator's key. Delivered on a thread of its own (an attempt
/// waits at most `notify_timeout_ms`); a failure is logged, the run stays
/// listed in `GET /v1/approvals`.
pub fn notify_gate(app: &AppState, tenant: &Tenant, rec: &RunRecord) {
    let Some(notifier) = tenant.notifier.clone() else {
        return;
    };
    let gate = rec.asked_approval();
    let expires = link::now_secs() + app.config.approval_link_ttl.as_secs();
    let body = json!({
        "event": "approval_requested",
        "tenant": tenant.name,
        "runId": rec.run_id,
        "approvalId": gate.approval_id,
        "prompt": gate.prompt,
        "approveUrl": link_for(app, tenant, rec),
        "expiresAt": chrono::DateTime::from_timestamp(expires as i64, 0)
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
        "sentAt": crate::resume::approval_id::now_iso(),
    });
    let (log, name) = (app.log.clone(), tenant.name.clone());
    std::thread::spawn(move || {
        if let Err(e) = notifier.deliver(&body) {
            log(&format!(
                "lobster serve: tenant {name}: the approval notifier at {} failed ({} attempts): {e}",
                notifier.url.origin(),
                notifier.attempts
            ));
        }
    });
}

/// A fresh signed link for a human to decide the gate of the paused run
/// `rec` (valid for `approval_link_ttl`).
pub fn link_for(app: &AppState, tenant: &Tenant, rec: &RunRecord) -> String {
    let id = &rec.run_id;
    let approval_id = rec.approval_id().unwrap_or_default();
    let ttl = app.config.approval_link_ttl.as_secs();
    let link = app.link_key.issue(&tenant.name, id, approval_id, ttl);
    format!("{}/a/{link}", app.public_url)
}
