//! Models through the host's broker (`broker.llm-json`).
//!
//! The step must ask for model calls in `describe`
//! ([`crate::StepInfo::needs_llm`]) and the run must grant them
//! (`--allow-llm`). The host picks the provider (the operator configures it),
//! checks the answer against the request's schema (asking again with the
//! validation errors when it fails), records it, and bounds the call by the
//! step's deadline and output limit.

use crate::bindings::lobster::step::broker;
use crate::Error;
use serde_json::{json, Value};

/// Ask for JSON with the full request object: `prompt`, `input`, `schema`,
/// and optionally `model`, `temperature`, `max-tokens`, `retries`. Returns
/// the answer, which already satisfies `schema`.
pub fn json(request: &Value) -> Result<Value, Error> {
    let text = serde_json::to_string(request)?;
    let answer = broker::llm_json(&text).map_err(Error::Failed)?;
    Ok(serde_json::from_str(&answer)?)
}

/// Ask for JSON about `input` that satisfies `schema`.
pub fn ask(prompt: &str, input: &Value, schema: &Value) -> Result<Value, Error> {
    json(&json!({"prompt": prompt, "input": input, "schema": schema}))
}
