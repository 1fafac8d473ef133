//! `lobster call`: one agent tool call (the JSON object an OpenClaw-style
//! gateway sends to the `lobster` tool) in, one envelope out.
//!
//! ```json
//! {"action":"run","pipeline":"…","cwd":"sub","timeoutMs":30000,"maxStdoutBytes":512000,"argsJson":"{}"}
//! {"action":"resume","token":"…","approve":true}
//! ```
//! Parameter errors use the tool contract's exact strings.

use super::limits::LimitArgs;
use super::output::{write_once, Printer};
use super::{build_context, help, run_text, supervise};
use crate::error::{Error, Result};
use crate::executor::Mode;
use crate::resume::{Decision, ResumeRequest, ResumeTarget};
use serde_json::Value;
use std::io::Read;

/// A validated call.
#[derive(Debug, Clone, PartialEq)]
enum Call {
    Run {
        pipeline: String,
        cwd: Option<String>,
        limits: LimitArgs,
        args_json: Option<String>,
    },
    Resume {
        request: ResumeRequest,
        limits: LimitArgs,
    },
}

pub(super) fn call(argv: &[String]) -> i32 {
    if argv.iter().any(|a| a == "--help" || a == "-h") {
        write_once(help::CALL_HELP, "");
        return 0;
    }
    let mut printer = Printer {
        mode: Mode::Tool,
        max_bytes: None,
        text: None,
    };
    let raw = match argv.first() {
        Some(text) => Ok(text.clone()),
        None => {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .map(|_| s)
                .map_err(Error::from)
        }
    };
    let parsed = raw.and_then(|text| parse_call(&text));
    let call = match parsed {
        Ok(c) => c,
        Err(e) => return printer.error(&e),
    };
    match call {
        Call::Run {
            pipeline,
            cwd,
            limits,
            args_json,
        } => {
            let run_args = super::run_args::RunArgs {
                mode: Mode::Tool,
                file: None,
                args_json,
                dry_run: false,
                limits: limits.clone(),
                cwd: cwd.clone(),
                help: false,
                sandbox: Default::default(),
                rest: vec![pipeline.clone()],
            };
            if let Some(file) = super::workflow_file::workflow_target(&run_args) {
                return super::workflow_file::run_workflow(&file, &run_args, &mut printer);
            }
            let ctx = match build_context(Mode::Tool, &limits, cwd.as_deref()) {
                Ok(c) => c,
                Err(e) => return printer.error(&e),
            };
            printer.max_bytes = ctx.limits.max_output_bytes;
            supervise(&ctx, &printer);
            printer.finish(run_text(&pipeline, &ctx))
        }
        Call::Resume { request, limits } => {
            let mut ctx = match build_context(Mode::Tool, &limits, None) {
                Ok(c) => c,
                Err(e) => return printer.error(&e),
            };
            printer.max_bytes = ctx.limits.max_output_bytes;
            supervise(&ctx, &printer);
            printer.finish(crate::resume::resume(&request, &mut ctx))
        }
    }
}

fn parse_call(text: &str) -> Result<Call> {
    let req: Value = serde_json::from_str(text)
        .map_err(|e| Error::parse(format!("call request must be a JSON object: {e}")))?;
    if !req.is_object() {
        return Err(Error::parse("call request must be a JSON object"));
    }
    let limits = LimitArgs {
        timeout_ms: count(&req, "timeoutMs")?,
        max_stdout_bytes: count(&req, "maxStdoutBytes")?,
        policy: None,
    };
    match req.get("action").and_then(Value::as_str) {
        Some("run") => {
            let pipeline = req
                .get("pipeline")
                .and_then(Value::as_str)
                .filter(|p| !p.trim().is_empty())
                .ok_or_else(|| Error::parse("pipeline required"))?;
            if let Some(args) = req.get("argsJson").filter(|v| !v.is_null()) {
                let ok = args
                    .as_str()
                    .is_some_and(|s| serde_json::from_str::<Value>(s).is_ok());
                if !ok {
                    return Err(Error::parse("run --args-json must be valid JSON"));
                }
            }
            let cwd = match req.get("cwd") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) if s.is_empty() => None,
                Some(Value::String(s)) => Some(s.clone()),
                Some(_) => return Err(Error::parse("cwd must be a relative path")),
            };
            Ok(Call::Run {
                pipeline: pipeline.to_string(),
                cwd,
                limits,
                args_json: req
                    .get("argsJson")
                    .and_then(Value::as_str)
                    .map(String::from),
            })
        }
        Some("resume") => {
            let text = |k: &str| {
                req.get(k)
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
            };
            let target = match (text("token"), text("approvalId")) {
                (Some(t), _) => ResumeTarget::Token(t),
                (None, Some(id)) => ResumeTarget::ApprovalId(id),
                _ => return Err(Error::parse("token or approvalId required")),
            };
            let decision = if req.get("cancel") == Some(&Value::Bool(true)) {
                Decision::Cancel
            } else if let Some(response) = req.get("response").filter(|v| !v.is_null()) {
                Decision::Respond(response.clone())
            } else {
                match req.get("approve") {
                    Some(Value::Bool(b)) => Decision::Approve(*b),
                    _ => return Err(Error::parse("approve required")),
                }
            };
            Ok(Call::Resume {
                request: ResumeRequest {
                    target,
                    decision,
                    approver: req
                        .get("approver")
                        .and_then(Value::as_str)
                        .map(String::from),
                },
                limits,
            })
        }
        other => {
            let shown = match (other, req.get("action")) {
                (Some(s), _) => s.to_string(),
                (None, Some(v)) => crate::value::js_to_string(Some(v)),
                (None, None) => "undefined".to_string(),
            };
            Err(Error::parse(format!("Unknown action: {shown}")))
        }
    }
}

fn count(req: &Value, key: &str) -> Result<Option<u64>> {
    match req.get(key) {
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
    }

    #[test]
    fn accepted_requests() {
        let c = parse_call(r#"{"action":"run","pipeline":"head","timeoutMs":30000,"cwd":"x"}"#)
            .unwrap();
        assert_eq!(
            c,
            Call::Run {
                pipeline: "head".into(),
                cwd: Some("x".into()),
                limits: LimitArgs {
                    timeout_ms: Some(30000),
                    max_stdout_bytes: None,
                    policy: None,
                },
                args_json: None,
            }
        );
        let c =
            parse_call(r#"{"action":"resume","approvalId":"abcd1234","approve":false}"#).unwrap();
        assert!(matches!(
            c,
            Call::Resume {
                request: ResumeRequest {
                    decision: Decision::Approve(false),
                    ..
                },
                ..
            }
        ));
    }
}
