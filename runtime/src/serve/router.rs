//! The routes of `lobster serve`, and the layers every request passes:
//! the request log, the body limit and `request_timeout_ms`.

use super::state::AppState;
use super::{approvals, journal, mcp_http, request_log, run_pages, runs, ApiError};
use axum::extract::DefaultBodyLimit;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use axum::Router;
use std::sync::Arc;

/// The router over `app`.
pub fn router(app: Arc<AppState>) -> Router {
    let mcp = Arc::new(mcp_http::services(&app, app.config.max_body_bytes));
    let limit = app.config.max_body_bytes;
    Router::new()
        .route("/v1/runs", post(runs::create).get(journal::list))
        .route("/v1/runs/{run_id}", get(runs::get))
        .route("/v1/runs/{run_id}/journal", get(journal::journal))
        .route("/v1/runs/{run_id}/resume", post(runs::resume_run))
        .route("/v1/resume", post(runs::resume_by_token))
        .route("/v1/approvals", get(approvals::list))
        .route("/a/{link}", get(approvals::show).post(approvals::decide))
        .route("/a/{link}/sign-in", post(approvals::sign_in))
        .route("/r/{link}", get(run_pages::show))
        .route("/r/{link}/sign-in", post(run_pages::sign_in))
        .route("/mcp", any(mcp_http::handle))
        .route("/healthz", get(|| async { "ok" }))
        .route("/metrics", get(metrics_text))
        .layer(axum::Extension(mcp))
        .layer(axum::middleware::from_fn_with_state(app.clone(), deadline))
        .layer(axum::middleware::from_fn_with_state(
            app.clone(),
            request_log::log_requests,
        ))
        .layer(DefaultBodyLimit::max(limit))
        .with_state(app)
}

async fn metrics_text(axum::extract::State(app): axum::extract::State<Arc<AppState>>) -> Response {
    // Queue depths live in the store (PostgreSQL: the shared queue; the
    // files store queues nothing): counted off the async threads.
    let text = tokio::task::spawn_blocking(move || {
        let queues: Vec<(String, u64)> = if app.root.is_files() {
            Vec::new()
        } else {
            app.tenants
                .iter()
                .filter_map(|t| Some((t.name.clone(), t.store.queue_depth().ok()?)))
                .collect()
        };
        app.metrics.render(&queues)
    })
    .await
    .unwrap_or_default();
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response()
}

/// Every request gets `request_timeout_ms` (504 past it).
async fn deadline(
    axum::extract::State(app): axum::extract::State<Arc<AppState>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    app.metrics.request();
    // Runs are waited for at most request_timeout; the margin lets them answer 202.
    let limit = app.config.request_timeout + std::time::Duration::from_secs(1);
    match tokio::time::timeout(limit, next.run(request)).await {
        Ok(r) => r,
        Err(_) => ApiError::new(
            StatusCode::GATEWAY_TIMEOUT,
            "timeout",
            "the request took longer than request_timeout_ms",
        )
        .into_response(),
    }
}
