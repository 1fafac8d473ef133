//! `POST /mcp`: the MCP tools of `lobster mcp` over rmcp's streamable-HTTP
//! transport (stateless: every request stands alone), one service per
//! tenant so every tool call runs with that tenant's settings (policy,
//! catalog, steps, store). The bearer token picks the tenant.
//!
//! Each request takes one of the tenant's run slots while it is served
//! (`max_concurrent_runs`), so MCP calls and `/v1/runs` share one budget.
//!
//! With `self_approve = false` the tenant's MCP server runs in human
//! approval mode: `approve: true` from the agent is refused unless the
//! client can ask the human itself (MCP elicitation), as in
//! `lobster mcp --approvals human`.

use super::state::AppState;
use super::{authed, ApiError};
use crate::mcp::{ApprovalMode, LobsterMcp};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::collections::HashMap;
use std::sync::Arc;
use tower_service::Service as _;

/// One tenant's MCP service.
pub type TenantMcp = StreamableHttpService<LobsterMcp, NeverSessionManager>;

/// Build the MCP services of every tenant.
pub fn services(
    tenants: &[Arc<super::tenant::Tenant>],
    max_body: usize,
) -> HashMap<String, TenantMcp> {
    tenants
        .iter()
        .map(|t| {
            let mode = if t.self_approve {
                ApprovalMode::Agent
            } else {
                ApprovalMode::Human
            };
            let server = LobsterMcp::new((*t.settings).clone(), mode);
            let config = StreamableHttpServerConfig::default()
                .with_legacy_session_mode(false)
                .with_json_response(true)
                .with_sse_keep_alive(None)
                // The gateway authenticates every request by its bearer
                // token; it is meant to sit behind a public host name.
                .disable_allowed_hosts()
                .with_max_request_body_bytes(max_body);
            let svc = StreamableHttpService::new(
                move || Ok(server.for_session()),
                Arc::new(NeverSessionManager::default()),
                config,
            );
            (t.name.clone(), svc)
        })
        .collect()
}

/// `/mcp`: authenticate, then hand the request to the tenant's service.
pub async fn handle(
    State(app): State<Arc<AppState>>,
    mcp: axum::Extension<Arc<HashMap<String, TenantMcp>>>,
    request: Request,
) -> Result<Response, ApiError> {
    let tenant = authed(&app, request.headers())?;
    // An MCP request holds one of the tenant's run slots while it is served
    // (tool calls run pipelines; listing is cheap and brief).
    let _slot = super::runs::slot(&app, &tenant)?;
    let Some(svc) = mcp.get(&tenant.name) else {
        return Err(ApiError::internal("no MCP service for this tenant"));
    };
    let mut svc = svc.clone();
    let (parts, body) = request.into_parts();
    let request = axum::http::Request::from_parts(parts, body);
    let response = match svc.call(request).await {
        Ok(r) => r,
        Err(never) => match never {},
    };
    let (parts, body) = response.into_parts();
    Ok(Response::from_parts(parts, Body::new(body)).into_response())
}
