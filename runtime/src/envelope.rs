//! The tool protocol: the one JSON envelope `--mode tool` prints (spec §1.4).
//!
//! Key order is part of the protocol, so envelopes are built as ordered maps
//! and printed with [`crate::value::to_js_json_pretty`].

use crate::error::Error;
use crate::value::Item;
use serde_json::{json, Map, Value};

/// The protocol version, always the first key.
pub const PROTOCOL_VERSION: u32 = 1;

/// `status` of a successful envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Ok,
    NeedsApproval,
    NeedsInput,
    Cancelled,
}

impl Status {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::NeedsApproval => "needs_approval",
            Status::NeedsInput => "needs_input",
            Status::Cancelled => "cancelled",
        }
    }
}

/// A paused run asking for a yes/no.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRequest {
    pub prompt: String,
    pub items: Vec<Item>,
    pub preview: Option<String>,
    pub initiated_by: Option<String>,
    pub required_approver: Option<String>,
    pub require_different_approver: bool,
    pub resume_token: String,
    pub approval_id: Option<String>,
    /// Lobster extension: blake3 of what runs after the gate (see
    /// [`crate::policy::plan_digest`]); resume refuses a different plan.
    pub plan_digest: Option<String>,
    /// Lobster extension: what the stages after the gate will use, one line each.
    pub capabilities: Option<Vec<String>>,
}

impl ApprovalRequest {
    /// `{type:"approval_request", prompt, items, preview?, initiatedBy?, requiredApprover?,
    /// requireDifferentApprover?, resumeToken, approvalId?, planDigest?, capabilities?}`.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("type".into(), json!("approval_request"));
        m.insert("prompt".into(), json!(self.prompt));
        m.insert("items".into(), Value::Array(self.items.clone()));
        if let Some(p) = self.preview.as_ref().filter(|p| !p.is_empty()) {
            m.insert("preview".into(), json!(p));
        }
        if let Some(v) = &self.initiated_by {
            m.insert("initiatedBy".into(), json!(v));
        }
        if let Some(v) = &self.required_approver {
            m.insert("requiredApprover".into(), json!(v));
        }
        if self.require_different_approver {
            m.insert("requireDifferentApprover".into(), json!(true));
        }
        m.insert("resumeToken".into(), json!(self.resume_token));
        if let Some(id) = &self.approval_id {
            m.insert("approvalId".into(), json!(id));
        }
        if let Some(d) = &self.plan_digest {
            m.insert("planDigest".into(), json!(d));
        }
        if let Some(c) = &self.capabilities {
            m.insert("capabilities".into(), json!(c));
        }
        Value::Object(m)
    }
}

/// A paused run asking for structured input.
#[derive(Debug, Clone, PartialEq)]
pub struct InputRequest {
    pub prompt: String,
    pub response_schema: Value,
    pub defaults: Option<Value>,
    pub subject: Option<Value>,
    pub resume_token: String,
    /// The items that reached an `ask` stage. Not part of the tool envelope;
    /// human mode prints them in the halted item, as the reference does.
    pub items: Option<Vec<Item>>,
}

impl InputRequest {
    /// `{type:"input_request", prompt, responseSchema, defaults?, subject?, resumeToken}`.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("type".into(), json!("input_request"));
        m.insert("prompt".into(), json!(self.prompt));
        m.insert("responseSchema".into(), self.response_schema.clone());
        if let Some(d) = &self.defaults {
            m.insert("defaults".into(), d.clone());
        }
        if let Some(s) = &self.subject {
            m.insert("subject".into(), s.clone());
        }
        m.insert("resumeToken".into(), json!(self.resume_token));
        Value::Object(m)
    }
}

/// A successful envelope.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    pub status: Status,
    pub output: Vec<Item>,
    pub requires_approval: Option<ApprovalRequest>,
    pub requires_input: Option<InputRequest>,
}

impl Envelope {
    /// `status: ok` with these items.
    pub fn ok(output: Vec<Item>) -> Self {
        Envelope {
            status: Status::Ok,
            output,
            requires_approval: None,
            requires_input: None,
        }
    }

    /// `status: cancelled`, empty output.
    pub fn cancelled() -> Self {
        Envelope {
            status: Status::Cancelled,
            output: Vec::new(),
            requires_approval: None,
            requires_input: None,
        }
    }

    /// `status: needs_approval`.
    pub fn needs_approval(request: ApprovalRequest) -> Self {
        Envelope {
            status: Status::NeedsApproval,
            output: Vec::new(),
            requires_approval: Some(request),
            requires_input: None,
        }
    }

    /// `status: needs_input`.
    pub fn needs_input(request: InputRequest) -> Self {
        Envelope {
            status: Status::NeedsInput,
            output: Vec::new(),
            requires_approval: None,
            requires_input: Some(request),
        }
    }

    /// The full tool-mode envelope.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("protocolVersion".into(), json!(PROTOCOL_VERSION));
        m.insert("ok".into(), json!(true));
        m.insert("status".into(), json!(self.status.as_str()));
        m.insert("output".into(), Value::Array(self.output.clone()));
        m.insert(
            "requiresApproval".into(),
            self.requires_approval
                .as_ref()
                .map_or(Value::Null, ApprovalRequest::to_json),
        );
        m.insert(
            "requiresInput".into(),
            self.requires_input
                .as_ref()
                .map_or(Value::Null, InputRequest::to_json),
        );
        Value::Object(m)
    }
}

/// `{protocolVersion:1, ok:false, error:{type, message}}`.
pub fn error_envelope(err: &Error) -> Value {
    error_envelope_of(err.kind(), &err.to_string())
}

/// An error envelope with an explicit type (e.g. `doctor_error`).
pub fn error_envelope_of(kind: &str, message: &str) -> Value {
    let mut e = Map::new();
    e.insert("type".into(), json!(kind));
    e.insert("message".into(), json!(message));
    let mut m = Map::new();
    m.insert("protocolVersion".into(), json!(PROTOCOL_VERSION));
    m.insert("ok".into(), json!(false));
    m.insert("error".into(), Value::Object(e));
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::to_js_json;

    #[test]
    fn key_order_is_the_protocol() {
        let env = Envelope::needs_approval(ApprovalRequest {
            prompt: "ok?".into(),
            items: vec![json!(1)],
            preview: Some(String::new()),
            initiated_by: None,
            required_approver: None,
            require_different_approver: false,
            resume_token: "T".into(),
            approval_id: Some("0a1b2c3d".into()),
            plan_digest: None,
            capabilities: None,
        });
        assert_eq!(
            to_js_json(&env.to_json()),
            r#"{"protocolVersion":1,"ok":true,"status":"needs_approval","output":[],"requiresApproval":{"type":"approval_request","prompt":"ok?","items":[1],"resumeToken":"T","approvalId":"0a1b2c3d"},"requiresInput":null}"#
        );
        assert_eq!(
            to_js_json(&error_envelope(&Error::parse("Unclosed quote"))),
            r#"{"protocolVersion":1,"ok":false,"error":{"type":"parse_error","message":"Unclosed quote"}}"#
        );
    }
}
