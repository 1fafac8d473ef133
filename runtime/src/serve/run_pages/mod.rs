//! Run pages for a tenant's humans, server-rendered without JavaScript:
//! `/r/{link}` is the tenant's run list (newest first) or one run's page
//! (its timeline: each step's component, input and output digests, fuel
//! and time; the gates and who decided them; whether the chain verifies).
//!
//! A view link is `base64url(tenant.scope.expiry).tag` with `tag` blake3
//! keyed with the server's link key over [`DOMAIN`] and the payload (so an
//! approval link never passes for a view link, nor the reverse); `scope` is
//! a run id or `-` (the list); it lasts `approval_link_ttl`. The link names
//! what to show, not who may see it: a page is shown only to one of the
//! link's tenant's approvers, signed in (their session cookie; the form at
//! `/r/{link}/sign-in`), or to a request with the tenant's own token —
//! never to the link alone, nor to anything of another tenant. The approval
//! page links its run's page and `GET /v1/runs` answers the list's
//! (`pageUrl`). Workflows are named by their catalog name or their path
//! beneath the tenant's workdir, never by a path on the server.
//!
//! The rooms: this file (the two handlers and who may read), [`link`] (view
//! links); how a workflow is named to the tenant is the app's
//! ([`crate::app::Catalog::shown_name`]); the HTML is [`super::page::runs`].

use super::link::LinkError;
use super::offload::offload;
use super::page::{html, list_page, refused, run_page, see_other, sign_in_to_read};
use super::sign_in::{check_sign_in, signed_in, SignInForm};
use super::state::AppState;
use super::tenant::Tenant;
use super::ApiError;
use crate::state::journal::RunFilter;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use std::sync::Arc;

pub mod link;

pub use link::{issue, url, verify, View};

/// Runs the list page shows.
const LIST_ROWS: usize = 100;

/// Whether this request may read `tenant`'s run pages: the tenant's own
/// token as a bearer, or one of its approvers signed in (a session of this
/// tenant). Nothing of another tenant counts, nor the link alone.
fn may_read(app: &AppState, tenant: &Tenant, headers: &HeaderMap) -> bool {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty());
    if bearer.is_some_and(|t| tenant.is_own_token(t)) {
        return true;
    }
    signed_in(app, tenant, headers).is_some()
}

/// The view link `raw` and its tenant, or the page saying why not.
fn open(app: &AppState, raw: &str) -> Result<(View, Arc<Tenant>), Box<Response>> {
    let unknown = || {
        Box::new(html(
            StatusCode::NOT_FOUND,
            refused("Unknown link", "This link is not valid. Ask for a new one."),
        ))
    };
    let view = match verify(&app.link_key, raw) {
        Ok(v) => v,
        Err(LinkError::Expired) => {
            return Err(Box::new(html(
                StatusCode::GONE,
                refused(
                    "This link cannot be used",
                    "This link has expired. Ask for a new one.",
                ),
            )))
        }
        Err(_) => return Err(unknown()),
    };
    let tenant = app.tenant_named(&view.tenant).ok_or_else(unknown)?;
    Ok((view, tenant))
}

/// The answer to a request that may not read `tenant`'s pages: the
/// sign-in form where the tenant has approvers, else a refusal.
fn not_for_you(raw: &str, tenant: &Tenant) -> Response {
    if tenant.approvers.is_empty() {
        return html(
            StatusCode::FORBIDDEN,
            refused(
                "Not available",
                "This tenant has no approvers: its run pages are read with its token only.",
            ),
        );
    }
    html(
        StatusCode::UNAUTHORIZED,
        sign_in_to_read(raw, &tenant.name, None),
    )
}

/// `POST /r/{link}/sign-in` with `name` and `secret`: one of the link's
/// tenant's approvers signs in (the same session as on the approval page),
/// then back to the page.
pub async fn sign_in(
    State(app): State<Arc<AppState>>,
    Path(raw): Path<String>,
    form: SignInForm,
) -> Response {
    let tenant = match open(&app, &raw) {
        Ok((_, t)) => t,
        Err(r) => return *r,
    };
    if tenant.approvers.is_empty() {
        return not_for_you(&raw, &tenant);
    }
    match check_sign_in(&app, &tenant, form).await {
        Ok(cookies) => see_other(format!("/r/{raw}"), cookies),
        Err((status, why)) => html(status, sign_in_to_read(&raw, &tenant.name, Some(why))),
    }
}

/// `GET /r/{link}`: the page, for the tenant's signed-in approvers or its
/// token; the sign-in form otherwise.
pub async fn show(
    State(app): State<Arc<AppState>>,
    Path(raw): Path<String>,
    headers: HeaderMap,
) -> Response {
    let (view, tenant) = match open(&app, &raw) {
        Ok(o) => o,
        Err(r) => return *r,
    };
    if !may_read(&app, &tenant, &headers) {
        return not_for_you(&raw, &tenant);
    }
    let store = tenant.store.clone();
    match view.run.clone() {
        None => {
            let filter = RunFilter {
                limit: Some(LIST_ROWS),
                ..Default::default()
            };
            let t = tenant.clone();
            let read = offload(move || {
                let mut runs = store.journal_runs(&filter).map_err(ApiError::store)?;
                for r in &mut runs {
                    r.name = t.shown_name(&r.name);
                }
                Ok(runs)
            });
            let runs = match read.await {
                Ok(r) => r,
                Err(e) => return html(e.status, refused("Not available", &e.message)),
            };
            let href = |id: &str| {
                format!(
                    "{}/r/{}",
                    app.public_url,
                    issue(&app.link_key, &view.tenant, Some(id), view.expires)
                )
            };
            html(StatusCode::OK, list_page(&view.tenant, &runs, href))
        }
        Some(id) => {
            let read = {
                let id = id.clone();
                offload(move || {
                    let summary = store.journal_summary(&id).map_err(ApiError::store)?;
                    let text = store.journal_text(&id).map_err(ApiError::store)?;
                    Ok((summary, text))
                })
                .await
            };
            match read {
                Ok((summary, Some(text))) => html(
                    StatusCode::OK,
                    run_page(&view.tenant, &id, summary.as_ref(), &text, |n| {
                        tenant.shown_name(n)
                    }),
                ),
                Ok((_, None)) => html(
                    StatusCode::NOT_FOUND,
                    refused(
                        "No such run",
                        "This run has no journal (it may have been pruned).",
                    ),
                ),
                Err(e) => html(e.status, refused("Not available", &e.message)),
            }
        }
    }
}
