//! Gateway tools through the host's broker (`broker.invoke-tool`).
//!
//! The step must list the tool in `describe` ([`crate::StepInfo::needs_tool`])
//! and the run must grant it (`--allow-tool NAME`); the host judges every
//! call against that, the policy and the run's budgets before sending
//! anything, and answers a request it already answered in this run from its
//! record (a resumed run never asks twice).

use crate::bindings::lobster::step::broker;
use crate::Error;
use serde_json::Value;

/// Call `tool` with `action` (default `json`) and the arguments `args` (a
/// JSON object). Returns the tool's result items.
pub fn invoke(tool: &str, action: Option<&str>, args: &Value) -> Result<Vec<Value>, Error> {
    let text = serde_json::to_string(args)?;
    let answer = broker::invoke_tool(tool, action, &text).map_err(Error::Failed)?;
    match serde_json::from_str(&answer)? {
        Value::Array(items) => Ok(items),
        other => Ok(vec![other]),
    }
}
