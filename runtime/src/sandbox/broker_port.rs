//! The `broker` import of `lobster:step@0.2.0`: a step asks for a gateway
//! tool or a model; the host judges the call at the moment it is made
//! ([`crate::policy::broker`]: the step's `describe`, the run's grants
//! narrowed by `permissions:`, the policy, the budgets), then makes it through
//! the run's [`crate::broker::Broker`] (recorded by request digest, replayed
//! on resume; journaled, so a run claimed again after its resumer died
//! replays the calls that resumer made instead of sending them again, see
//! `crate::policy::recovery`) under the step's deadline and the run's cancellation, with the
//! answer bounded by the step's output cap.
//!
//! The sandbox only sees the [`StepBroker`] trait; [`RunBroker`] is the
//! implementation a run hands to its wasm steps.

use crate::broker::gateway::{self, GatewayError, ToolCall};
use crate::broker::llm::{self, AskError, Provider, Question, Reply};
use crate::broker::{body_cap, Broker, BrokerCalls, Kind};
use crate::kernel::{Cancel, CancelReason, Context, Grants, Policy};
use crate::policy::broker::{judge_llm, judge_tool, BrokerGrants, Caller};
use crate::schema::Schema;
use serde_json::{json, Map, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What bounds one brokered call of a step.
#[derive(Debug, Clone, Copy)]
pub struct CallBounds {
    /// The step's deadline.
    pub deadline: Option<Instant>,
    /// The step's output byte limit (answers and requests count against it).
    pub output_bytes: usize,
}

/// Tools and models as a step's `broker` import sees them. An `Err` is the
/// message the guest receives (nothing was sent when the call was refused).
pub trait StepBroker: Send + Sync {
    /// `broker.invoke-tool`.
    fn invoke_tool(
        &self,
        tool: &str,
        action: Option<&str>,
        args_json: &str,
        bounds: CallBounds,
    ) -> Result<String, String>;

    /// `broker.llm-json`.
    fn llm_json(&self, request_json: &str, bounds: CallBounds) -> Result<String, String>;
}

/// The broker of one run, as one wasm step may use it.
pub struct RunBroker {
    step: String,
    described_tools: Vec<String>,
    described_llm: bool,
    grants: BrokerGrants,
    policy: Policy,
    cancel: Cancel,
    broker: Arc<Broker>,
    run_output_cap: Option<usize>,
}

impl RunBroker {
    /// For step `step` whose `describe` lists `described_tools` and
    /// `described_llm`, under the grants the step gets (`granted`, already
    /// the intersection of the run's grants and any `permissions:` blocks).
    pub fn new(
        ctx: &Context,
        step: &str,
        described_tools: Vec<String>,
        described_llm: bool,
        granted: &Grants,
    ) -> RunBroker {
        RunBroker {
            step: step.to_string(),
            described_tools,
            described_llm,
            grants: BrokerGrants::of(granted),
            policy: ctx.policy().clone(),
            cancel: ctx.cancel.clone(),
            broker: ctx.broker.clone(),
            run_output_cap: ctx.limits.max_output_bytes,
        }
    }

    fn caller(&self) -> Caller<'_> {
        Caller::Step {
            name: &self.step,
            described_tools: &self.described_tools,
            described_llm: self.described_llm,
        }
    }

    fn cap(&self, bounds: CallBounds) -> Result<usize, String> {
        let cap =
            body_cap(self.broker.endpoints(), self.run_output_cap).map_err(|e| e.to_string())?;
        Ok(cap.map_or(bounds.output_bytes, |c| c.min(bounds.output_bytes)))
    }

    /// The gateway the operator configured for the run (a step never
    /// picks it, and nothing in the step's environment moves it).
    fn endpoint(&self) -> Result<gateway::Endpoint, String> {
        gateway::resolve(None, None, self.broker.endpoints())
            .map_err(|e| e.message("broker.invoke-tool"))
    }

    /// The provider the operator configured for the run (`[model]
    /// provider`, else the first configured).
    fn provider(&self) -> Result<Provider, String> {
        let endpoints = self.broker.endpoints();
        let Some(name) = endpoints.detect_provider() else {
            return Err("broker.llm-json could not resolve a provider: the operator configures one ([model] in the policy, or LOBSTER_LLM_PROVIDER / OPENCLAW_URL / LOBSTER_LLM_BASE_URL when lobster starts)".into());
        };
        llm::provider(&name, "broker.llm-json", None, endpoints)
    }

    /// The operator's default model for the provider `name`.
    fn default_model(&self, name: &str) -> Option<String> {
        self.broker.endpoints().models.get(name)?.model.clone()
    }

    /// A cancellation that fires with the run's or at the step's deadline.
    fn bounded(&self, bounds: CallBounds) -> (Cancel, Watchdog) {
        let child = self.cancel.child();
        let done = Arc::new(AtomicBool::new(false));
        if let Some(deadline) = bounds.deadline {
            let (c, d) = (child.clone(), done.clone());
            std::thread::spawn(move || {
                while !d.load(Ordering::SeqCst) {
                    let now = Instant::now();
                    if now >= deadline {
                        c.trigger(CancelReason::Timeout);
                        return;
                    }
                    std::thread::sleep((deadline - now).min(Duration::from_millis(20)));
                }
            });
        }
        (child, Watchdog(done))
    }

    fn stopped(&self, what: &str) -> String {
        if self.cancel.is_cancelled() {
            format!("{what} cancelled: the run was cancelled")
        } else {
            format!("{what} stopped: the step's deadline passed")
        }
    }
}

/// Stops the deadline thread when the call is over.
struct Watchdog(Arc<AtomicBool>);

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

fn too_large(what: &str, len: usize, cap: usize) -> Result<(), String> {
    if len > cap {
        return Err(format!(
            "{what} is {len} bytes, over the step's output limit of {cap} bytes"
        ));
    }
    Ok(())
}

impl StepBroker for RunBroker {
    fn invoke_tool(
        &self,
        tool: &str,
        action: Option<&str>,
        args_json: &str,
        bounds: CallBounds,
    ) -> Result<String, String> {
        judge_tool(&self.policy, &self.grants, self.caller(), tool)
            .map_err(|r| format!("{r}; nothing was sent"))?;
        let cap = self.cap(bounds)?;
        too_large("the tool call's args-json", args_json.len(), cap)?;
        let args: Value = serde_json::from_str(args_json)
            .map_err(|e| format!("broker.invoke-tool args-json is not JSON: {e}"))?;
        if !args.is_object() {
            return Err("broker.invoke-tool args-json must be a JSON object".into());
        }
        let endpoint = self.endpoint()?;
        let call = ToolCall {
            tool: tool.to_string(),
            action: Some(action.unwrap_or("json").to_string()),
            args,
            session_key: None,
            dry_run: None,
        };
        // Same identity as openclaw.invoke's: the endpoint and the body, never the token.
        let request = json!({
            "url": format!("{}:{}{}", endpoint.url.host, endpoint.url.port, endpoint.url.path),
            "body": call.body(),
        });
        let (cancel, _watch) = self.bounded(bounds);
        let answer = self
            .broker
            .call(
                &self.policy,
                Kind::Tool,
                &request,
                || match gateway::invoke(&endpoint, &call, &cancel, Some(cap)) {
                    Ok(items) => Ok((Value::Array(items), 0)),
                    Err(GatewayError::Cancelled) => Err(crate::error::Error::runtime(
                        self.stopped("broker.invoke-tool"),
                    )),
                    Err(e) => Err(crate::error::Error::runtime(
                        e.message("broker.invoke-tool"),
                    )),
                },
            )
            .map_err(|e| e.to_string())?;
        let text = crate::value::to_js_json(&match answer {
            Value::Array(items) => Value::Array(items),
            other => Value::Array(vec![other]),
        });
        too_large("the tool's answer", text.len(), cap)?;
        Ok(text)
    }

    fn llm_json(&self, request_json: &str, bounds: CallBounds) -> Result<String, String> {
        judge_llm(&self.policy, &self.grants, self.caller())
            .map_err(|r| format!("{r}; nothing was sent"))?;
        let cap = self.cap(bounds)?;
        too_large("the llm-json request", request_json.len(), cap)?;
        let mut req = parse_request(request_json)?;
        let provider = self.provider()?;
        if req.question.model.is_none() {
            // The operator's default model, as for llm.invoke.
            req.question.model = self.default_model(provider.name());
        }
        if matches!(provider, Provider::Openai { .. }) && req.question.model.is_none() {
            return Err("broker.llm-json needs a model for provider=openai (request model, or LOBSTER_LLM_MODEL)".into());
        }
        let schema = match &req.question.schema {
            Some(s) => Some(
                Schema::compile(s)
                    .map_err(|e| format!("broker.llm-json schema is not valid: {e}"))?,
            ),
            None => None,
        };
        let (cancel, _watch) = self.bounded(bounds);
        let mut errors: Vec<String> = Vec::new();
        let mut attempt = 0;
        loop {
            if cancel.is_cancelled() {
                return Err(self.stopped("broker.llm-json"));
            }
            attempt += 1;
            let body = llm::request_body(&provider, &req.question, attempt, &errors);
            let request = json!({"provider": provider.name(), "target": provider.target(), "attempt": attempt, "body": body});
            let answer = self
                .broker
                .call(&self.policy, Kind::Llm, &request, || {
                    match llm::send(&provider, &body, &cancel, Some(cap)) {
                        Ok(reply) => Ok((reply.to_value(), reply.tokens)),
                        Err(AskError::Cancelled) => Err(crate::error::Error::runtime(
                            self.stopped("broker.llm-json"),
                        )),
                        Err(AskError::TooLarge(m)) => Err(crate::error::Error::runtime(m)),
                        Err(e) => Err(crate::error::Error::runtime(format!("broker.llm-json {e}"))),
                    }
                })
                .map_err(|e| e.to_string())?;
            let reply = Reply::from_value(&answer);
            match llm::check(schema.as_ref(), &reply) {
                Ok(()) => {
                    let data = reply.data.clone().unwrap_or_else(|| {
                        reply.text.clone().map(Value::String).unwrap_or(Value::Null)
                    });
                    let text = crate::value::to_js_json(&data);
                    too_large("the model's answer", text.len(), cap)?;
                    return Ok(text);
                }
                Err(found) if attempt > req.retries => {
                    return Err(format!(
                        "broker.llm-json output failed schema validation: {}",
                        found.join("; ")
                    ))
                }
                Err(found) => errors = found,
            }
        }
    }
}

/// A parsed `llm-json` request.
struct LlmRequest {
    question: Question,
    retries: u32,
}

/// `{prompt, input?, schema?, model?, temperature?, max-tokens?, retries?}`.
fn parse_request(text: &str) -> Result<LlmRequest, String> {
    let v: Value = serde_json::from_str(text)
        .map_err(|e| format!("broker.llm-json request is not JSON: {e}"))?;
    let Value::Object(m) = v else {
        return Err("broker.llm-json request must be a JSON object".into());
    };
    let prompt = match m.get("prompt") {
        Some(Value::String(p)) if !p.trim().is_empty() => p.clone(),
        _ => return Err("broker.llm-json request needs \"prompt\" (non-empty text)".into()),
    };
    let field = |names: &[&str]| names.iter().find_map(|n| m.get(*n)).cloned();
    let schema = match m.get("schema") {
        None | Some(Value::Null) => None,
        Some(s @ Value::Object(_)) => Some(s.clone()),
        Some(_) => return Err("broker.llm-json \"schema\" must be a JSON object".into()),
    };
    let model = match field(&["model"]) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s),
        Some(_) => return Err("broker.llm-json \"model\" must be non-empty text".into()),
    };
    let number = |names: &[&str]| -> Result<Option<f64>, String> {
        match field(names) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => Ok(n.as_f64()),
            Some(_) => Err(format!("broker.llm-json \"{}\" must be a number", names[0])),
        }
    };
    let temperature = number(&["temperature"])?;
    let max_tokens = number(&["max-tokens", "maxTokens", "max_tokens"])?;
    let retries = number(&["retries"])?.map_or(1, |n| n.clamp(0.0, 5.0) as u32);
    let input = m.get("input").cloned().unwrap_or(Value::Null);
    Ok(LlmRequest {
        question: Question {
            prompt,
            artifacts: vec![input.clone()],
            artifact_hashes: vec![blake3::hash(crate::value::to_js_json(&input).as_bytes())
                .to_hex()
                .to_string()],
            input,
            schema: schema.clone(),
            model,
            temperature,
            max_tokens: max_tokens.map(|t| t.max(0.0) as u64),
            extra: Map::new(),
        },
        retries: if schema.is_some() { retries } else { 0 },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llm_requests_are_checked_before_anything_is_sent() {
        let r = parse_request(r#"{"prompt":"p","input":{"a":1},"schema":{"type":"object"},"max-tokens":5,"temperature":0}"#).unwrap();
        assert_eq!(r.question.max_tokens, Some(5));
        assert_eq!(r.retries, 1);
        for (bad, says) in [
            ("[]", "must be a JSON object"),
            ("{}", "needs \"prompt\""),
            (r#"{"prompt":"p","schema":3}"#, "\"schema\" must be"),
            (
                r#"{"prompt":"p","temperature":"hot"}"#,
                "\"temperature\" must be a number",
            ),
            ("nope", "not JSON"),
        ] {
            let e = parse_request(bad).err().unwrap();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
