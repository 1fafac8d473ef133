//! The MCP handler: tool calls (their arguments read by [`super::args`]) →
//! [`crate::app`] calls on the blocking pool.

// MCP logging (`logging/setLevel`, `notifications/message`) is deprecated by
// SEP-2577 but still what clients subscribe with; step logs use it.
#![allow(deprecated)]

use super::args::{self, ResumeArgs, RunArgs, WorkflowsArgs};
use super::runner::{in_place, Runner};
use super::tools::{self, RESUME, RUN, WORKFLOWS};
use super::ApprovalMode;
use crate::app::{approval, Reply, ResumeCall, RunRequest, Settings};
use crate::error::{Error, Result};
use crate::kernel::{Cancel, CancelReason, Level, LogLine, LogSink};
use crate::resume::Decision;
use crate::value::Item;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeResult, InputRequest, InputRequests, InputRequiredResult, ListToolsResult,
    LoggingLevel, LoggingMessageNotificationParam, PaginatedRequestParams, ProtocolVersion,
    ServerCapabilities, ServerConfig, SetLevelRequestParams, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::json;
use std::sync::{Arc, Mutex};

/// The key of the approval question in an "input required" result.
const APPROVAL_KEY: &str = "approval";

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

/// What human-approval mode makes of an `approve: true`.
enum Gate {
    /// Resume with this (the human's) decision.
    Proceed(ResumeCall),
    /// Ask the human first.
    Ask(InputRequiredResult),
}

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

    /// Where a call's step logs go: `notifications/message` when the client
    /// asked for logs (else `None`: the process's stderr), and the task that
    /// forwards them.
    fn log_sink(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Option<(LogSink, tokio::task::JoinHandle<()>)> {
        let session = *self.log_level.lock().unwrap_or_else(|p| p.into_inner());
        let min = context.meta.log_level().or(session)?;
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<LogLine>();
        let peer = context.peer.clone();
        let task = tokio::spawn(async move {
            while let Some(line) = rx.recv().await {
                let param = LoggingMessageNotificationParam::new(
                    mcp_level(line.level),
                    json!(line.message),
                )
                .with_logger(line.step);
                if peer.notify_logging_message(param).await.is_err() {
                    break;
                }
            }
        });
        let sink: LogSink = Arc::new(move |line: &LogLine| {
            if rank(mcp_level(line.level)) >= rank(min) {
                let _ = tx.send(line.clone());
            }
        });
        Some((sink, task))
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
        let (log, forwarder) = match self.log_sink(&cancelled) {
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

    /// `--approvals human`: an `approve: true` is replaced by the human's
    /// answer, asked through the client, or refused when the client cannot ask.
    fn human_gate(
        &self,
        call: ResumeCall,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<Gate> {
        let store = self.inner.settings.store();
        let pending = approval::pending(&store, &call.request.target)?;
        if pending.halt_type != "approval_request" {
            // Input gates take a response; the app layer refuses approve there.
            return Ok(Gate::Proceed(call));
        }
        let link_only = self.inner.approvals == ApprovalMode::Link;
        if let (false, Some(sealed)) = (link_only, &request.request_state) {
            approval::open(&store, sealed, &pending.state_key)?;
            let answer = request
                .input_responses
                .as_ref()
                .and_then(|r| r.get(APPROVAL_KEY))
                .ok_or_else(|| Error::parse("the retried call carries no answer from the human"))?;
            let decision = match answer.get("action").and_then(Item::as_str) {
                Some("accept") => match answer.pointer("/content/approve") {
                    Some(Item::Bool(b)) => *b,
                    _ => {
                        return Err(Error::parse(
                            "the human's answer has no approve: true|false",
                        ))
                    }
                },
                Some("decline") => false,
                _ => {
                    return Err(Error::runtime(
                        "the human dismissed the approval request; the run is still paused",
                    )
                    .with_hint("call lobster_resume again to ask again"))
                }
            };
            let mut call = call;
            call.request.decision = Decision::Approve(decision);
            // The human answered through the client. In stdio `lobster mcp`
            // that human is the operator's, named as the operator names them;
            // a front door with runs of its own says who it was (serve: an
            // elicited human, no name).
            if let Some(runner) = &self.inner.runner {
                call.request.decider = runner.elicited(call.request.decider);
            }
            return Ok(Gate::Proceed(call));
        }
        if link_only || !client_can_ask(context) {
            let refused = Error::parse(
                "approve: true is refused: this server takes approvals from the human, and this client cannot ask them (it needs MCP 2026-07-28 with elicitation)",
            );
            let link = self
                .inner
                .runner
                .as_ref()
                .and_then(|r| r.approval_link(&call.request.target));
            if let Some(link) = link {
                // The envelope carries the message only: the link goes in it.
                return Err(Error::parse(format!(
                    "approve: true is refused: this gateway takes approvals from a human; send the human this approval link: {link} (approve: false or cancel: true still work here)"
                )));
            }
            let id = pending
                .approval_id
                .as_deref()
                .map(|id| format!("--id {id}"))
                .unwrap_or_else(|| "--token <resumeToken>".into());
            return Err(refused.with_hint(format!(
                "the human approves with `lobster resume {id} --approve yes`; approve: false or cancel: true still work here"
            )));
        }
        let mut message = format!("Lobster asks for your approval: {}", pending.prompt);
        if let Some(p) = &pending.preview {
            message.push_str(&format!("\n\nItems:\n{p}"));
        }
        let ask: InputRequest = serde_json::from_value(json!({
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": message,
                "requestedSchema": {
                    "type": "object",
                    "properties": {
                        "approve": {
                            "type": "boolean",
                            "title": "Approve",
                            "description": "Yes lets the paused run continue; no rejects it."
                        }
                    },
                    "required": ["approve"]
                }
            }
        }))
        .map_err(|e| Error::runtime(format!("cannot build the approval request: {e}")))?;
        let mut requests = InputRequests::new();
        requests.insert(APPROVAL_KEY.into(), ask);
        let sealed = approval::seal(&store, &pending.state_key)?;
        Ok(Gate::Ask(InputRequiredResult::new(
            Some(requests),
            Some(sealed),
        )))
    }
}

#[allow(deprecated)]
fn mcp_level(level: Level) -> LoggingLevel {
    match level {
        Level::Trace | Level::Debug => LoggingLevel::Debug,
        Level::Info => LoggingLevel::Info,
        Level::Warn => LoggingLevel::Warning,
        Level::Error => LoggingLevel::Error,
    }
}

#[allow(deprecated)]
fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// MCP 2026-07-28 or later with elicitation: "input required" results work.
fn client_can_ask(context: &RequestContext<RoleServer>) -> bool {
    let modern = context
        .protocol_version()
        .and_then(|v| serde_json::to_value(v).ok())
        .and_then(|v| v.as_str().map(String::from))
        .is_some_and(|v| {
            v.as_str()
                >= serde_json::to_value(ProtocolVersion::V_2026_07_28)
                    .ok()
                    .and_then(|x| x.as_str().map(String::from))
                    .unwrap_or_default()
                    .as_str()
        });
    modern
        && context
            .client_capabilities()
            .is_some_and(|c| c.elicitation.is_some())
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
                let call =
                    match args::parse::<ResumeArgs>(RESUME, args).and_then(ResumeCall::try_from) {
                        Ok(c) => c,
                        Err(e) => return Ok(failure(&e, human)),
                    };
                if human && call.request.decision == Decision::Approve(true) {
                    match self.human_gate(call, &request, &context) {
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
