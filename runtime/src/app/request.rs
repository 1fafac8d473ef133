//! Typed requests of the front doors, and the `lobster call` JSON contract
//! (`{"action":"run"|"resume",…}`) parsed into them with the tool
//! contract's exact error strings.

use super::options::LimitArgs;
use super::target::RunTarget;
use crate::error::{Error, Result};
use crate::kernel::Mode;
use crate::resume::{Decider, Decision, ResumeRequest, ResumeTarget};
use crate::value::Item;
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

/// Parse a `lobster call` request (the OpenClaw tool contract's JSON).
pub fn parse_call(text: &str) -> Result<Call> {
    let req: Value = serde_json::from_str(text)
        .map_err(|e| Error::parse(format!("call request must be a JSON object: {e}")))?;
    let Some(obj) = req.as_object() else {
        return Err(Error::parse("call request must be a JSON object"));
    };
    match obj.get("action").and_then(Value::as_str) {
        Some("run") => {
            let pipeline = obj
                .get("pipeline")
                .and_then(Value::as_str)
                .filter(|p| !p.trim().is_empty())
                .ok_or_else(|| Error::parse("pipeline required"))?;
            if let Some(args) = obj.get("argsJson").filter(|v| !v.is_null()) {
                let ok = args
                    .as_str()
                    .is_some_and(|s| serde_json::from_str::<Value>(s).is_ok());
                if !ok {
                    return Err(Error::parse("run --args-json must be valid JSON"));
                }
            }
            Ok(Call::Run(RunRequest {
                target: RunTarget::Pipeline(pipeline.to_string()),
                args: None,
                args_json: obj
                    .get("argsJson")
                    .and_then(Value::as_str)
                    .map(String::from),
                cwd: cwd_field(obj)?,
                limits: limit_fields(obj)?,
                strict_args: false,
                mode: Mode::Tool,
            }))
        }
        Some("resume") => Ok(Call::Resume(resume_fields(obj)?)),
        other => {
            let shown = match (other, obj.get("action")) {
                (Some(s), _) => s.to_string(),
                (None, Some(v)) => crate::value::js_to_string(Some(v)),
                (None, None) => "undefined".to_string(),
            };
            Err(Error::parse(format!("Unknown action: {shown}")))
        }
    }
}

/// `timeoutMs` and `maxStdoutBytes` of a request object.
pub fn limit_fields(obj: &Map<String, Value>) -> Result<LimitArgs> {
    Ok(LimitArgs {
        timeout_ms: count(obj, "timeoutMs")?,
        max_stdout_bytes: count(obj, "maxStdoutBytes")?,
        policy: None,
    })
}

/// `cwd` of a request object (empty means none).
pub fn cwd_field(obj: &Map<String, Value>) -> Result<Option<String>> {
    match obj.get("cwd") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(Error::parse("cwd must be a relative path")),
    }
}

/// The resume fields of a request object: `token` or `approvalId`, then one
/// of `cancel: true`, `response`, `approve`; `approver`; limits.
pub fn resume_fields(obj: &Map<String, Value>) -> Result<ResumeCall> {
    let text = |k: &str| {
        obj.get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let target = match (text("token"), text("approvalId")) {
        (Some(t), _) => ResumeTarget::Token(t),
        (None, Some(id)) => ResumeTarget::ApprovalId(id),
        _ => return Err(Error::parse("token or approvalId required")),
    };
    let decision = if obj.get("cancel") == Some(&Value::Bool(true)) {
        Decision::Cancel
    } else if let Some(response) = obj.get("response").filter(|v| !v.is_null()) {
        Decision::Respond(response.clone())
    } else {
        match obj.get("approve") {
            Some(Value::Bool(b)) => Decision::Approve(*b),
            _ => return Err(Error::parse("approve required")),
        }
    };
    Ok(ResumeCall {
        request: ResumeRequest {
            target,
            decision,
            decider: Decider::Operator(
                obj.get("approver")
                    .and_then(Value::as_str)
                    .map(String::from),
            ),
        },
        limits: limit_fields(obj)?,
        cwd: None,
    })
}

fn count(obj: &Map<String, Value>, key: &str) -> Result<Option<u64>> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_f64() {
            Some(f) if f.is_finite() => Ok(Some(f.max(0.0) as u64)),
            _ => Err(Error::parse(format!("{key} must be a number"))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        parse_call(text).unwrap_err().to_string()
    }

    #[test]
    fn contract_error_strings() {
        assert_eq!(err(r#"{"action":"fly"}"#), "Unknown action: fly");
        assert_eq!(err(r#"{}"#), "Unknown action: undefined");
        assert_eq!(err(r#"{"action":"run"}"#), "pipeline required");
        assert_eq!(
            err(r#"{"action":"run","pipeline":"head","argsJson":"{"}"#),
            "run --args-json must be valid JSON"
        );
        assert_eq!(
            err(r#"{"action":"resume","approve":true}"#),
            "token or approvalId required"
        );
        assert_eq!(
            err(r#"{"action":"resume","token":"t"}"#),
            "approve required"
        );
        assert_eq!(
            err(r#"{"action":"resume","token":"t","approve":"yes"}"#),
            "approve required"
        );
        assert_eq!(
            err(r#"{"action":"run","pipeline":"head","timeoutMs":"soon"}"#),
            "timeoutMs must be a number"
        );
    }

    #[test]
    fn accepted_requests() {
        let c = parse_call(r#"{"action":"run","pipeline":"head","timeoutMs":30000,"cwd":"x"}"#)
            .unwrap();
        let Call::Run(run) = c else { panic!("a run") };
        assert_eq!(run.target, RunTarget::Pipeline("head".into()));
        assert_eq!(run.cwd.as_deref(), Some("x"));
        assert_eq!(run.limits.timeout_ms, Some(30000));
        let c =
            parse_call(r#"{"action":"resume","approvalId":"abcd1234","approve":false}"#).unwrap();
        assert!(matches!(
            c,
            Call::Resume(ResumeCall {
                request: ResumeRequest {
                    decision: Decision::Approve(false),
                    ..
                },
                ..
            })
        ));
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
