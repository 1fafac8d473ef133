//! Typed requests of the front doors, and the `lobster call` JSON contract
//! (`{"action":"run"|"resume",…}`) parsed into them with the tool
//! contract's exact error strings.

use super::options::LimitArgs;
use super::target::RunTarget;
use crate::error::{Error, Result};
use crate::kernel::Mode;
use crate::resume::{Decider, Decision, ResumeRequest, ResumeTarget};
use crate::value::Item;
use serde::Deserialize;
use serde_json::{Map, Value};

/// Run a pipeline or a workflow.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRequest {
    pub target: RunTarget,
    /// Workflow args as an object (`args`).
    pub args: Option<Map<String, Item>>,
    /// Workflow args as JSON text (`argsJson`); at most one of the two.
    pub args_json: Option<String>,
    /// Working directory, relative and inside the server's.
    pub cwd: Option<String>,
    /// `timeoutMs` and `maxStdoutBytes` (the policy comes from [`super::Settings`]).
    pub limits: LimitArgs,
    /// Refuse args the workflow does not declare (workflow-as-tool calls).
    pub strict_args: bool,
    /// Tool mode (one envelope, gates halt) for every door but `lobster run`.
    pub mode: Mode,
}

impl RunRequest {
    /// A pipeline run with default limits.
    pub fn pipeline(text: impl Into<String>) -> Self {
        RunRequest {
            target: RunTarget::Pipeline(text.into()),
            args: None,
            args_json: None,
            cwd: None,
            limits: LimitArgs::default(),
            strict_args: false,
            mode: Mode::Tool,
        }
    }

    /// A catalog workflow run with these args.
    pub fn workflow_named(name: impl Into<String>, args: Map<String, Item>) -> Self {
        RunRequest {
            target: RunTarget::Workflow(name.into()),
            args: Some(args),
            args_json: None,
            cwd: None,
            limits: LimitArgs::default(),
            strict_args: true,
            mode: Mode::Tool,
        }
    }

    /// The args as `--args-json` text (what the workflow layer takes).
    pub fn args_text(&self) -> Result<Option<String>> {
        match (&self.args, &self.args_json) {
            (Some(_), Some(_)) => Err(Error::parse(
                "give workflow args as args or as argsJson, not both",
            )),
            (Some(m), None) => Ok(Some(crate::value::to_js_json(&Item::Object(m.clone())))),
            (None, Some(text)) => {
                if serde_json::from_str::<Value>(text).is_err() {
                    return Err(Error::parse("run --args-json must be valid JSON"));
                }
                Ok(Some(text.clone()))
            }
            (None, None) => Ok(None),
        }
    }
}

/// Resume a paused run.
#[derive(Debug, Clone, PartialEq)]
pub struct ResumeCall {
    pub request: ResumeRequest,
    /// `timeoutMs` and `maxStdoutBytes` for the rest of the run.
    pub limits: LimitArgs,
    /// `lobster resume --cwd` (the paused run's own directory wins when it
    /// still exists).
    pub cwd: Option<String>,
}

/// One request of a door (see [`super::start::Request`]).
pub use super::start::Request as Call;

/// A field of a door's wire struct read leniently, as the tool contract
/// does: the expected JSON type, or anything else (kept so the conversion
/// can refuse it with the contract's own message, or show it). Absent and
/// `null` are `None` of an `Option<Lenient<T>>`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum Lenient<T> {
    /// The field has the expected type.
    Is(T),
    /// Anything else that was sent.
    Other(Value),
}

impl<T> Lenient<T> {
    /// The value when it has the expected type.
    pub fn typed(self) -> Option<T> {
        match self {
            Lenient::Is(t) => Some(t),
            Lenient::Other(_) => None,
        }
    }
}

/// The limits of a wire struct's `timeoutMs` and `maxStdoutBytes`.
pub fn limits(
    timeout_ms: Option<Lenient<f64>>,
    max_stdout_bytes: Option<Lenient<f64>>,
) -> Result<LimitArgs> {
    Ok(LimitArgs {
        timeout_ms: count("timeoutMs", timeout_ms)?,
        max_stdout_bytes: count("maxStdoutBytes", max_stdout_bytes)?,
        policy: None,
    })
}

/// A wire struct's `cwd`: a string (empty means none), else refused.
pub fn cwd(field: Option<Lenient<String>>) -> Result<Option<String>> {
    match field {
        None => Ok(None),
        Some(Lenient::Is(s)) if s.is_empty() => Ok(None),
        Some(Lenient::Is(s)) => Ok(Some(s)),
        Some(Lenient::Other(_)) => Err(Error::parse("cwd must be a relative path")),
    }
}

/// The resume fields of the tool contract, the same on every door
/// (`lobster call`'s `action: resume`, MCP's `lobster_resume`, serve's
/// decisions): `token` or `approvalId`, then one of `cancel: true`,
/// `response`, `approve`; `approver`; limits. Keys it does not name are
/// not looked at (a door that refuses them checks first).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResumeFields {
    /// The resumeToken of a paused run.
    pub token: Option<Lenient<String>>,
    /// The short approvalId of a paused run (instead of token).
    pub approval_id: Option<Lenient<String>>,
    /// The decision at an approval gate.
    pub approve: Option<Lenient<bool>>,
    /// The answer at an input gate (checked later against its schema).
    pub response: Option<Value>,
    /// `true` drops the paused run.
    pub cancel: Option<Lenient<bool>>,
    /// Who decided, as the operator names them.
    pub approver: Option<Lenient<String>>,
    /// Timeout for the rest of the run in milliseconds.
    pub timeout_ms: Option<Lenient<f64>>,
    /// Cap on the envelope's size in bytes.
    pub max_stdout_bytes: Option<Lenient<f64>>,
}

impl ResumeFields {
    /// The `token` when it is a non-empty string.
    pub fn token(&self) -> Option<&str> {
        text(&self.token)
    }

    /// The `approvalId` when it is a non-empty string.
    pub fn approval_id(&self) -> Option<&str> {
        text(&self.approval_id)
    }

    /// The paused run named: `token`, else `approvalId`.
    pub fn target(&self) -> Result<ResumeTarget> {
        match (self.token(), self.approval_id()) {
            (Some(t), _) => Ok(ResumeTarget::Token(t.to_string())),
            (None, Some(id)) => Ok(ResumeTarget::ApprovalId(id.to_string())),
            _ => Err(Error::parse("token or approvalId required")),
        }
    }

    /// The one decision: `cancel: true`, else `response` (not null), else
    /// `approve` (a boolean).
    pub fn decision(&self) -> Result<Decision> {
        if self.cancel == Some(Lenient::Is(true)) {
            Ok(Decision::Cancel)
        } else if let Some(response) = &self.response {
            Ok(Decision::Respond(response.clone()))
        } else {
            match self.approve {
                Some(Lenient::Is(b)) => Ok(Decision::Approve(b)),
                _ => Err(Error::parse("approve required")),
            }
        }
    }

    /// The limits for the rest of the run (`timeoutMs`, `maxStdoutBytes`).
    pub fn limits(&self) -> Result<LimitArgs> {
        limits(self.timeout_ms.clone(), self.max_stdout_bytes.clone())
    }
}

fn text(field: &Option<Lenient<String>>) -> Option<&str> {
    match field {
        Some(Lenient::Is(s)) if !s.is_empty() => Some(s),
        _ => None,
    }
}

impl TryFrom<ResumeFields> for ResumeCall {
    type Error = Error;

    /// The contract's refusals, in its order: `token or approvalId
    /// required`, `approve required`, then the limits'.
    fn try_from(f: ResumeFields) -> Result<ResumeCall> {
        let target = f.target()?;
        let decision = f.decision()?;
        Ok(ResumeCall {
            limits: f.limits()?,
            request: ResumeRequest {
                target,
                decision,
                decider: Decider::Operator(f.approver.and_then(Lenient::typed)),
            },
            cwd: None,
        })
    }
}

fn count(key: &str, field: Option<Lenient<f64>>) -> Result<Option<u64>> {
    match field {
        None => Ok(None),
        Some(Lenient::Is(f)) if f.is_finite() => Ok(Some(f.max(0.0) as u64)),
        Some(_) => Err(Error::parse(format!("{key} must be a number"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resume(v: Value) -> Result<ResumeCall> {
        ResumeCall::try_from(serde_json::from_value::<ResumeFields>(v).unwrap())
    }

    #[test]
    fn resume_fields_refusals_in_the_contract_order() {
        let err = |v: Value| resume(v).unwrap_err().to_string();
        assert_eq!(
            err(serde_json::json!({"approve": true})),
            "token or approvalId required"
        );
        assert_eq!(
            err(serde_json::json!({"token": "", "approvalId": 5, "approve": true})),
            "token or approvalId required"
        );
        assert_eq!(err(serde_json::json!({"token": "t"})), "approve required");
        assert_eq!(
            err(serde_json::json!({"token": "t", "approve": "yes"})),
            "approve required"
        );
        assert_eq!(
            err(serde_json::json!({"token": "t", "approve": true, "maxStdoutBytes": [1]})),
            "maxStdoutBytes must be a number"
        );
        // The decision is checked before the limits.
        assert_eq!(
            err(serde_json::json!({"token": "t", "timeoutMs": "soon"})),
            "approve required"
        );
    }

    #[test]
    fn resume_fields_accepted() {
        let c = resume(serde_json::json!({
            "approvalId": "abcd1234", "approve": false, "approver": "ann",
            "timeoutMs": -5, "maxStdoutBytes": 1000.7, "other": 1
        }))
        .unwrap();
        assert_eq!(
            c.request.target,
            ResumeTarget::ApprovalId("abcd1234".into())
        );
        assert_eq!(c.request.decision, Decision::Approve(false));
        assert_eq!(c.request.decider, Decider::Operator(Some("ann".into())));
        assert_eq!(c.limits.timeout_ms, Some(0));
        assert_eq!(c.limits.max_stdout_bytes, Some(1000));
        // cancel: true wins over approve; a response over approve; null is absent.
        let c = resume(serde_json::json!({"token": "t", "cancel": true, "approve": true})).unwrap();
        assert_eq!(c.request.decision, Decision::Cancel);
        let c = resume(serde_json::json!({"token": "t", "response": {"a": 1}, "approve": true}))
            .unwrap();
        assert_eq!(
            c.request.decision,
            Decision::Respond(serde_json::json!({"a": 1}))
        );
        let c = resume(serde_json::json!({"token": "t", "response": null, "cancel": "yes", "approve": true, "approver": 7}))
            .unwrap();
        assert_eq!(c.request.decision, Decision::Approve(true));
        assert_eq!(c.request.decider, Decider::Operator(None));
    }

    #[test]
    fn args_as_object_or_text_not_both() {
        let mut r = RunRequest::workflow_named("w", Map::new());
        assert_eq!(r.args_text().unwrap().as_deref(), Some("{}"));
        r.args_json = Some("{}".into());
        assert_eq!(
            r.args_text().unwrap_err().to_string(),
            "give workflow args as args or as argsJson, not both"
        );
        r.args = None;
        r.args_json = Some("{".into());
        assert_eq!(
            r.args_text().unwrap_err().to_string(),
            "run --args-json must be valid JSON"
        );
    }
}
