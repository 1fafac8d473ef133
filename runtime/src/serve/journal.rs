//! The tenant's run journals over HTTP: `GET /v1/runs?status=&limit=&cursor=`
//! (newest first, a page at a time) and `GET /v1/runs/{id}/journal` (the
//! journal's lines, as `lobster runs export` writes them, without the
//! checkpoint). Each tenant sees only its own store. The list carries
//! `pageUrl`, a view link to the same list as a page for the tenant's
//! approvers (`serve::run_pages`).

use super::offload::offload;
use super::state::AppState;
use super::{ApiError, Authed};
use crate::app::runs::RunRow;
use crate::state::journal::{status_filter, RunFilter};
use axum::extract::{Path, Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use std::collections::HashMap;
use std::sync::Arc;

/// Runs per page unless `limit` says otherwise (at most [`MAX_PAGE`]).
pub const DEFAULT_PAGE: usize = 50;
/// The largest page.
pub const MAX_PAGE: usize = 500;

/// `GET /v1/runs`.
pub async fn list(
    State(app): State<Arc<AppState>>,
    Authed(tenant): Authed,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let limit = match query.get("limit") {
        Some(n) => n
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_PAGE).contains(n))
            .ok_or_else(|| {
                ApiError::bad_request(format!("limit must be 1 to {MAX_PAGE}, got {n:?}"))
            })?,
        None => DEFAULT_PAGE,
    };
    let before = match query.get("cursor").filter(|c| !c.is_empty()) {
        Some(c) => Some(
            c.split_once('~')
                .map(|(t, id)| (t.to_string(), id.to_string()))
                .ok_or_else(|| ApiError::bad_request("cursor is not one this server handed out"))?,
        ),
        None => None,
    };
    let status = match query.get("status").filter(|s| !s.is_empty()) {
        Some(s) => {
            Some(status_filter(s).map_err(|e| ApiError::bad_request(format!("status: {e}")))?)
        }
        None => None,
    };
    let filter = RunFilter {
        status,
        since: None,
        before,
        limit: Some(limit),
    };
    let page_url = super::run_pages::url(&app, &tenant.name, None);
    let runs = offload(move || {
        let mut runs = tenant
            .store
            .journal_runs(&filter)
            .map_err(ApiError::store)?;
        // A catalog name or a path beneath the workdir, never the server's.
        for r in &mut runs {
            r.name = tenant.shown_name(&r.name);
        }
        Ok(runs)
    })
    .await?;
    let next = (runs.len() == limit)
        .then(|| {
            runs.last()
                .map(|s| format!("{}~{}", s.started_at, s.run_id))
        })
        .flatten();
    let page = RunsPage {
        runs: runs.iter().map(RunRow::of).collect(),
        next_cursor: next,
        page_url,
    };
    Ok(Json(page).into_response())
}

/// The answer of `GET /v1/runs`: a page of runs (as every door lists them),
/// the cursor of the next page (null on the last), and the list's page.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RunsPage<'a> {
    runs: Vec<RunRow<'a>>,
    next_cursor: Option<String>,
    page_url: String,
}

/// `GET /v1/runs/{id}/journal`.
pub async fn journal(
    Authed(tenant): Authed,
    Path(run_id): Path<String>,
) -> Result<Response, ApiError> {
    if crate::state::journal::check_run_id(&run_id).is_err() {
        return Err(ApiError::no_run(&run_id));
    }
    let id = run_id.clone();
    let text = offload(move || tenant.store.journal_text(&id).map_err(ApiError::store))
        .await?
        .ok_or_else(|| ApiError::no_run(&run_id))?;
    Ok(([(header::CONTENT_TYPE, "application/x-ndjson")], text).into_response())
}

/// Prune every tenant's settled run journals past `journal_retention` or
/// beyond the newest `journal_keep_runs` (each leaves a tombstone): once at
/// start, then every [`PRUNE_EVERY`], on the blocking pool. Every node does
/// it; a prune is idempotent.
pub async fn keep_pruning(app: Arc<AppState>) {
    loop {
        let a = app.clone();
        let _ = tokio::task::spawn_blocking(move || prune_once(&a)).await;
        tokio::time::sleep(PRUNE_EVERY).await;
    }
}

/// How often journals are pruned.
pub const PRUNE_EVERY: std::time::Duration = std::time::Duration::from_secs(3600);

/// One pass of [`keep_pruning`]; how many runs' journals it pruned.
pub fn prune_once(app: &AppState) -> usize {
    let keep = app.config.journal_keep_runs;
    let cutoff = chrono::Utc::now()
        - chrono::Duration::from_std(app.config.journal_retention).unwrap_or_default();
    let cutoff = cutoff.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
    let mut pruned = 0;
    for t in &app.tenants {
        match t.store.journal_prune(&cutoff, keep) {
            Ok(ids) => pruned += ids.len(),
            Err(e) => (app.log)(&format!(
                "tenant {}: cannot prune run journals: {e}",
                t.name
            )),
        }
    }
    pruned
}
