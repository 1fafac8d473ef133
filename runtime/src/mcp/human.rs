//! Approvals by the human (`--approvals human` and `link`): an
//! `approve: true` in `lobster_resume` is replaced by the human's answer,
//! asked through the client (an MCP "input required" result with an
//! elicitation form, answered by the retried call), or refused when the
//! client cannot ask.

use super::runner::Runner;
use super::ApprovalMode;
use crate::app::{approval, ResumeCall, Settings};
use crate::error::{Error, Result};
use crate::resume::{Decider, Decision};
use crate::value::Item;
use rmcp::model::{
    CallToolRequestParams, InputRequest, InputRequests, InputRequiredResult, ProtocolVersion,
};
use rmcp::service::RequestContext;
use rmcp::RoleServer;
use serde_json::json;

/// The key of the approval question in an "input required" result.
const APPROVAL_KEY: &str = "approval";

/// What human-approval mode makes of an `approve: true`.
pub enum Gate {
    /// Resume with this (the human's) decision.
    Proceed(ResumeCall),
    /// Ask the human first.
    Ask(InputRequiredResult),
}

/// `--approvals human`: an `approve: true` is replaced by the human's
/// answer, asked through the client, or refused when the client cannot ask.
pub fn gate(
    settings: &Settings,
    approvals: ApprovalMode,
    runner: Option<&dyn Runner>,
    call: ResumeCall,
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> Result<Gate> {
    let store = settings.store();
    let pending = approval::pending(&store, &call.request.target)?;
    if pending.halt_type != "approval_request" {
        // Input gates take a response; the app layer refuses approve there.
        return Ok(Gate::Proceed(call));
    }
    let link_only = approvals == ApprovalMode::Link;
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
        // that human is the operator, named as the operator names them
        // (not their agent, whose call this was); a front door with runs of
        // its own says who it was (serve: an elicited human, no name).
        call.request.decider = match (runner, call.request.decider) {
            (Some(runner), decider) => runner.elicited(decider),
            (None, Decider::OperatorAgent(n)) => Decider::Operator(n),
            (None, decider) => decider,
        };
        return Ok(Gate::Proceed(call));
    }
    if link_only || !client_can_ask(context) {
        let refused = Error::parse(
            "approve: true is refused: this server takes approvals from the human, and this client cannot ask them (it needs MCP 2026-07-28 with elicitation)",
        );
        let link = runner.and_then(|r| r.approval_link(&call.request.target));
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
