//! `POST /mcp`: the MCP tools of `lobster mcp` over rmcp's streamable-HTTP
//! transport (stateless: every request stands alone), one service per
//! tenant so every tool call runs with that tenant's settings (policy,
//! catalog, steps, store). The bearer token picks the tenant.
//!
//! Tool calls are the gateway's runs like any other ([`TenantRunner`], the
//! MCP server's [`Runner`]): each takes one of the tenant's run slots
//! (`max_concurrent_runs`, shared with `/v1/runs`), has a record (`GET
//! /v1/runs/{id}`), counts in the metrics, and a run paused at a gate is in
//! `GET /v1/approvals` with its link for a human. A resume through MCP
//! decides the gate exactly once over every door and node, like
//! `POST /v1/resume`.
//!
//! With `self_approve = false`, `approve: true` from the agent is refused
//! with an approval link for a human approver ([`ApprovalMode::Link`]);
//! only a tenant that says its client's "input required" answers are a
//! human's (`elicitation_is_human = true`) has the client ask ([`ApprovalMode::Human`]).
//! Every resume's decider is who the door authenticated: the tenant's
//! agent, or the elicited human — never the call's `approver` argument,
//! which is refused.

use super::offload::offload;
use super::runs::{self, Attach, Launch};
use super::state::AppState;
use super::tenant::Tenant;
use super::{ApiError, Authed};
use crate::app::{Call, Reply};
use crate::error::Error;
use crate::kernel::{Cancel, LogSink};
use crate::mcp::runner::ReplyFuture;
use crate::mcp::{ApprovalMode, LobsterMcp, Runner};
use crate::resume::{Decider, ResumeTarget};
use crate::state::runlog::time_prefixed_id;
use axum::body::Body;
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Weak};
use tower_service::Service as _;

/// One tenant's MCP service.
pub type TenantMcp = StreamableHttpService<LobsterMcp, NeverSessionManager>;

/// Build the MCP services of every tenant.
pub fn services(app: &Arc<AppState>, max_body: usize) -> HashMap<String, TenantMcp> {
    app.tenants
        .iter()
        .map(|t| {
            let mode = if t.self_approve {
                ApprovalMode::Agent
            } else if t.elicitation_is_human {
                ApprovalMode::Human
            } else {
                ApprovalMode::Link
            };
            let runner = TenantRunner {
                app: Arc::downgrade(app),
                tenant: t.clone(),
            };
            let server = LobsterMcp::new((*t.settings).clone(), mode).with_runner(Arc::new(runner));
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
    Authed(tenant): Authed,
    mcp: axum::Extension<Arc<HashMap<String, TenantMcp>>>,
    request: Request,
) -> Result<Response, ApiError> {
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

/// A tenant's MCP calls as the gateway's runs. Holds the server's state
/// weakly: the state owns the router that owns this.
#[derive(Clone)]
pub struct TenantRunner {
    app: Weak<AppState>,
    tenant: Arc<Tenant>,
}

impl TenantRunner {
    async fn run(
        &self,
        call: Call,
        cancel: Cancel,
        log: Option<LogSink>,
    ) -> Result<runs::Settled, ApiError> {
        let app = self
            .app
            .upgrade()
            .ok_or_else(|| ApiError::internal("the server is stopping"))?;
        let tenant = self.tenant.clone();
        let attach = Attach {
            cancel: Some(cancel),
            log,
            door: Some(super::doors::MCP),
        };
        let call = match call {
            Call::Resume(mut c) => {
                c.request.decider = match c.request.decider {
                    // Set by the MCP server when the client asked the human.
                    Decider::Elicited => Decider::Elicited,
                    Decider::Operator(Some(_)) | Decider::OperatorAgent(Some(_)) => {
                        return Err(ApiError::bad_request(
                            "approver is not accepted here: a decision's identity is who authenticated it (the tenant's token, or an approver signed in on the approval page)",
                        ))
                    }
                    _ => Decider::TenantAgent(tenant.name.clone()),
                };
                Call::Resume(c)
            }
            run => run,
        };
        // Store calls (PostgreSQL round trips) stay off the async threads.
        let mut rx = offload(move || {
            let tenant = &tenant;
            let paused = match &call {
                Call::Resume(c) => paused_of(tenant, &c.request.target)?,
                Call::Run(_) => None,
            };
            match (paused, call) {
                (Some(rec), Call::Resume(c)) => {
                    Ok(runs::decide_call(&app, tenant, &rec, c, attach)?.1)
                }
                (_, call) => {
                    // A run, or the resume of a gate the gateway did not
                    // list: decided through the same gate function (a token
                    // in another spelling is refused; a gate taken through
                    // another door is taken), before anything is recorded.
                    let slot = runs::slot(&app, tenant)?;
                    let gate = match &call {
                        Call::Resume(c) => {
                            let rule = |gate: &crate::app::gate::Gate,
                                        request: &crate::resume::ResumeRequest| {
                                runs::may_decide(&app, tenant, None, gate, request)
                            };
                            Some(
                                crate::app::gate::take(&tenant.store, &c.request, &rule)
                                    .map_err(|r| runs::refusal("", r))?,
                            )
                        }
                        Call::Run(_) => None,
                    };
                    let launch = Launch {
                        slot,
                        run_id: time_prefixed_id(),
                        job: call,
                        created_at: None,
                        stored: false,
                        paused: None,
                        gate: gate.clone(),
                    };
                    runs::start_attached(&app, tenant, launch, attach).inspect_err(|_| {
                        if let Some(g) = &gate {
                            crate::app::gate::release(&tenant.store, g);
                        }
                    })
                }
            }
        })
        .await?;
        let settled = rx
            .wait_for(Option::is_some)
            .await
            .map_err(|_| ApiError::internal("the run ended without a record"))?
            .clone();
        settled.ok_or_else(|| ApiError::internal("the run ended without a record"))
    }
}

/// The listed paused run a resume target names.
fn paused_of(
    tenant: &Tenant,
    target: &ResumeTarget,
) -> Result<Option<crate::state::RunRecord>, ApiError> {
    match target {
        ResumeTarget::Token(t) => runs::find_paused(tenant, Some(t), None),
        ResumeTarget::ApprovalId(a) => runs::find_paused(tenant, None, Some(a)),
    }
}

impl Runner for TenantRunner {
    /// A tenant's elicited answer is a human's without a name: the call's
    /// `approver` and the server's environment never name it.
    fn elicited(&self, _decider: Decider) -> Decider {
        Decider::Elicited
    }

    fn execute(&self, call: Call, cancel: Cancel, log: Option<LogSink>) -> ReplyFuture {
        let this = self.clone();
        Box::pin(async move {
            match this.run(call, cancel, log).await {
                Ok(rec) => {
                    let envelope = rec.envelope().clone();
                    let ok = envelope["ok"] == Value::Bool(true);
                    Reply {
                        envelope,
                        exit_code: if ok { 0 } else { 1 },
                    }
                }
                Err(e) => Reply::error(&Error::runtime(e.message)),
            }
        })
    }

    fn approval_link(&self, target: &ResumeTarget) -> Option<String> {
        let app = self.app.upgrade()?;
        let rec = paused_of(&self.tenant, target).ok()??;
        Some(super::approvals::link_for(&app, &self.tenant, &rec))
    }
}
