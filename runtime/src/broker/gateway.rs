//! The OpenClaw gateway's `POST /tools/invoke` contract: where to send, which
//! token may go there, the request body, and the response mapping with the
//! reference's error strings (prefixed with the calling command's name).

use super::endpoints::{Configured, Endpoints};
use super::http::{HttpError, Post, Url};
use crate::kernel::Cancel;
use crate::value::to_js_json;
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};

/// Where a gateway is and what to send it.
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    /// `<base>/tools/invoke`.
    pub url: Url,
    /// The bearer token, if any.
    pub token: Option<String>,
    /// The operator's extra CA bundle for `https:` (policy `[gateway] ca_file`).
    pub ca_file: Option<PathBuf>,
}

/// Why a gateway call failed; `Display` is the reference's text after the
/// command name (`openclaw.invoke failed (404): …`).
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// No URL from `--url`, `OPENCLAW_URL` or `CLAWD_URL`.
    #[error("requires --url or OPENCLAW_URL")]
    NoUrl,
    /// The URL is not http(s).
    #[error("requires an http(s) --url")]
    NotHttp,
    /// A token from the environment would leave the machine.
    #[error("refuses to send OPENCLAW_TOKEN/CLAWD_TOKEN to non-local --url; pass --token explicitly for remote endpoints")]
    TokenToRemote,
    /// A non-2xx status: the first 400 characters of the body.
    #[error("failed ({status}): {text}")]
    Status {
        /// HTTP status.
        status: u16,
        /// First 400 characters of the body.
        text: String,
    },
    /// A 2xx body that is not JSON.
    #[error("expected JSON response")]
    NotJson,
    /// `{ok: false, error: {message}}`.
    #[error("tool error: {0}")]
    Tool(String),
    /// Transport failure (connect, read, size cap).
    #[error("request failed: {0}")]
    Transport(String),
    /// The body is larger than the cap.
    #[error("{0}")]
    TooLarge(String),
    /// The run was cancelled while the request was open.
    #[error("cancelled")]
    Cancelled,
}

impl GatewayError {
    /// The message as the command reports it (`<cmd> <message>`).
    pub fn message(&self, command: &str) -> String {
        match self {
            GatewayError::TooLarge(m) => m.clone(),
            other => format!("{command} {other}"),
        }
    }
}

/// Where a call goes and which secret it carries, as the reference resolves
/// it but over the run's [`Endpoints`] (fixed when the run started, never a
/// step's environment): the URL is `url_flag`, else the configured gateway
/// (`[gateway] url`, else `OPENCLAW_URL`/`CLAWD_URL` at start); the token is
/// `token_flag`, else the configured one — and that only when the URL's
/// origin is the one it was configured for ([`Configured::secret_for`]).
/// A token from the reference's variables goes only to a loopback host.
pub fn resolve(
    url_flag: Option<&str>,
    token_flag: Option<&str>,
    endpoints: &Endpoints,
) -> Result<Endpoint, GatewayError> {
    resolve_at(
        endpoints.gateway.as_ref(),
        url_flag,
        token_flag,
        endpoints.ca_file.as_deref(),
    )
}

/// [`resolve`] against `configured` (the gateway, or a provider's endpoint
/// that is a gateway: `[model.openclaw]`).
pub fn resolve_at(
    configured: Option<&Configured>,
    url_flag: Option<&str>,
    token_flag: Option<&str>,
    ca_file: Option<&Path>,
) -> Result<Endpoint, GatewayError> {
    let base = match (
        url_flag.map(str::trim).filter(|u| !u.is_empty()),
        configured,
    ) {
        (Some(u), _) => Url::parse(u).map_err(|_| GatewayError::NotHttp)?,
        (None, Some(c)) => c.url.clone().map_err(|_| GatewayError::NotHttp)?,
        (None, None) => return Err(GatewayError::NoUrl),
    };
    let url = base.with_path("/tools/invoke");
    let token = match token_flag {
        Some(t) => Some(t.trim().to_string()).filter(|t| !t.is_empty()),
        None => match configured {
            Some(c) => {
                let t = c.secret_for(&url);
                if t.is_some() && c.from_env && !url.is_loopback() {
                    return Err(GatewayError::TokenToRemote);
                }
                t.map(str::to_string)
            }
            None => None,
        },
    };
    Ok(Endpoint {
        url,
        token,
        ca_file: ca_file.map(Path::to_path_buf),
    })
}

/// One tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// Tool name.
    pub tool: String,
    /// Action (merged into `args.action` by the gateway).
    pub action: Option<String>,
    /// Tool arguments.
    pub args: Value,
    /// `sessionKey`, sent when set.
    pub session_key: Option<String>,
    /// `dryRun`, sent when set.
    pub dry_run: Option<bool>,
}

impl ToolCall {
    /// The request body, in the reference's key order.
    pub fn body(&self) -> Value {
        let mut m = Map::new();
        m.insert("tool".into(), json!(self.tool));
        if let Some(a) = &self.action {
            m.insert("action".into(), json!(a));
        }
        m.insert("args".into(), self.args.clone());
        if let Some(s) = &self.session_key {
            m.insert("sessionKey".into(), json!(s));
        }
        if let Some(d) = self.dry_run {
            m.insert("dryRun".into(), json!(d));
        }
        Value::Object(m)
    }
}

/// POST `call` and map the answer: `{ok: true, result}` → `result` (an
/// array is spread), other JSON → itself; errors as the reference words them.
pub fn invoke(
    endpoint: &Endpoint,
    call: &ToolCall,
    cancel: &Cancel,
    max_body: Option<usize>,
) -> Result<Vec<Value>, GatewayError> {
    let parsed = post_json(endpoint, &call.body(), cancel, max_body)?;
    Ok(spread(unwrap_ok(parsed)?))
}

/// POST `body` and parse a 2xx answer as JSON (empty body: `null`).
pub fn post_json(
    endpoint: &Endpoint,
    body: &Value,
    cancel: &Cancel,
    max_body: Option<usize>,
) -> Result<Value, GatewayError> {
    let bytes = to_js_json(body).into_bytes();
    let res = Post {
        url: &endpoint.url,
        bearer: endpoint.token.as_deref(),
        body: &bytes,
        accept: None,
        ca_file: endpoint.ca_file.as_deref(),
    }
    .send(cancel, max_body)
    .map_err(|e| match e {
        HttpError::Cancelled => GatewayError::Cancelled,
        HttpError::TooLarge(_) => GatewayError::TooLarge(e.to_string()),
        other => GatewayError::Transport(other.to_string()),
    })?;
    let text = res.text();
    if !res.ok() {
        return Err(GatewayError::Status {
            status: res.status,
            text: text.chars().take(400).collect(),
        });
    }
    if text.is_empty() {
        return Ok(Value::Null);
    }
    serde_json::from_str(&text).map_err(|_| GatewayError::NotJson)
}

/// `{ok, result, error}` → `result`, or the tool error; anything else as is.
pub fn unwrap_ok(parsed: Value) -> Result<Value, GatewayError> {
    match parsed {
        Value::Object(mut m) if m.contains_key("ok") => {
            if m.get("ok") != Some(&Value::Bool(true)) {
                let msg = m
                    .get("error")
                    .and_then(|e| e.get("message"))
                    .filter(|v| !v.is_null())
                    .map(|v| match v {
                        Value::String(s) => s.clone(),
                        other => to_js_json(other),
                    })
                    .unwrap_or_else(|| "Unknown error".into());
                return Err(GatewayError::Tool(msg));
            }
            Ok(m.remove("result").unwrap_or(Value::Null))
        }
        other => Ok(other),
    }
}

fn spread(v: Value) -> Vec<Value> {
    match v {
        Value::Array(items) => items,
        other => vec![other],
    }
}

#[cfg(test)]
mod tests {
    use super::super::endpoints::Sources;
    use super::*;
    use std::collections::BTreeMap;

    fn endpoints(pairs: &[(&str, &str)], policy: &str) -> Endpoints {
        let env: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let policy = crate::policy::Policy::parse(policy, Path::new("/p/p.toml")).unwrap();
        Endpoints::resolve(&policy, &env, Sources::Process)
    }

    #[test]
    fn url_and_token_sources_in_order() {
        assert!(matches!(
            resolve(None, None, &endpoints(&[], "")),
            Err(GatewayError::NoUrl)
        ));
        let e = resolve(
            None,
            None,
            &endpoints(
                &[("CLAWD_URL", "http://localhost:1"), ("CLAWD_TOKEN", "c")],
                "",
            ),
        )
        .unwrap();
        assert_eq!(e.url.path, "/tools/invoke");
        assert_eq!(e.token.as_deref(), Some("c"));
        let env = endpoints(
            &[
                ("OPENCLAW_URL", "http://127.0.0.1:2"),
                ("OPENCLAW_TOKEN", " t "),
                ("CLAWD_TOKEN", "c"),
            ],
            "",
        );
        let e = resolve(Some("http://127.0.0.1:2/base"), None, &env).unwrap();
        assert_eq!((e.url.port, e.token.as_deref()), (2, Some("t")));
        // Another origin named by --url gets no configured token.
        for other in [
            "http://127.0.0.1:3",
            "http://localhost:2",
            "https://127.0.0.1:2",
        ] {
            let e = resolve(Some(other), None, &env).unwrap();
            assert_eq!(e.token, None, "{other}");
        }
        // An environment token never goes to a remote host; an explicit one may.
        let remote = endpoints(
            &[
                ("OPENCLAW_URL", "http://gateway.example:80"),
                ("OPENCLAW_TOKEN", "t"),
            ],
            "",
        );
        let err = resolve(None, None, &remote).unwrap_err();
        assert_eq!(
            err.message("openclaw.invoke"),
            "openclaw.invoke refuses to send OPENCLAW_TOKEN/CLAWD_TOKEN to non-local --url; pass --token explicitly for remote endpoints"
        );
        assert_eq!(
            resolve(None, Some("x"), &remote).unwrap().token.as_deref(),
            Some("x")
        );
        assert_eq!(
            resolve(Some("ftp://h"), None, &endpoints(&[], ""))
                .unwrap_err()
                .message("clawd.invoke"),
            "clawd.invoke requires an http(s) --url"
        );
        // A token with no configured URL is bound to nothing.
        let loose = endpoints(&[("OPENCLAW_TOKEN", "t")], "");
        assert_eq!(
            resolve(Some("http://127.0.0.1:5"), None, &loose)
                .unwrap()
                .token,
            None
        );
        // The policy's gateway: its own variable, its own CA, any host.
        let p = endpoints(
            &[
                ("GW", "g"),
                ("OPENCLAW_URL", "http://127.0.0.1:9"),
                ("OPENCLAW_TOKEN", "t"),
            ],
            "[gateway]\nurl = \"https://gw.example\"\ntoken_env = \"GW\"\nca_file = \"ca.pem\"\n",
        );
        let e = resolve(None, None, &p).unwrap();
        assert!(e.url.tls && e.url.port == 443);
        assert_eq!(e.token.as_deref(), Some("g"));
        assert_eq!(e.ca_file.as_deref(), Some(Path::new("/p/ca.pem")));
        assert_eq!(
            resolve(Some("http://127.0.0.1:9"), None, &p).unwrap().token,
            None
        );
        // An empty explicit token sends none.
        assert_eq!(
            resolve(Some("http://h"), Some(""), &remote).unwrap().token,
            None
        );
    }

    #[test]
    fn body_keeps_the_reference_key_order_and_omits_unset_keys() {
        let mut call = ToolCall {
            tool: "message".into(),
            action: Some("send".into()),
            args: json!({"to": "x"}),
            session_key: None,
            dry_run: None,
        };
        assert_eq!(
            to_js_json(&call.body()),
            r#"{"tool":"message","action":"send","args":{"to":"x"}}"#
        );
        call.session_key = Some("s".into());
        call.dry_run = Some(false);
        assert_eq!(
            to_js_json(&call.body()),
            r#"{"tool":"message","action":"send","args":{"to":"x"},"sessionKey":"s","dryRun":false}"#
        );
    }

    #[test]
    fn ok_envelopes_unwrap_and_errors_carry_the_message() {
        assert_eq!(
            unwrap_ok(json!({"ok": true, "result": [1]})).unwrap(),
            json!([1])
        );
        assert_eq!(unwrap_ok(json!({"ok": true})).unwrap(), Value::Null);
        assert_eq!(unwrap_ok(json!([1, 2])).unwrap(), json!([1, 2]));
        let e = unwrap_ok(json!({"ok": false, "error": {"message": "boom"}})).unwrap_err();
        assert_eq!(
            e.message("openclaw.invoke"),
            "openclaw.invoke tool error: boom"
        );
        let e = unwrap_ok(json!({"ok": "yes"})).unwrap_err();
        assert_eq!(
            e.message("openclaw.invoke"),
            "openclaw.invoke tool error: Unknown error"
        );
        assert_eq!(spread(json!([1, 2])), vec![json!(1), json!(2)]);
        assert_eq!(spread(json!({"a": 1})), vec![json!({"a": 1})]);
    }
}
