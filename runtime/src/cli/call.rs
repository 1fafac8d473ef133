//! `lobster call`: one agent tool call (the JSON object an OpenClaw-style
//! gateway sends to the `lobster` tool) in, one envelope out.
//!
//! ```json
//! {"action":"run","pipeline":"…","cwd":"sub","timeoutMs":30000,"maxStdoutBytes":512000,"argsJson":"{}"}
//! {"action":"resume","token":"…","approve":true}
//! ```
//! The request is read into typed wire structs ([`CallHead`], [`CallRun`],
//! and the resume fields every door shares, [`ResumeFields`]) and converted
//! with `TryFrom` into the one [`app`] request; running lives in
//! [`crate::app`]. This file also arms the signal handlers and prints.
//! Keys the contract does not name are ignored, as by the reference's tool.

use super::help;
use super::output::{pretty_line, write_once, Printer};
use crate::app::request::{cwd, limits, Lenient, ResumeFields};
use crate::app::{self, Call, ResumeCall, RunRequest, RunTarget, Settings, StartOptions};
use crate::error::{Error, Result};
use crate::kernel::{Cancel, Mode};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};
use std::io::Read;
use std::sync::Arc;

pub(super) fn call(argv: &[String]) -> i32 {
    if argv.iter().any(|a| a == "--help" || a == "-h") {
        write_once(help::CALL_HELP, "");
        return 0;
    }
    let printer = Printer {
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
    let call = match raw.and_then(|text| parse_call(&text)) {
        Ok(c) => c,
        Err(e) => return printer.error(&e),
    };
    let cancel = Cancel::default();
    // Without handlers a signal still ends the process, just without the envelope.
    let _ = crate::process::install_signal_handlers(&cancel);
    let opts = StartOptions {
        cancel,
        ..StartOptions::default()
    };
    let reply = app::start(Arc::new(Settings::default()), call, opts)
        .wait()
        .reply();
    write_once(&pretty_line(&reply.envelope), "");
    reply.exit_code
}

/// Parse a `lobster call` request (the OpenClaw tool contract's JSON): an
/// object, its `action`, then the fields of that action.
pub(super) fn parse_call(text: &str) -> Result<Call> {
    let req: Value = serde_json::from_str(text)
        .map_err(|e| Error::parse(format!("call request must be a JSON object: {e}")))?;
    let Value::Object(obj) = req else {
        return Err(Error::parse("call request must be a JSON object"));
    };
    let head: CallHead = wire(&obj)?;
    match head.action {
        Some(Lenient::Is(a)) if a == "run" => Ok(Call::Run(wire::<CallRun>(&obj)?.try_into()?)),
        Some(Lenient::Is(a)) if a == "resume" => {
            Ok(Call::Resume(ResumeCall::try_from(wire::<ResumeFields>(
                &obj,
            )?)?))
        }
        Some(Lenient::Is(other)) => Err(Error::parse(format!("Unknown action: {other}"))),
        Some(Lenient::Other(v)) => Err(Error::parse(format!(
            "Unknown action: {}",
            crate::value::js_to_string(Some(&v))
        ))),
        None => Err(Error::parse("Unknown action: undefined")),
    }
}

/// What every call names first.
#[derive(Debug, Deserialize)]
struct CallHead {
    /// `run` or `resume`; `null` is shown as `null`, absent as `undefined`.
    #[serde(default, deserialize_with = "present")]
    action: Option<Lenient<String>>,
}

/// `{"action":"run",…}`: a pipeline with its args, directory and limits.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CallRun {
    /// The pipeline text (required, not blank).
    pipeline: Option<Lenient<String>>,
    /// Workflow args as JSON text.
    args_json: Option<Lenient<String>>,
    /// Working directory, relative and inside the gateway's.
    cwd: Option<Lenient<String>>,
    /// Whole-run timeout in milliseconds.
    timeout_ms: Option<Lenient<f64>>,
    /// Cap on the envelope's size in bytes.
    max_stdout_bytes: Option<Lenient<f64>>,
}

impl TryFrom<CallRun> for RunRequest {
    type Error = Error;

    /// The contract's refusals, in its order: `pipeline required`, `run
    /// --args-json must be valid JSON`, then cwd's and the limits'.
    fn try_from(w: CallRun) -> Result<RunRequest> {
        let pipeline = w
            .pipeline
            .and_then(Lenient::typed)
            .filter(|p| !p.trim().is_empty())
            .ok_or_else(|| Error::parse("pipeline required"))?;
        let args_json = match w.args_json {
            None => None,
            Some(Lenient::Is(text)) if serde_json::from_str::<Value>(&text).is_ok() => Some(text),
            Some(_) => return Err(Error::parse("run --args-json must be valid JSON")),
        };
        Ok(RunRequest {
            target: RunTarget::Pipeline(pipeline),
            args: None,
            args_json,
            cwd: cwd(w.cwd)?,
            limits: limits(w.timeout_ms, w.max_stdout_bytes)?,
            strict_args: false,
            mode: Mode::Tool,
        })
    }
}

/// A present field, `null` included (absent stays `None` by `default`).
fn present<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<Lenient<String>>, D::Error> {
    Lenient::deserialize(d).map(Some)
}

/// One of the wire structs from the request object.
fn wire<T: serde::de::DeserializeOwned>(obj: &Map<String, Value>) -> Result<T> {
    T::deserialize(Value::Object(obj.clone()))
        .map_err(|e| Error::parse(format!("call request: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resume::{Decision, ResumeRequest};

    fn err(text: &str) -> String {
        parse_call(text).unwrap_err().to_string()
    }

    #[test]
    fn contract_error_strings() {
        assert_eq!(err(r#"{"action":"fly"}"#), "Unknown action: fly");
        assert_eq!(err(r#"{}"#), "Unknown action: undefined");
        assert_eq!(err(r#"{"action":null}"#), "Unknown action: null");
        assert_eq!(err(r#"{"action":7}"#), "Unknown action: 7");
        assert_eq!(err(r#"{"action":"run"}"#), "pipeline required");
        assert_eq!(
            err(r#"{"action":"run","pipeline":"  "}"#),
            "pipeline required"
        );
        assert_eq!(
            err(r#"{"action":"run","pipeline":["head"]}"#),
            "pipeline required"
        );
        assert_eq!(
            err(r#"{"action":"run","pipeline":"head","argsJson":"{"}"#),
            "run --args-json must be valid JSON"
        );
        assert_eq!(
            err(r#"{"action":"run","pipeline":"head","argsJson":{}}"#),
            "run --args-json must be valid JSON"
        );
        assert_eq!(
            err(r#"{"action":"run","pipeline":"head","cwd":3}"#),
            "cwd must be a relative path"
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
        assert_eq!(err("[1]"), "call request must be a JSON object");
        assert!(err("{").starts_with("call request must be a JSON object: "));
    }

    #[test]
    fn accepted_requests() {
        let c = parse_call(
            r#"{"action":"run","pipeline":"head","timeoutMs":30000,"cwd":"x","argsJson":null,"extra":1}"#,
        )
        .unwrap();
        let Call::Run(run) = c else { panic!("a run") };
        assert_eq!(run.target, RunTarget::Pipeline("head".into()));
        assert_eq!(run.cwd.as_deref(), Some("x"));
        assert_eq!(run.limits.timeout_ms, Some(30000));
        assert_eq!(run.args_json, None);
        let c = parse_call(r#"{"action":"run","pipeline":"head","argsJson":"{\"a\":1}","cwd":""}"#)
            .unwrap();
        let Call::Run(run) = c else { panic!("a run") };
        assert_eq!(run.args_json.as_deref(), Some(r#"{"a":1}"#));
        assert_eq!(run.cwd, None);
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
}
