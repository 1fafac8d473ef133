//! The tools `lobster mcp` serves: names, descriptions written for a model,
//! annotations, input schemas (plain JSON Schema, no `format: uint32`
//! noise) and the envelope's output schema; and how an envelope becomes a
//! tool result (structured content + a text copy that says what to do next).

use crate::app::{Catalog, Reply, WorkflowEntry};
use crate::value::{to_js_json, Item};
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations};
use serde_json::json;
use std::sync::Arc;

/// `lobster_run`.
pub const RUN: &str = "lobster_run";
/// `lobster_resume`.
pub const RESUME: &str = "lobster_resume";
/// `lobster_workflows`.
pub const WORKFLOWS: &str = "lobster_workflows";

fn object(v: Item) -> Arc<JsonObject> {
    match v {
        Item::Object(m) => Arc::new(m),
        _ => unreachable!("schemas are objects"),
    }
}

/// The schema of every envelope (`structuredContent`).
pub fn envelope_schema() -> Item {
    json!({
        "type": "object",
        "description": "The Lobster tool envelope (protocolVersion 1).",
        "properties": {
            "protocolVersion": {"type": "integer"},
            "ok": {"type": "boolean"},
            "status": {"type": "string", "enum": ["ok", "needs_approval", "needs_input", "cancelled"]},
            "output": {"type": "array", "items": {}},
            "requiresApproval": {"type": ["object", "null"]},
            "requiresInput": {"type": ["object", "null"]},
            "error": {
                "type": "object",
                "properties": {"type": {"type": "string"}, "message": {"type": "string"}},
                "required": ["type", "message"]
            }
        },
        "required": ["protocolVersion", "ok"]
    })
}

fn run_schema() -> Item {
    json!({
        "type": "object",
        "properties": {
            "pipeline": {"type": "string", "description": "Lobster pipeline text, e.g. \"exec --json --shell 'gh pr list --json number,title' | where state==OPEN | approve --prompt 'Merge these?'\". Give exactly one of pipeline and workflow."},
            "workflow": {"type": "string", "description": "A workflow file (path relative to the working directory) or the name of a workflow listed by lobster_workflows."},
            "args": {"type": "object", "description": "Workflow args as a JSON object."},
            "argsJson": {"type": "string", "description": "Workflow args as JSON text (instead of args)."},
            "cwd": {"type": "string", "description": "Working directory, relative to the server's and inside it."},
            "timeoutMs": {"type": "integer", "minimum": 0, "description": "Whole-run timeout in milliseconds (default 20000, at least 200)."},
            "maxStdoutBytes": {"type": "integer", "minimum": 0, "description": "Cap on the result envelope's size in bytes (default 512000)."}
        },
        "additionalProperties": false
    })
}

fn resume_schema() -> Item {
    json!({
        "type": "object",
        "properties": {
            "token": {"type": "string", "description": "The resumeToken of a paused run."},
            "approvalId": {"type": "string", "description": "The short approvalId of a paused run (instead of token)."},
            "approve": {"type": "boolean", "description": "The human's decision at an approval gate."},
            "response": {"type": "object", "description": "The human's answer at an input gate; must match requiresInput.responseSchema."},
            "cancel": {"type": "boolean", "description": "true drops the paused run."},
            "approver": {"type": "string", "description": "Who decided (checked by gates that require a specific or a different approver)."},
            "timeoutMs": {"type": "integer", "minimum": 0, "description": "Timeout for the rest of the run in milliseconds."},
            "maxStdoutBytes": {"type": "integer", "minimum": 0, "description": "Cap on the result envelope's size in bytes."}
        },
        "additionalProperties": false
    })
}

fn workflows_output_schema() -> Item {
    json!({
        "type": "object",
        "properties": {
            "workflows": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "file": {"type": "string"},
                        "description": {"type": ["string", "null"]},
                        "args": {"type": "object"},
                        "gates": {"type": "array", "items": {"type": "object"}},
                        "capabilities": {"type": "array", "items": {"type": "string"}}
                    },
                    "required": ["name", "file", "args", "gates", "capabilities"]
                }
            }
        },
        "required": ["workflows"]
    })
}

const RUN_DESCRIPTION: &str = "Run a Lobster pipeline or workflow in one call and get one JSON envelope back. \
A pipeline chains commands with | (exec, where, pick, sort, head, map, json, approve, ask, …); a workflow is a file of steps. \
The result's status is ok (output holds the items), needs_approval or needs_input (the run is paused durably: \
show the human requiresApproval/requiresInput, ask them, then call lobster_resume with the token), or cancelled; \
failures come back as isError with error.type and error.message.";

const RESUME_DESCRIPTION: &str = "Continue a run that paused at an approval or input gate. \
Pass the token (or approvalId) from the paused result and exactly one of: approve (true or false, as the HUMAN decided — never decide yourself), \
response (the human's answer, matching responseSchema), or cancel: true. A token works once.";

const WORKFLOWS_DESCRIPTION: &str =
    "List the workflows this server offers: name, file, description, args (a JSON Schema), \
approval/input gates and what each may do. Each is also a tool of its own under its name.";

/// Every tool: the three built-ins, then one per catalog workflow.
pub fn all(catalog: &Catalog, human_approvals: bool) -> Vec<Tool> {
    let envelope = object(envelope_schema());
    let mut resume_description = RESUME_DESCRIPTION.to_string();
    if human_approvals {
        resume_description.push_str(
            " This server asks the human itself for approve: true (the client shows them the prompt); \
             if the client cannot, approve: true is refused and the human must approve outside the chat.",
        );
    }
    let mut tools = vec![
        Tool::new(RUN, RUN_DESCRIPTION, object(run_schema()))
            .with_title("Run a Lobster pipeline or workflow")
            .with_raw_output_schema(envelope.clone())
            .with_annotations(
                ToolAnnotations::with_title("Run a Lobster pipeline or workflow")
                    .read_only(false)
                    .destructive(true)
                    .idempotent(false)
                    .open_world(true),
            ),
        Tool::new(RESUME, resume_description, object(resume_schema()))
            .with_title("Resume a paused Lobster run")
            .with_raw_output_schema(envelope.clone())
            .with_annotations(
                ToolAnnotations::with_title("Resume a paused Lobster run")
                    .read_only(false)
                    .destructive(true)
                    .idempotent(false)
                    .open_world(true),
            ),
        Tool::new(
            WORKFLOWS,
            WORKFLOWS_DESCRIPTION,
            object(json!({"type": "object", "properties": {}, "additionalProperties": false})),
        )
        .with_title("List Lobster workflows")
        .with_raw_output_schema(object(workflows_output_schema()))
        .with_annotations(
            ToolAnnotations::with_title("List Lobster workflows")
                .read_only(true)
                .destructive(false)
                .idempotent(true)
                .open_world(false),
        ),
    ];
    for entry in &catalog.entries {
        tools.push(workflow_tool(entry, envelope.clone()));
    }
    tools
}

fn workflow_tool(entry: &WorkflowEntry, envelope: Arc<JsonObject>) -> Tool {
    let mut description = entry
        .description
        .clone()
        .unwrap_or_else(|| format!("Run the Lobster workflow {}.", entry.name));
    if !entry.gates.is_empty() {
        description.push_str(
            " It may pause for a human decision (needs_approval/needs_input): ask the human, then call lobster_resume.",
        );
    }
    if !entry.capabilities.is_empty() {
        description.push_str(&format!(" It may: {}.", entry.capabilities.join("; ")));
    }
    let read_only = entry.capabilities.is_empty();
    Tool::new(
        entry.name.clone(),
        description,
        object(entry.args_schema.clone()),
    )
    .with_title(format!("Lobster workflow {}", entry.name))
    .with_raw_output_schema(envelope)
    .with_annotations(
        ToolAnnotations::with_title(format!("Lobster workflow {}", entry.name))
            .read_only(read_only)
            .destructive(!read_only)
            .idempotent(false)
            .open_world(!read_only),
    )
}

/// The tool result for a reply: the envelope as structured content and as
/// text, after a sentence saying what the model should do next.
pub fn result(reply: &Reply, human_approvals: bool) -> CallToolResult {
    let env = &reply.envelope;
    let s = |p: &str| env.pointer(p).and_then(Item::as_str).unwrap_or_default();
    let lead = if !reply.ok() {
        format!(
            "The Lobster run failed ({}): {}",
            s("/error/type"),
            s("/error/message")
        )
    } else {
        match reply.status() {
            Some("needs_approval") => {
                let id = env
                    .pointer("/requiresApproval/approvalId")
                    .and_then(Item::as_str)
                    .map(|id| format!(" (or approvalId \"{id}\")"))
                    .unwrap_or_default();
                let how = if human_approvals {
                    "The server asks the human itself when you call lobster_resume with approve: true; if the human already said no, call it with approve: false."
                } else {
                    "Do not decide yourself: show the human the prompt and items, ask whether to proceed, then call lobster_resume with approve: true or false as they said."
                };
                format!(
                    "The run is paused for approval: \"{}\". {how} Use token \"{}\"{id}.",
                    s("/requiresApproval/prompt"),
                    s("/requiresApproval/resumeToken")
                )
            }
            Some("needs_input") => format!(
                "The run is paused for input: \"{}\". Ask the human (the answer must match requiresInput.responseSchema), then call lobster_resume with token \"{}\" and response set to their answer.",
                s("/requiresInput/prompt"),
                s("/requiresInput/resumeToken")
            ),
            Some("cancelled") => "The run was cancelled; nothing more will run.".to_string(),
            _ => {
                let n = env
                    .get("output")
                    .and_then(Item::as_array)
                    .map_or(0, Vec::len);
                format!(
                    "The run finished with {n} output item{}.",
                    if n == 1 { "" } else { "s" }
                )
            }
        }
    };
    let text = format!("{lead}\n\n{}", to_js_json(env));
    let mut out = if reply.ok() {
        CallToolResult::success(vec![ContentBlock::text(text)])
    } else {
        CallToolResult::error(vec![ContentBlock::text(text)])
    };
    out.structured_content = Some(env.clone());
    out
}
