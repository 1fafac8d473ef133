//! Approvals: the tenant's list of paused gates (each with a fresh signed
//! link for a human), and the link's page and form (`/a/{link}`).

use super::approver;
use super::link::{self, LinkError};
use super::page;
use super::runs::{self, load_record};
use super::state::AppState;
use super::{ApiError, Authed};
use crate::resume::Decider;
use crate::state::{RunRecord, RunStatus};
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
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
pub fn notify_gate(app: &AppState, tenant: &super::tenant::Tenant, rec: &RunRecord) {
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
pub fn link_for(app: &AppState, tenant: &super::tenant::Tenant, rec: &RunRecord) -> String {
    let id = &rec.run_id;
    let approval_id = rec.approval_id().unwrap_or_default();
    let ttl = app.config.approval_link_ttl.as_secs();
    let link = app.link_key.issue(&tenant.name, id, approval_id, ttl);
    format!("{}/a/{link}", app.public_url)
}

/// The approval pages' Content-Security-Policy: nothing loads, no script
/// runs, forms post only to this server, and no other site may frame the
/// page (a framed Approve button could be clicked by a decoy).
pub const PAGE_CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// A page with the security headers every approval page carries.
pub fn html(status: StatusCode, body: String) -> Response {
    (
        status,
        [
            (header::CACHE_CONTROL, "no-store"),
            (header::CONTENT_SECURITY_POLICY, PAGE_CSP),
            (header::X_FRAME_OPTIONS, "DENY"),
            (header::REFERRER_POLICY, "no-referrer"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        Html(body),
    )
        .into_response()
}

/// A checked link: the tenant, the verified link and the run's record.
struct Opened {
    tenant: Arc<super::tenant::Tenant>,
    link: link::Link,
    record: RunRecord,
}

fn open(app: &AppState, raw: &str) -> Result<Opened, Box<Response>> {
    let gone = |why: &str| {
        Box::new(html(
            StatusCode::GONE,
            page::refused("This link cannot be used", why),
        ))
    };
    let unknown = || {
        Box::new(html(
            StatusCode::NOT_FOUND,
            page::refused(
                "Unknown link",
                "This approval link is not valid. Ask for a new one.",
            ),
        ))
    };
    let link = match app.link_key.verify(raw) {
        Ok(l) => l,
        Err(LinkError::Expired) => {
            return Err(gone(
                "This approval link has expired. Ask for a new one (the run is still waiting).",
            ))
        }
        Err(_) => return Err(unknown()),
    };
    let tenant = app.tenant_named(&link.tenant).ok_or_else(unknown)?;
    match link::is_spent(&tenant.store, &link) {
        Ok(false) => {}
        Ok(true) => return Err(gone("This approval link was already used.")),
        Err(_) => return Err(unknown()),
    }
    let record = match load_record(&tenant, &link.run_id) {
        Ok(Some(r)) => r,
        _ => return Err(unknown()),
    };
    if record.status != RunStatus::NeedsApproval
        || record.approval_id().unwrap_or_default() != link.approval_id
    {
        return Err(gone("This gate was already decided."));
    }
    Ok(Opened {
        tenant,
        link,
        record,
    })
}

/// The approver signed in on this request for `tenant` (their session
/// cookie), if any. Nothing else — no bearer token, no form field — names
/// an approver.
pub(super) fn signed_in(
    app: &AppState,
    tenant: &super::tenant::Tenant,
    headers: &HeaderMap,
) -> Option<String> {
    let cookies = headers.get(header::COOKIE)?.to_str().ok()?;
    let value = approver::cookie_value(cookies, approver::COOKIE)?;
    app.session_key
        .verify(value, &tenant.name, &tenant.approvers)
        .map(|s| s.name)
}

/// The gate page for `o` (`approver`: who is signed in).
fn gate_page(app: &AppState, raw: &str, o: &Opened, approver: Option<&str>) -> Response {
    let gate = o.record.approval_gate();
    let caps: Vec<String> = gate["capabilities"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|c| c.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    // The gate's own preview (the plan) when it has one, else the items.
    let preview = gate["preview"]
        .as_str()
        .filter(|p| !p.is_empty())
        .map(String::from)
        .or_else(|| page::preview_of(gate));
    let info = gate["resumeToken"]
        .as_str()
        .and_then(|t| crate::app::gate::gate_info(&o.tenant.store, t));
    let expires = chrono::DateTime::from_timestamp(o.link.expires as i64, 0)
        .map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
        .unwrap_or_default();
    // The run's page is for the tenant's approvers: linked where there are some.
    let run_page = (!o.tenant.approvers.is_empty())
        .then(|| super::run_pages::url(app, &o.tenant.name, Some(&o.link.run_id)));
    html(
        StatusCode::OK,
        page::approval(
            raw,
            &page::Gate {
                tenant: &o.tenant.name,
                run_id: &o.link.run_id,
                workflow: info.as_ref().and_then(|i| i.workflow.as_deref()),
                step: info.as_ref().map(|i| i.step.as_str()),
                prompt: gate["prompt"].as_str().unwrap_or_default(),
                preview: preview.as_deref(),
                items: gate.get("items"),
                capabilities: &caps,
                expires_at: &expires,
                approver,
                run_page: run_page.as_deref(),
            },
        ),
    )
}

/// `GET /a/{link}`: the gate page, or the sign-in form when the tenant's
/// gates are decided by signed-in approvers and nobody is signed in.
pub async fn show(
    State(app): State<Arc<AppState>>,
    Path(raw): Path<String>,
    headers: HeaderMap,
) -> Response {
    let a = app.clone();
    let r = raw.clone();
    let o = match offload_page(move || open(&a, &r)).await {
        Ok(o) => o,
        Err(r) => return r,
    };
    if !o.tenant.needs_sign_in() {
        return gate_page(&app, &raw, &o, None);
    }
    match signed_in(&app, &o.tenant, &headers) {
        Some(name) => gate_page(&app, &raw, &o, Some(&name)),
        None => html(
            StatusCode::OK,
            page::sign_in(&raw, &o.tenant.name, &o.link.run_id, None),
        ),
    }
}

/// `POST /a/{link}/sign-in` with `name` and `secret`: an approver of the
/// link's tenant signs in (a session cookie, then back to the page). The
/// tenant's own token is refused: the agent is not an approver.
pub async fn sign_in(
    State(app): State<Arc<AppState>>,
    Path(raw): Path<String>,
    body: Result<axum::body::Bytes, axum::extract::rejection::BytesRejection>,
) -> Response {
    let body = match body {
        Ok(b) => b,
        Err(e) => return html(e.status(), page::refused("Request refused", &e.body_text())),
    };
    let a = app.clone();
    let r = raw.clone();
    let o = match offload_page(move || open(&a, &r)).await {
        Ok(o) => o,
        Err(r) => return r,
    };
    match check_sign_in(&app, &o.tenant, &body).await {
        Ok(cookies) => see_other(format!("/a/{raw}"), cookies),
        Err((status, why)) => html(
            status,
            page::sign_in(&raw, &o.tenant.name, &o.link.run_id, Some(why)),
        ),
    }
}

/// Check an approver's sign-in form (`name`, `secret`) for `tenant`: the
/// session cookies to set, or the status and why not. The approval page
/// and the run pages sign in through it. The tenant's own token is
/// refused: the agent is not an approver.
pub(super) async fn check_sign_in(
    app: &Arc<AppState>,
    tenant: &Arc<super::tenant::Tenant>,
    body: &[u8],
) -> Result<Vec<header::HeaderValue>, (StatusCode, &'static str)> {
    let form = form_urlencoded(body);
    let field = |k: &str| {
        form.iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let (name, secret) = (field("name"), field("secret"));
    if !tenant.admit_sign_in() {
        return Err((
            StatusCode::TOO_MANY_REQUESTS,
            "Too many sign-in attempts for this tenant; wait a minute and try again.",
        ));
    }
    if tenant.is_own_token(&secret) {
        (app.log)(&format!(
            "lobster serve: tenant {}: the agent's token was refused at an approver sign-in",
            tenant.name
        ));
        return Err((
            StatusCode::FORBIDDEN,
            "That is the tenant's agent token. An approver signs in with a credential of their own.",
        ));
    }
    // A password check is deliberately slow: off the async threads.
    let t = tenant.clone();
    let who = tokio::task::spawn_blocking(move || {
        approver::sign_in(&t.approvers, &name, &secret).cloned()
    })
    .await
    .ok()
    .flatten();
    let Some(who) = who else {
        return Err((
            StatusCode::UNAUTHORIZED,
            "That name and password (or token) are not an approver's of this tenant.",
        ));
    };
    let ttl = app.config.approval_link_ttl;
    let cookie = app.session_key.issue(&tenant.name, &who, ttl);
    let secure = if app.public_url.starts_with("https://") {
        "; Secure"
    } else {
        ""
    };
    // One session, sent back to the approval pages and the run pages.
    Ok(["/a/", "/r/"]
        .iter()
        .filter_map(|path| {
            header::HeaderValue::from_str(&format!(
                "{}={cookie}; Path={path}; HttpOnly; SameSite=Strict; Max-Age={}{secure}",
                approver::COOKIE,
                ttl.as_secs()
            ))
            .ok()
        })
        .collect())
}

/// 303 to `location` (a path on this server), setting `cookies`.
pub(super) fn see_other(location: String, cookies: Vec<header::HeaderValue>) -> Response {
    let mut resp = (
        StatusCode::SEE_OTHER,
        [
            (header::LOCATION, location),
            (header::CACHE_CONTROL, "no-store".to_string()),
        ],
    )
        .into_response();
    for c in cookies {
        resp.headers_mut().append(header::SET_COOKIE, c);
    }
    resp
}

/// [`open`] on the blocking pool (it reads the store).
async fn offload_page(
    f: impl FnOnce() -> Result<Opened, Box<Response>> + Send + 'static,
) -> Result<Opened, Response> {
    match tokio::task::spawn_blocking(f).await {
        Ok(Ok(o)) => Ok(o),
        Ok(Err(r)) => Err(*r),
        Err(_) => Err(html(
            StatusCode::INTERNAL_SERVER_ERROR,
            page::refused("Not available", "The page could not be made; try again."),
        )),
    }
}

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
    let body = super::wire::ResumeBody::approve(approve);
    let wait = app.config.request_timeout;
    match runs::decide(&app, &o.tenant, &o.record, body, wait, decider).await {
        Ok(resp) => {
            let status = resp.status();
            let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
                .await
                .unwrap_or_default();
            let v: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            let shown = if status == StatusCode::OK {
                v["status"].as_str().map(String::from).or_else(|| {
                    (v["ok"] == false).then(|| {
                        format!(
                            "failed: {}",
                            v["error"]["message"].as_str().unwrap_or("error")
                        )
                    })
                })
            } else {
                None
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

/// `application/x-www-form-urlencoded` pairs.
fn form_urlencoded(body: &[u8]) -> Vec<(String, String)> {
    let text = String::from_utf8_lossy(body);
    text.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

fn percent_decode(s: &str) -> String {
    let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                match (
                    bytes.get(i + 1).and_then(|b| hex(*b)),
                    bytes.get(i + 2).and_then(|b| hex(*b)),
                ) {
                    (Some(h), Some(l)) => {
                        out.push(h * 16 + l);
                        i += 2;
                    }
                    _ => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_fields_decode() {
        assert_eq!(
            form_urlencoded(b"decision=approve&x=a+b%21"),
            vec![
                ("decision".to_string(), "approve".to_string()),
                ("x".to_string(), "a b!".to_string())
            ]
        );
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
    }
}
