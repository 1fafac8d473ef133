//! Model providers and the schema-checked ask loop.
//!
//! Providers:
//! - `openclaw`: the gateway's `llm-task` tool as it really is —
//!   `{tool: "llm-task", action: "json", args: {prompt, input, schema}}`,
//!   answer in `result.details.json` (the reference sent `{artifacts,
//!   outputSchema}` and read `result.output`, which the real gateway never
//!   returns; that legacy shape is still accepted in answers);
//! - `http` / `pi`: a generic LLM adapter (`POST` the reference's payload,
//!   answer `{ok, result: {output: {data, text}}}`);
//! - `openai`: any OpenAI-compatible `POST <base>/chat/completions`, JSON
//!   output requested with `response_format`, plain or streamed (SSE).
//!
//! [`ask_json`] asks, checks the answer against the schema and asks again
//! with `retryContext.validationErrors` up to the retry budget.

mod wire;

pub use wire::request_body;
use wire::{adapter_reply, openai_reply, openclaw_reply};

use super::endpoints::{Endpoints, Sources};
use super::gateway::{self, Endpoint, GatewayError};
use super::http::{HttpError, Post, Url};
use crate::kernel::Cancel;
use crate::schema::Schema;
use crate::value::to_js_json;
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};

/// Where model calls go.
#[derive(Debug, Clone, PartialEq)]
pub enum Provider {
    /// The gateway's `llm-task` tool.
    Openclaw(Endpoint),
    /// A generic adapter (`http` or `pi`).
    Adapter {
        /// `http` or `pi`.
        name: &'static str,
        /// The adapter URL (`/invoke` when the path is `/`).
        url: Url,
        /// Bearer token.
        token: Option<String>,
        /// The operator's extra CA bundle for `https:`.
        ca_file: Option<PathBuf>,
    },
    /// An OpenAI-compatible chat-completions endpoint.
    Openai {
        /// `<base>/chat/completions`.
        url: Url,
        /// API key.
        key: Option<String>,
        /// Ask for a streamed answer.
        stream: bool,
        /// The operator's extra CA bundle for `https:`.
        ca_file: Option<PathBuf>,
    },
}

impl Provider {
    /// `openclaw`, `http`, `pi` or `openai`.
    pub fn name(&self) -> &'static str {
        match self {
            Provider::Openclaw(_) => "openclaw",
            Provider::Adapter { name, .. } => name,
            Provider::Openai { .. } => "openai",
        }
    }

    /// Where requests go, for request digests (never the token).
    pub fn target(&self) -> String {
        let url = match self {
            Provider::Openclaw(e) => &e.url,
            Provider::Adapter { url, .. } | Provider::Openai { url, .. } => url,
        };
        // Plain http keeps its historical form (recorded digests stay valid).
        if url.tls {
            format!("https://{}:{}{}", url.host, url.port, url.path)
        } else {
            format!("{}:{}{}", url.host, url.port, url.path)
        }
    }
}

/// The provider `name` as the run's [`Endpoints`] configure it (`prefix`
/// names the calling command in errors). `token` is `--token`, sent to the
/// configured URL; without it the configured key goes along, and only to the
/// origin it was configured for.
pub fn provider(
    name: &str,
    prefix: &str,
    token: Option<&str>,
    endpoints: &Endpoints,
) -> Result<Provider, String> {
    if !crate::kernel::policy::PROVIDERS.contains(&name) {
        return Err(format!("Unsupported llm provider: {name}"));
    }
    let Some(m) = endpoints.models.get(name) else {
        return Err(match (endpoints.sources, name) {
            (Sources::Tenant, _) => format!(
                "{prefix} provider={name} is not configured: the operator sets [model.{name}] url (and key_env) in this tenant's policy"
            ),
            (_, "openclaw") => {
                format!("{prefix} requires OPENCLAW_URL (or CLAWD_URL) for provider=openclaw")
            }
            (_, "pi") => format!("{prefix} requires LOBSTER_PI_LLM_ADAPTER_URL for provider=pi"),
            (_, "http") => format!("{prefix} requires LOBSTER_LLM_ADAPTER_URL for provider=http"),
            _ => format!("{prefix} requires LOBSTER_LLM_BASE_URL for provider=openai"),
        });
    };
    let ca_file = endpoints.ca_file.clone();
    if name == "openclaw" {
        return gateway::resolve_at(Some(&m.endpoint), None, token, ca_file.as_deref())
            .map(Provider::Openclaw)
            .map_err(|e| e.message(prefix));
    }
    let url = m.endpoint.url.clone().map_err(|raw| {
        let why = Url::parse(&raw)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        format!("{prefix} {why}: {raw}")
    })?;
    let secret = match token {
        Some(t) => Some(t.trim().to_string()).filter(|t| !t.is_empty()),
        None => m.endpoint.secret_for(&url).map(str::to_string),
    };
    Ok(match name {
        "openai" => Provider::Openai {
            url,
            key: secret,
            stream: m.stream,
            ca_file,
        },
        other => Provider::Adapter {
            name: if other == "pi" { "pi" } else { "http" },
            url,
            token: secret,
            ca_file,
        },
    })
}

/// One question for a model.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Question {
    /// Instructions.
    pub prompt: String,
    /// The input (one artifact as itself, several as an array).
    pub input: Value,
    /// Artifacts as sent to generic adapters.
    pub artifacts: Vec<Value>,
    /// Their hashes (generic adapters).
    pub artifact_hashes: Vec<String>,
    /// JSON Schema the answer must satisfy.
    pub schema: Option<Value>,
    /// Model name.
    pub model: Option<String>,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Maximum output tokens.
    pub max_tokens: Option<u64>,
    /// Extra fields for generic adapters (`metadata`, `schemaVersion`).
    pub extra: Map<String, Value>,
}

/// One answer.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Reply {
    /// The parsed JSON answer (`None` when the model's text is not JSON).
    pub data: Option<Value>,
    /// The answer's text.
    pub text: Option<String>,
    /// The model that answered, if reported.
    pub model: Option<String>,
    /// Tokens used, if reported.
    pub tokens: u64,
    /// The adapter's `result` object (generic adapters), for item fields.
    pub result: Map<String, Value>,
}

impl Reply {
    /// As recorded in the broker's ledger.
    pub fn to_value(&self) -> Value {
        json!({"data": self.data, "text": self.text, "model": self.model, "tokens": self.tokens, "result": self.result})
    }

    /// Back from the ledger.
    pub fn from_value(v: &Value) -> Reply {
        Reply {
            data: v.get("data").filter(|d| !d.is_null()).cloned(),
            text: v.get("text").and_then(Value::as_str).map(str::to_string),
            model: v.get("model").and_then(Value::as_str).map(str::to_string),
            tokens: v.get("tokens").and_then(Value::as_u64).unwrap_or(0),
            result: v
                .get("result")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
        }
    }
}

/// Why one ask failed (text after `<command> `).
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    /// Transport or remote failure: `request failed: …`.
    #[error("request failed: {0}")]
    Request(String),
    /// The answer does not have the provider's shape.
    #[error("received invalid response envelope")]
    Envelope,
    /// `{ok: false}` from an adapter.
    #[error("remote error: {0}")]
    Remote(String),
    /// The body is larger than the cap.
    #[error("{0}")]
    TooLarge(String),
    /// The run was cancelled.
    #[error("cancelled")]
    Cancelled,
}

fn http_err(e: HttpError) -> AskError {
    match e {
        HttpError::Cancelled => AskError::Cancelled,
        HttpError::TooLarge(_) => AskError::TooLarge(e.to_string()),
        other => AskError::Request(other.to_string()),
    }
}

/// Send `body` to `p` once and read the reply.
pub fn send(
    p: &Provider,
    body: &Value,
    cancel: &Cancel,
    cap: Option<usize>,
) -> Result<Reply, AskError> {
    match p {
        Provider::Openclaw(endpoint) => {
            let parsed = gateway::post_json(endpoint, body, cancel, cap).map_err(|e| match e {
                GatewayError::Cancelled => AskError::Cancelled,
                GatewayError::TooLarge(m) => AskError::TooLarge(m),
                GatewayError::Status { status, text } => {
                    AskError::Request(format!("{status}: {text}"))
                }
                GatewayError::NotJson => AskError::Request("Response was not JSON".into()),
                other => AskError::Request(other.to_string()),
            })?;
            let result = gateway::unwrap_ok(parsed).map_err(|e| match e {
                GatewayError::Tool(m) => AskError::Request(format!("openclaw adapter error: {m}")),
                other => AskError::Request(other.to_string()),
            })?;
            openclaw_reply(result)
        }
        Provider::Adapter {
            url,
            token,
            ca_file,
            ..
        } => {
            let parsed = post(url, token.as_deref(), body, cancel, cap, ca_file.as_deref())?;
            adapter_reply(parsed)
        }
        Provider::Openai {
            url, key, ca_file, ..
        } => {
            let bytes = to_js_json(body).into_bytes();
            let res = Post {
                url,
                bearer: key.as_deref(),
                body: &bytes,
                accept: None,
                ca_file: ca_file.as_deref(),
            }
            .send(cancel, cap)
            .map_err(http_err)?;
            let text = res.text();
            if !res.ok() {
                return Err(AskError::Request(format!(
                    "{} {}: {}",
                    res.status,
                    res.reason,
                    text.chars().take(400).collect::<String>()
                )));
            }
            let sse = res
                .content_type
                .as_deref()
                .is_some_and(|c| c.starts_with("text/event-stream"));
            openai_reply(&text, sse)
        }
    }
}

fn post(
    url: &Url,
    token: Option<&str>,
    body: &Value,
    cancel: &Cancel,
    cap: Option<usize>,
    ca_file: Option<&Path>,
) -> Result<Value, AskError> {
    let bytes = to_js_json(body).into_bytes();
    let res = Post {
        url,
        bearer: token,
        body: &bytes,
        accept: None,
        ca_file,
    }
    .send(cancel, cap)
    .map_err(http_err)?;
    let text = res.text();
    if !res.ok() {
        return Err(AskError::Request(format!(
            "{} {}: {}",
            res.status,
            res.reason,
            text.chars().take(400).collect::<String>()
        )));
    }
    if text.is_empty() {
        return Ok(Value::Null);
    }
    serde_json::from_str(&text).map_err(|_| AskError::Request("Response was not JSON".into()))
}

/// What checking one reply found: `Ok` or the validation errors to send back.
pub fn check(schema: Option<&Schema>, reply: &Reply) -> Result<(), Vec<String>> {
    let Some(schema) = schema else { return Ok(()) };
    match &reply.data {
        None => Err(vec!["/ the answer is not valid JSON".to_string()]),
        Some(data) => {
            let v = schema.violations(data);
            if v.is_empty() {
                Ok(())
            } else {
                Err(v
                    .into_iter()
                    .map(|v| format!("{} {}", v.path, v.message))
                    .collect())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn providers_come_from_the_endpoints_with_the_reference_errors() {
        let at = |pairs: &[(&str, &str)]| -> Endpoints {
            let env: BTreeMap<String, String> = pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            Endpoints::resolve(&crate::policy::Policy::default(), &env, Sources::Process)
        };
        let e = provider("openclaw", "llm_task.invoke", None, &at(&[])).unwrap_err();
        assert_eq!(
            e,
            "llm_task.invoke requires OPENCLAW_URL (or CLAWD_URL) for provider=openclaw"
        );
        assert_eq!(
            provider("pi", "llm.invoke", None, &at(&[])).unwrap_err(),
            "llm.invoke requires LOBSTER_PI_LLM_ADAPTER_URL for provider=pi"
        );
        assert_eq!(
            provider("http", "llm.invoke", None, &at(&[])).unwrap_err(),
            "llm.invoke requires LOBSTER_LLM_ADAPTER_URL for provider=http"
        );
        assert_eq!(
            provider("openai", "llm.invoke", None, &at(&[])).unwrap_err(),
            "llm.invoke requires LOBSTER_LLM_BASE_URL for provider=openai"
        );
        assert_eq!(
            provider("x", "llm.invoke", None, &at(&[])).unwrap_err(),
            "Unsupported llm provider: x"
        );
        let p = provider(
            "http",
            "llm.invoke",
            None,
            &at(&[("LOBSTER_LLM_ADAPTER_URL", "http://127.0.0.1:5")]),
        )
        .unwrap();
        assert_eq!(p.target(), "127.0.0.1:5/invoke");
        let p = provider(
            "openai",
            "llm.invoke",
            None,
            &at(&[("LOBSTER_LLM_BASE_URL", "http://127.0.0.1:5/v1/")]),
        )
        .unwrap();
        assert_eq!(p.target(), "127.0.0.1:5/v1/chat/completions");
        let p = provider(
            "openai",
            "llm.invoke",
            None,
            &at(&[
                ("LOBSTER_LLM_BASE_URL", "https://api.example.com/v1"),
                ("LOBSTER_LLM_API_KEY", "k"),
            ]),
        )
        .unwrap();
        assert_eq!(
            p.target(),
            "https://api.example.com:443/v1/chat/completions"
        );
        assert!(matches!(p, Provider::Openai { key: Some(ref k), .. } if k == "k"));
        assert_eq!(
            provider(
                "openai",
                "llm.invoke",
                None,
                &at(&[("LOBSTER_LLM_BASE_URL", "ftp://x")])
            )
            .unwrap_err(),
            "llm.invoke unsupported URL scheme: ftp://x"
        );
        // The gateway's loopback rule holds for model calls too.
        let remote = at(&[
            ("OPENCLAW_URL", "http://gw.example"),
            ("OPENCLAW_TOKEN", "t"),
        ]);
        assert!(provider("openclaw", "llm.invoke", None, &remote)
            .unwrap_err()
            .contains("refuses to send OPENCLAW_TOKEN"));
        // A tenant's runs take nothing from the environment.
        let env: BTreeMap<String, String> = [(
            "LOBSTER_LLM_ADAPTER_URL".to_string(),
            "http://127.0.0.1:5".to_string(),
        )]
        .into();
        let tenant = Endpoints::resolve(&crate::policy::Policy::default(), &env, Sources::Tenant);
        assert!(provider("http", "llm.invoke", None, &tenant)
            .unwrap_err()
            .contains("[model.http] url"));
    }
}
