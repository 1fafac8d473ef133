//! The MCP handler: tool calls (their arguments read by [`super::args`]) →
//! [`crate::app`] calls on the blocking pool; approvals by the human in
//! [`super::human`], step logs to the client in [`super::logs`].

// MCP logging (`logging/setLevel`) is deprecated by SEP-2577 but still what
// clients subscribe with; step logs use it.
#![allow(deprecated)]

use super::args::{self, ResumeArgs, RunArgs, WorkflowsArgs};
use super::human::{self, Gate};
use super::logs;
use super::runner::{in_place, Runner};
use super::tools::{self, RESUME, RUN, WORKFLOWS};
use super::ApprovalMode;
use crate::app::{Reply, ResumeCall, RunRequest, Settings};
use crate::error::Error;
use crate::kernel::{Cancel, CancelReason};
use crate::resume::{Decider, Decision};
use crate::value::Item;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeResult, ListToolsResult, LoggingLevel, PaginatedRequestParams, ServerCapabilities,
    ServerConfig, SetLevelRequestParams, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::json;
use std::sync::{Arc, Mutex};

/// Lobster's MCP server. Cheap to clone; holds only read-only settings and
/// the tool list computed at start-up.
#[derive(Clone)]
pub struct LobsterMcp {
    inner: Arc<Inner>,
    /// The session's `logging/setLevel` (legacy clients; 2026-07-28 clients
    /// put the level in each request's `_meta`). Give every session its own
    /// with [`LobsterMcp::for_session`].
    log_level: Arc<Mutex<Option<LoggingLevel>>>,
}

struct Inner {
    settings: Arc<Settings>,
    approvals: ApprovalMode,
    tools: Vec<Tool>,
    /// The front door's runner (`None`: in place, see [`super::runner`]).
    runner: Option<Arc<dyn Runner>>,
}

use crate::app::Call as Job;

impl LobsterMcp {
    /// A server over `settings` (the catalog's workflows become tools).
    pub fn new(settings: Settings, approvals: ApprovalMode) -> Self {
        let tools = tools::all(&settings.catalog, approvals != ApprovalMode::Agent);
        LobsterMcp {
            inner: Arc::new(Inner {
                settings: Arc::new(settings),
                approvals,
                tools,
                runner: None,
            }),
            log_level: Arc::default(),
        }
    }

    /// The same server, its calls run by `runner` (a front door's own
    /// runs; see [`Runner`]).
    pub fn with_runner(self, runner: Arc<dyn Runner>) -> Self {
        let inner = &self.inner;
        LobsterMcp {
            inner: Arc::new(Inner {
                settings: inner.settings.clone(),
                approvals: inner.approvals,
                tools: inner.tools.clone(),
                runner: Some(runner),
            }),
            log_level: Arc::default(),
        }
    }

    /// A handle for a new session: the same settings and tools, its own
    /// log level (what an HTTP transport's per-session factory should hand out).
    pub fn for_session(&self) -> Self {
        LobsterMcp {
            inner: self.inner.clone(),
            log_level: Arc::default(),
        }
    }

    /// The tools this server lists.
    pub fn tools(&self) -> &[Tool] {
        &self.inner.tools
    }

    fn human(&self) -> bool {
        self.inner.approvals != ApprovalMode::Agent
    }

    async fn execute(&self, job: Job, cancelled: RequestContext<RoleServer>) -> Reply {
        let cancel = Cancel::default();
        let session = *self.log_level.lock().unwrap_or_else(|p| p.into_inner());
        let (log, forwarder) = match logs::sink(session, &cancelled) {
            Some((sink, task)) => (Some(sink), Some(task)),
            None => (None, None),
        };
        let watcher = {
            let cancel = cancel.clone();
            let ct = cancelled.ct.clone();
            tokio::spawn(async move {
                ct.cancelled().await;
                cancel.trigger(CancelReason::Signal {
                    name: "SIGINT",
                    number: libc::SIGINT,
                });
            })
        };
        let reply = match &self.inner.runner {
            Some(runner) => runner.execute(job, cancel, log).await,
            None => in_place(self.inner.settings.clone(), job, cancel, log).await,
        };
        watcher.abort();
        if let Some(task) = forwarder {
            // The logs go out before the result (the sink is dropped with the
            // run's context); a run stuck past its grace does not hold the answer.
            let _ = tokio::time::timeout(std::time::Duration::from_millis(200), task).await;
        }
        reply
    }
}

fn failure(e: &Error, human: bool) -> CallToolResponse {
    CallToolResponse::Complete(tools::result(&Reply::error(e), human))
}

impl ServerHandler for LobsterMcp {
    fn get_info(&self) -> ServerConfig {
        InitializeResult::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_logging()
                .build(),
        )
            .with_server_info(Implementation::new("lobster", crate::VERSION))
            .with_instructions(
                "Lobster runs multi-step pipelines and workflows in one call (lobster_run, or a workflow's own tool). \
                 A run may pause at an approval or input gate: ask the human, then call lobster_resume with the token.",
            )
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<(), McpError> {
        *self.log_level.lock().unwrap_or_else(|p| p.into_inner()) = Some(request.level);
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.inner.tools.clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResponse, McpError> {
        let human = self.human();
        let args = request.arguments.clone().unwrap_or_default();
        let job = match request.name.as_ref() {
            WORKFLOWS => {
                if let Err(e) = args::parse::<WorkflowsArgs>(WORKFLOWS, args) {
                    return Ok(failure(&e, human));
                }
                let list: Vec<Item> = self
                    .inner
                    .settings
                    .catalog
                    .entries
                    .iter()
                    .map(|e| e.to_json_as(self.inner.settings.tenant))
                    .collect();
                let body = json!({ "workflows": list });
                let mut out = CallToolResult::success(vec![ContentBlock::text(
                    crate::value::to_js_json(&body),
                )]);
                out.structured_content = Some(body);
                return Ok(CallToolResponse::Complete(out));
            }
            RUN => match args::parse::<RunArgs>(RUN, args).and_then(RunRequest::try_from) {
                Ok(r) => Job::Run(r),
                Err(e) => return Ok(failure(&e, human)),
            },
            RESUME => {
                let mut call =
                    match args::parse::<ResumeArgs>(RESUME, args).and_then(ResumeCall::try_from) {
                        Ok(c) => c,
                        Err(e) => return Ok(failure(&e, human)),
                    };
                // The client's own call: its agent decides (a front door's
                // runner says whose agent that is; a yes the human gives in
                // the client's form is theirs, see `human::gate`).
                call.request.decider = match call.request.decider {
                    Decider::Operator(n) => Decider::OperatorAgent(n),
                    other => other,
                };
                if human && call.request.decision == Decision::Approve(true) {
                    let inner = &self.inner;
                    let asked = human::gate(
                        &inner.settings,
                        inner.approvals,
                        inner.runner.as_deref(),
                        call,
                        &request,
                        &context,
                    );
                    match asked {
                        Ok(Gate::Proceed(call)) => Job::Resume(call),
                        Ok(Gate::Ask(ask)) => return Ok(CallToolResponse::InputRequired(ask)),
                        Err(e) => return Ok(failure(&e, human)),
                    }
                } else {
                    Job::Resume(call)
                }
            }
            name if self.inner.settings.catalog.get(name).is_some() => {
                Job::Run(RunRequest::workflow_named(name, args))
            }
            other => {
                return Err(McpError::invalid_params(
                    format!("unknown tool: {other}"),
                    None,
                ))
            }
        };
        let reply = self.execute(job, context).await;
        Ok(CallToolResponse::Complete(tools::result(&reply, human)))
    }
}
