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
        let gate = rec.approval_gate();
        let info = gate["resumeToken"]
            .as_str()
            .and_then(|t| crate::app::gate::gate_info(&tenant.store, t));
        out.push(json!({
            "runId": id,
            "approvalId": gate["approvalId"],
            "workflow": info.as_ref().and_then(|i| i.workflow.clone()),
            "step": info.as_ref().map(|i| i.step.clone()),
            "prompt": gate["prompt"],
            "items": gate.get("items").cloned().unwrap_or(json!([])),
            "preview": gate.get("preview").cloned().or_else(|| page::preview_of(gate).map(Value::String)),
            "capabilities": gate.get("capabilities").cloned().unwrap_or(json!([])),
            "createdAt": entry.created_at,
            "approveUrl": link_for(&app, &tenant, &rec),
        }));
    }
    Ok(Json(Value::Array(out)).into_response())
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
    let gate = rec.approval_gate();
    let expires = link::now_secs() + app.config.approval_link_ttl.as_secs();
    let body = json!({
        "event": "approval_requested",
        "tenant": tenant.name,
        "runId": rec.run_id,
        "approvalId": gate["approvalId"],
        "prompt": gate["prompt"],
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
