//! `POST /a/{link}`: a human's decision on the link's gate, by the
//! signed-in approver or the link, through the one gate function.

use super::link_page::{offload_page, open};
use crate::resume::Decider;
use crate::serve::link;
use crate::serve::page::{self, html};
use crate::serve::runs;
use crate::serve::sign_in::{form_urlencoded, signed_in};
use crate::serve::state::AppState;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use std::sync::Arc;

/// `POST /a/{link}` with `decision=approve|deny`: decided by the signed-in
/// approver (where the tenant has approvers, or its token may not approve:
/// the link alone decides nothing), else by the link.
pub async fn decide(
    State(app): State<Arc<AppState>>,
    Path(raw): Path<String>,
    headers: HeaderMap,
    body: Result<axum::body::Bytes, axum::extract::rejection::BytesRejection>,
) -> Response {
    let body = match body {
        Ok(b) => b,
        Err(e) => return html(e.status(), page::refused("Request refused", &e.body_text())),
    };
    let form: Vec<(String, String)> = form_urlencoded(&body);
    let approve = match form
        .iter()
        .find(|(k, _)| k == "decision")
        .map(|(_, v)| v.as_str())
    {
        Some("approve") => true,
        Some("deny") => false,
        _ => {
            return html(
                StatusCode::BAD_REQUEST,
                page::refused(
                    "Request refused",
                    "The form must send decision=approve or decision=deny.",
                ),
            )
        }
    };
    let a = app.clone();
    let r = raw.clone();
    let o = match offload_page(move || open(&a, &r)).await {
        Ok(o) => o,
        Err(r) => return r,
    };
    let decider = if o.tenant.needs_sign_in() {
        match signed_in(&app, &o.tenant, &headers) {
            Some(name) => Decider::Approver {
                tenant: o.tenant.name.clone(),
                name,
            },
            None => {
                return html(
                    StatusCode::UNAUTHORIZED,
                    page::sign_in(
                        &raw,
                        &o.tenant.name,
                        &o.link.run_id,
                        Some("Sign in first: this link shows the gate, but only a signed-in approver decides it."),
                    ),
                )
            }
        }
    } else {
        // self_approve and no approvers: whoever holds the link decides,
        // as the tenant's agent could.
        Decider::TenantAgent(o.tenant.name.clone())
    };
    let decision = if approve { "approve" } else { "deny" };
    match link::spend(&o.tenant.store, &o.link, decision) {
        Ok(true) => {}
        Ok(false) => {
            return html(
                StatusCode::GONE,
                page::refused(
                    "This link cannot be used",
                    "This approval link was already used.",
                ),
            )
        }
        Err(e) => {
            (app.log)(&format!(
                "lobster serve: cannot record a used approval link: {e}"
            ));
            return html(
                StatusCode::INTERNAL_SERVER_ERROR,
                page::refused(
                    "Not recorded",
                    "The decision could not be recorded; nothing was resumed. Try again.",
                ),
            );
        }
    }
    let body = crate::serve::wire::ResumeBody::approve(approve);
    let wait = app.config.request_timeout;
    let door = crate::serve::doors::PAGE;
    match runs::decide_settled(&app, &o.tenant, &o.record, body, wait, decider, door).await {
        Ok((_, settled)) => {
            let shown = match &settled {
                Some(runs::Settled::Record(rec)) => rec.outcome(),
                _ => None,
            };
            html(
                StatusCode::OK,
                page::decided(approve, &o.link.run_id, shown.as_deref()),
            )
        }
        Err(e) if e.status == StatusCode::CONFLICT => html(
            StatusCode::GONE,
            page::refused("This link cannot be used", "This gate was already decided."),
        ),
        Err(e) => html(e.status, page::refused("Not decided", &e.message)),
    }
}
