//! `lobster serve`: a multi-tenant HTTP gateway over the [`crate::app`]
//! front-door layer (axum on a multi-thread tokio runtime; runs and resumes
//! on the blocking pool).
//!
//! - [`config`]: `serve.toml`, checked at start-up.
//! - [`tenant`]: bearer-token authentication (constant-time compare of
//!   sha256(token)), each tenant's settings (policy, catalog, steps) and
//!   store ([`tenant::tenant_store`]), request and concurrency budgets.
//! - [`state`]: the shared [`state::AppState`], passed to handlers explicitly.
//! - [`inline`]: inline workflows (`workflowText`) kept on disk and, on a
//!   shared store, in the store for the node that resumes them.
//! - [`runs`]: the run registry (records in the tenant's store) and the runs API.
//! - [`wire`]: the runs API's typed request bodies, and [`Authed`], the
//!   request's tenant from its bearer token.
//! - [`approvals`], [`link`], [`page`]: the approvals list, signed
//!   single-use expiring links, and the HTML page a human decides on.
//! - [`mcp_http`]: the MCP tools at `/mcp` (streamable HTTP).
//! - [`metrics`]: `/metrics` in Prometheus text.
//! - [`request_log`]: one log line per request (no bodies, tokens or links).
//! - [`shutdown`]: SIGTERM/SIGINT → stop accepting, drain, cancel.
//!
//! Every capability of every run is judged by the run's
//! [`crate::kernel::Authority`] under the tenant's policy, exactly as for
//! `lobster run`; nothing here decides what a run may do. Nothing here
//! prints: the ready line and logs go through the callbacks `cli/serve.rs`
//! hands in.

pub mod approvals;
pub mod approver;
pub mod config;
pub mod inline;
pub mod journal;
pub mod link;
pub mod listen;
pub mod mcp_http;
pub mod metrics;
pub mod notify;
pub mod offload;
pub mod page;
pub mod queue;
pub mod request_log;
pub mod run_pages;
pub mod runs;
pub mod shutdown;
pub mod state;
pub mod tenant;
pub mod wire;

use crate::error::{Error, Result};
use crate::state::StateStore;
use axum::extract::DefaultBodyLimit;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use axum::{Json, Router};
use serde_json::{json, Map, Value};
use state::AppState;
use std::net::SocketAddr;
use std::sync::Arc;
use tenant::Tenant;

pub use config::ServeConfig;

/// Where log lines go (the CLI writes them to stderr). Never handed a secret.
pub type Log = Arc<dyn Fn(&str) + Send + Sync>;

/// An HTTP error: `{"error":{"type","message"}}` with a status (and
/// `Retry-After` for 429s).
#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    pub kind: &'static str,
    pub message: String,
    pub retry_after: Option<u64>,
}

impl ApiError {
    /// An error of this status and type.
    pub fn new(status: StatusCode, kind: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            kind,
            message: message.into(),
            retry_after: None,
        }
    }

    /// 400.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    /// 500 (the message is logged by nobody: it names no secret).
    pub fn internal(message: impl ToString) -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal_error",
            message.to_string(),
        )
    }

    /// 503: the state store failed (PostgreSQL down or unreachable); the
    /// message says which store and why. Nothing was started or decided.
    pub fn store(message: impl ToString) -> Self {
        ApiError {
            retry_after: Some(1),
            ..Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "store_unavailable",
                message.to_string(),
            )
        }
    }

    /// 404 for a run this tenant does not have.
    pub fn no_run(run_id: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no run {run_id} for this tenant"),
        )
    }

    /// 409: the gate was decided already.
    pub fn decided(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, "already_decided", message)
    }

    /// 429 for too many runs at once.
    pub fn too_many_runs(max: usize) -> Self {
        ApiError {
            retry_after: Some(tenant::RUNS_RETRY_AFTER.as_secs()),
            ..Self::new(
                StatusCode::TOO_MANY_REQUESTS,
                "too_many_runs",
                format!("this tenant already has {max} runs going on (max_concurrent_runs); retry later"),
            )
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = Json(json!({"error": {"type": self.kind, "message": self.message}}));
        let mut resp = (self.status, body).into_response();
        if let Some(s) = self.retry_after {
            if let Ok(v) = HeaderValue::from_str(&s.to_string()) {
                resp.headers_mut().insert(header::RETRY_AFTER, v);
            }
        }
        if self.status == StatusCode::UNAUTHORIZED {
            resp.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        resp
    }
}

/// The tenant of a request's bearer token, after its per-minute budget.
pub fn authed(app: &AppState, headers: &HeaderMap) -> std::result::Result<Arc<Tenant>, ApiError> {
    let unauthorized = |m: &str| ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", m);
    let value = headers
        .get(header::AUTHORIZATION)
        .ok_or_else(|| unauthorized("missing Authorization: Bearer <tenant token>"))?;
    let token = value
        .to_str()
        .ok()
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| unauthorized("Authorization must be `Bearer <tenant token>`"))?;
    let tenant = app
        .tenant_for(token)
        .ok_or_else(|| unauthorized("unknown token"))?;
    if let Err(tenant::OverBudget::Rate(secs)) = tenant.admit_request() {
        app.metrics.limited(&tenant.name, "rate_limited");
        return Err(ApiError {
            retry_after: Some(secs),
            ..ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limited",
                "this tenant is over its requests_per_minute; retry after the Retry-After seconds",
            )
        });
    }
    Ok(tenant)
}

/// The extractor of a request's tenant: [`authed`] as a handler argument,
/// before the body is read (401 with `WWW-Authenticate: Bearer` without a
/// known tenant token, 429 past the tenant's `requests_per_minute`).
pub struct Authed(pub Arc<Tenant>);

impl axum::extract::FromRequestParts<Arc<AppState>> for Authed {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        app: &Arc<AppState>,
    ) -> std::result::Result<Self, ApiError> {
        authed(app, &parts.headers).map(Authed)
    }
}

/// A JSON object body (an empty body is `{}`); 413 past `max_body_bytes`.
pub fn body_json(
    body: std::result::Result<axum::body::Bytes, axum::extract::rejection::BytesRejection>,
) -> std::result::Result<Map<String, Value>, ApiError> {
    let bytes = body.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                "the request body is larger than max_body_bytes",
            )
        } else {
            ApiError::bad_request(e.body_text())
        }
    })?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(ApiError::bad_request("the body must be a JSON object")),
        Err(e) => Err(ApiError::bad_request(format!(
            "the body is not valid JSON: {e}"
        ))),
    }
}

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

/// The store tenant of the server's own rows with a PostgreSQL store.
pub const SERVER_TENANT: &str = "lobster serve";

/// Build the state: the root store, every tenant (policy, catalog, store),
/// the approval-link key.
pub fn prepare(config: ServeConfig, log: Log) -> Result<AppState> {
    let root = match &config.store_url {
        // The server's own rows (link key, node heartbeats) under a tenant
        // id no configured tenant can have (names are [a-z0-9_-]; this one
        // is hex-encoded to `~…`), so no tenant's workflow can read them
        // with state.get, not even a tenant called `default`.
        Some(url) => StateStore::open(url, &config.state)
            .with_env_lease()
            .for_tenant(SERVER_TENANT),
        None => StateStore::new(&config.state),
    };
    root.ensure_dir()?;
    // A database that is down or refuses us is an error at start, naming it.
    root.ping()?;
    if !root.is_files() {
        runs::beat(&root, &config.node_id)?;
    }
    let metrics = Arc::new(metrics::Metrics::default());
    let mut tenants = Vec::new();
    for t in &config.tenants {
        let notifier = match (&t.notify_url, &config.notify_key) {
            (Some(url), Some(key)) => Some(notify::Notifier {
                url: url.clone(),
                key: key.clone(),
                timeout: config.notify_timeout,
                attempts: config.notify_attempts,
            }),
            _ => None,
        };
        let tenant = Tenant::new(t, &root, &metrics, config.request_timeout, notifier)?;
        tenants.push(Arc::new(tenant));
    }
    let link_key = link::LinkKey::load_or_create(&root)?;
    let session_key = approver::SessionKey::derive(link_key.bytes());
    Ok(AppState {
        public_url: config.public_url.clone().unwrap_or_default(),
        node: config.node_id.clone(),
        config,
        tenants,
        root,
        link_key,
        session_key,
        metrics,
        live: Default::default(),
        run_ended: Default::default(),
        shutting_down: Default::default(),
        log,
    })
}

/// Run the server until SIGTERM/SIGINT: bind `listen`, call `ready` with the
/// bound address, serve, then shut down gracefully. `workers` is the number
/// of async threads (runs use the blocking pool).
pub fn run(
    config: ServeConfig,
    listen: &str,
    workers: usize,
    log: Log,
    ready: impl FnOnce(SocketAddr),
) -> Result<()> {
    // A server runs many steps: the pooling allocator's set-up is paid once
    // and every step reuses a warm slot (runtime/benches/RESULTS.md).
    crate::sandbox::engine::prefer_pooling();
    let mut app = prepare(config, log)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers.max(1))
        .enable_all()
        .build()
        .map_err(|e| Error::runtime(format!("cannot start the server's runtime: {e}")))?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .map_err(|e| Error::parse(format!("cannot listen on {listen}: {e}")))?;
        let addr = listener
            .local_addr()
            .map_err(|e| Error::runtime(format!("cannot read the bound address: {e}")))?;
        if app.public_url.is_empty() {
            app.public_url = format!("http://{addr}");
        }
        let app = Arc::new(app);
        if !app.root.is_files() {
            tokio::spawn(runs::keep_beating(app.clone()));
            queue::spawn_workers(&app, tokio::runtime::Handle::current());
        }
        tokio::spawn(journal::keep_pruning(app.clone()));
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel();
        let (drained_tx, drained_rx) = tokio::sync::oneshot::channel();
        tokio::spawn(shutdown::watch(app.clone(), stop_tx, drained_tx));
        ready(addr);
        let limits = listen::ConnLimits {
            header_timeout: app.config.header_timeout,
            per_ip: app.config.max_connections_per_ip,
        };
        let served = listen::serve(listener, router(app.clone()), limits, async move {
            let _ = stop_rx.await;
        })
        .await;
        if served.is_ok() {
            let _ = drained_rx.await;
        }
        served.map_err(|e| Error::runtime(format!("the server failed: {e}")))
    })?;
    // Runs cancelled at shutdown have written their records; blocking
    // threads still stuck in a host process are abandoned with the process.
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    Ok(())
}
