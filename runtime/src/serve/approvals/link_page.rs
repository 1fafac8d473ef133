//! Opening an approval link (`GET /a/{link}`): the link checked (its tag,
//! expiry, single use, and that its gate is still open), then the gate page
//! or, where the tenant's gates are decided by signed-in approvers, the
//! sign-in form (`POST /a/{link}/sign-in`).

use crate::serve::link::{self, LinkError};
use crate::serve::page::{self, html, see_other};
use crate::serve::runs::load_record;
use crate::serve::sign_in::{check_sign_in, signed_in, SignInForm};
use crate::serve::state::AppState;
use crate::serve::tenant::Tenant;
use crate::state::{RunRecord, RunStatus};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use std::sync::Arc;

/// A checked link: the tenant, the verified link and the run's record.
pub(super) struct Opened {
    pub(super) tenant: Arc<Tenant>,
    pub(super) link: link::Link,
    pub(super) record: RunRecord,
}

pub(super) fn open(app: &AppState, raw: &str) -> Result<Opened, Box<Response>> {
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

/// The gate page for `o` (`approver`: who is signed in).
fn gate_page(app: &AppState, raw: &str, o: &Opened, approver: Option<&str>) -> Response {
    let gate = o.record.asked_approval();
    let preview = page::gate_preview(&gate);
    let info = gate
        .resume_token
        .as_deref()
        .and_then(|t| crate::app::gate::gate_info(&o.tenant.store, t));
    let expires = chrono::DateTime::from_timestamp(o.link.expires as i64, 0)
        .map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
        .unwrap_or_default();
    // The run's page is for the tenant's approvers: linked where there are some.
    let run_page = (!o.tenant.approvers.is_empty())
        .then(|| crate::serve::run_pages::url(app, &o.tenant.name, Some(&o.link.run_id)));
    html(
        StatusCode::OK,
        page::approval(
            raw,
            &page::Gate {
                tenant: &o.tenant.name,
                run_id: &o.link.run_id,
                workflow: info.as_ref().and_then(|i| i.workflow.as_deref()),
                step: info.as_ref().map(|i| i.step.as_str()),
                prompt: &gate.prompt,
                preview: preview.as_deref(),
                items: &gate.items,
                capabilities: &gate.capabilities,
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
    form: SignInForm,
) -> Response {
    let a = app.clone();
    let r = raw.clone();
    let o = match offload_page(move || open(&a, &r)).await {
        Ok(o) => o,
        Err(r) => return r,
    };
    match check_sign_in(&app, &o.tenant, form).await {
        Ok(cookies) => see_other(format!("/a/{raw}"), cookies),
        Err((status, why)) => html(
            status,
            page::sign_in(&raw, &o.tenant.name, &o.link.run_id, Some(why)),
        ),
    }
}

/// [`open`] on the blocking pool (it reads the store).
pub(super) async fn offload_page(
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
