//! Each provider's wire shapes: the request body of one attempt (with the
//! validation errors of the one before) and the reply as each provider
//! answers it (gateway `llm-task` results, adapter envelopes, OpenAI chat
//! completions plain or streamed).

use super::{AskError, Provider, Question, Reply};
use crate::value::to_js_json;
use serde_json::{json, Map, Value};

/// The request as sent for attempt `attempt` (1-based) after `errors`.
pub fn request_body(p: &Provider, q: &Question, attempt: u32, errors: &[String]) -> Value {
    let retry_note = if attempt > 1 && !errors.is_empty() {
        format!(
            "\n\nYour previous answer did not match the schema: {}. Answer again with JSON that matches it.",
            errors.join("; ")
        )
    } else {
        String::new()
    };
    match p {
        Provider::Openclaw(_) => {
            let mut args = Map::new();
            args.insert("prompt".into(), json!(format!("{}{retry_note}", q.prompt)));
            args.insert("input".into(), q.input.clone());
            if let Some(s) = &q.schema {
                args.insert("schema".into(), s.clone());
            }
            if let Some(m) = &q.model {
                args.insert("model".into(), json!(m));
            }
            if let Some(t) = q.temperature {
                args.insert("temperature".into(), json!(t));
            }
            if let Some(t) = q.max_tokens {
                args.insert("maxTokens".into(), json!(t));
            }
            json!({"tool": "llm-task", "action": "json", "args": args})
        }
        Provider::Adapter { .. } => {
            let mut m = Map::new();
            m.insert("prompt".into(), json!(q.prompt));
            if let Some(model) = &q.model {
                m.insert("model".into(), json!(model));
            }
            m.insert("artifacts".into(), json!(q.artifacts));
            m.insert("artifactHashes".into(), json!(q.artifact_hashes));
            for (k, v) in &q.extra {
                m.insert(k.clone(), v.clone());
            }
            if let Some(s) = &q.schema {
                m.insert("outputSchema".into(), s.clone());
            }
            if let Some(t) = q.max_tokens {
                m.insert("maxOutputTokens".into(), json!(t));
            }
            if let Some(t) = q.temperature {
                m.insert("temperature".into(), json!(t));
            }
            if attempt > 1 {
                let mut rc = Map::new();
                rc.insert("attempt".into(), json!(attempt));
                if !errors.is_empty() {
                    rc.insert("validationErrors".into(), json!(errors));
                }
                m.insert("retryContext".into(), Value::Object(rc));
            }
            Value::Object(m)
        }
        Provider::Openai { stream, .. } => {
            let system =
                "You answer with one JSON value and nothing else: no prose, no code fences.";
            let user = format!("{}{retry_note}\nInput:\n{}", q.prompt, to_js_json(&q.input));
            let mut m = Map::new();
            m.insert("model".into(), json!(q.model.clone().unwrap_or_default()));
            m.insert(
                "messages".into(),
                json!([{"role": "system", "content": system}, {"role": "user", "content": user}]),
            );
            m.insert(
                "response_format".into(),
                match &q.schema {
                    Some(s) => json!({"type": "json_schema", "json_schema": {"name": "output", "schema": s}}),
                    None => json!({"type": "json_object"}),
                },
            );
            if let Some(t) = q.temperature {
                m.insert("temperature".into(), json!(t));
            }
            if let Some(t) = q.max_tokens {
                m.insert("max_tokens".into(), json!(t));
            }
            if *stream {
                m.insert("stream".into(), json!(true));
                m.insert("stream_options".into(), json!({"include_usage": true}));
            }
            Value::Object(m)
        }
    }
}

/// `llm-task`'s real result `{content, details: {json, provider, model}}`;
/// the reference's `{output: {data, text}}` is accepted too.
pub(super) fn openclaw_reply(result: Value) -> Result<Reply, AskError> {
    let Value::Object(r) = result else {
        return Err(AskError::Envelope);
    };
    if let Some(details) = r.get("details").and_then(Value::as_object) {
        if let Some(j) = details.get("json") {
            let text = r
                .get("content")
                .and_then(Value::as_array)
                .and_then(|c| c.iter().find_map(|p| p.get("text").and_then(Value::as_str)))
                .map(str::to_string);
            return Ok(Reply {
                data: Some(j.clone()),
                text,
                model: details
                    .get("model")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                tokens: usage_tokens(details.get("usage")),
                result: Map::new(),
            });
        }
    }
    if r.get("output").is_some_and(Value::is_object) {
        return adapter_reply(json!({"ok": true, "result": r}));
    }
    Err(AskError::Envelope)
}

/// A generic adapter's `{ok, result: {output: {data, text}, model, usage, …}}`.
pub(super) fn adapter_reply(parsed: Value) -> Result<Reply, AskError> {
    let Value::Object(mut m) = parsed else {
        return Err(AskError::Envelope);
    };
    let Some(ok) = m.get("ok").and_then(Value::as_bool) else {
        return Err(AskError::Envelope);
    };
    if !ok {
        let msg = m
            .get("error")
            .and_then(|e| e.get("message"))
            .and_then(Value::as_str)
            .unwrap_or("llm adapter returned an error");
        return Err(AskError::Remote(msg.to_string()));
    }
    let Some(Value::Object(result)) = m.remove("result") else {
        return Err(AskError::Envelope);
    };
    let Some(output) = result.get("output").and_then(Value::as_object) else {
        return Err(AskError::Envelope);
    };
    Ok(Reply {
        data: output.get("data").filter(|d| !d.is_null()).cloned(),
        text: output
            .get("text")
            .and_then(Value::as_str)
            .map(str::to_string),
        model: result
            .get("model")
            .and_then(Value::as_str)
            .map(str::to_string),
        tokens: usage_tokens(result.get("usage")),
        result,
    })
}

/// Tokens in a usage object: `total_tokens` / `totalTokens`, else the sum of its parts.
fn usage_tokens(u: Option<&Value>) -> u64 {
    let Some(u) = u else { return 0 };
    let n = |k: &str| u.get(k).and_then(Value::as_u64);
    n("total_tokens")
        .or_else(|| n("totalTokens"))
        .unwrap_or_else(|| {
            n("prompt_tokens").or(n("inputTokens")).unwrap_or(0)
                + n("completion_tokens").or(n("outputTokens")).unwrap_or(0)
        })
}

/// A chat completion, plain or as server-sent events.
pub(super) fn openai_reply(text: &str, sse: bool) -> Result<Reply, AskError> {
    let (content, model, usage) = if sse || text.trim_start().starts_with("data:") {
        let mut content = String::new();
        let mut model = None;
        let mut usage = None;
        for line in text.lines() {
            let Some(data) = line.strip_prefix("data:").map(str::trim) else {
                continue;
            };
            if data == "[DONE]" {
                break;
            }
            let chunk: Value = serde_json::from_str(data).map_err(|_| AskError::Envelope)?;
            if let Some(e) = chunk.get("error") {
                let msg = e
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("stream error");
                return Err(AskError::Remote(msg.to_string()));
            }
            if let Some(piece) = chunk
                .pointer("/choices/0/delta/content")
                .and_then(Value::as_str)
            {
                content.push_str(piece);
            }
            if model.is_none() {
                model = chunk
                    .get("model")
                    .and_then(Value::as_str)
                    .map(str::to_string);
            }
            if chunk.get("usage").is_some_and(|u| !u.is_null()) {
                usage = chunk.get("usage").cloned();
            }
        }
        (content, model, usage)
    } else {
        let v: Value = serde_json::from_str(text)
            .map_err(|_| AskError::Request("Response was not JSON".into()))?;
        let content = v
            .pointer("/choices/0/message/content")
            .and_then(Value::as_str)
            .ok_or(AskError::Envelope)?
            .to_string();
        (
            content,
            v.get("model").and_then(Value::as_str).map(str::to_string),
            v.get("usage").cloned(),
        )
    };
    let tokens = usage_tokens(usage.as_ref());
    let mut result = Map::new();
    if let Some(u) = usage {
        result.insert("usage".into(), u);
    }
    Ok(Reply {
        data: parse_json_text(&content),
        text: Some(content),
        model,
        tokens,
        result,
    })
}

/// The JSON in a model's text: the whole text, or inside one ```json fence.
fn parse_json_text(text: &str) -> Option<Value> {
    let t = text.trim();
    let t = t
        .strip_prefix("```json")
        .or_else(|| t.strip_prefix("```"))
        .and_then(|r| r.strip_suffix("```"))
        .unwrap_or(t);
    serde_json::from_str(t.trim()).ok()
}

#[cfg(test)]
mod tests {
    use super::super::check;
    use super::*;
    use crate::broker::gateway::Endpoint;
    use crate::broker::http::Url;
    use crate::schema::Schema;

    #[test]
    fn replies_of_every_shape() {
        let r = openclaw_reply(json!({"content": [{"type": "text", "text": "{\"a\":1}"}], "details": {"json": {"a": 1}, "provider": "p", "model": "m"}})).unwrap();
        assert_eq!(
            (r.data, r.model.as_deref()),
            (Some(json!({"a": 1})), Some("m"))
        );
        let r = openclaw_reply(json!({"output": {"data": [1]}})).unwrap();
        assert_eq!(r.data, Some(json!([1])));
        assert!(matches!(
            openclaw_reply(json!({"content": []})),
            Err(AskError::Envelope)
        ));
        assert!(
            matches!(adapter_reply(json!({"ok": false, "error": {"message": "no"}})), Err(AskError::Remote(m)) if m == "no")
        );
        assert!(matches!(
            adapter_reply(json!({"result": {}})),
            Err(AskError::Envelope)
        ));
        let plain = r#"{"model":"m","choices":[{"message":{"content":"```json\n{\"b\":2}\n```"}}],"usage":{"total_tokens":7}}"#;
        let r = openai_reply(plain, false).unwrap();
        assert_eq!((r.data, r.tokens), (Some(json!({"b": 2})), 7));
        let sse = "data: {\"model\":\"m\",\"choices\":[{\"delta\":{\"content\":\"{\\\"c\\\":\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"3}\"}}],\"usage\":{\"prompt_tokens\":2,\"completion_tokens\":3}}\n\ndata: [DONE]\n\n";
        let r = openai_reply(sse, true).unwrap();
        assert_eq!(
            (r.data, r.tokens, r.model.as_deref()),
            (Some(json!({"c": 3})), 5, Some("m"))
        );
        let r = openai_reply(r#"{"choices":[{"message":{"content":"{nope"}}]}"#, false).unwrap();
        assert_eq!(r.data, None);
        let schema = Schema::compile(&json!({"type": "object", "required": ["a"]})).unwrap();
        assert_eq!(
            check(Some(&schema), &r).unwrap_err(),
            vec!["/ the answer is not valid JSON"]
        );
        let r2 = Reply {
            data: Some(json!({})),
            ..Reply::default()
        };
        assert!(
            check(Some(&schema), &r2).unwrap_err()[0].contains("must have required property 'a'")
        );
        assert_eq!(Reply::from_value(&r2.to_value()), r2);
    }

    #[test]
    fn retries_carry_the_validation_errors() {
        let adapter = Provider::Adapter {
            name: "http",
            url: Url::parse("http://h").unwrap(),
            token: None,
            ca_file: None,
        };
        let q = Question {
            prompt: "p".into(),
            ..Question::default()
        };
        let b = request_body(&adapter, &q, 2, &["/ bad".into()]);
        assert_eq!(
            b["retryContext"],
            json!({"attempt": 2, "validationErrors": ["/ bad"]})
        );
        assert!(request_body(&adapter, &q, 1, &[])
            .get("retryContext")
            .is_none());
        let gw = Provider::Openclaw(Endpoint {
            url: Url::parse("http://h").unwrap(),
            token: None,
            ca_file: None,
        });
        let b = request_body(&gw, &q, 2, &["/ bad".into()]);
        assert_eq!(
            (b["tool"].as_str(), b["action"].as_str()),
            (Some("llm-task"), Some("json"))
        );
        assert!(b["args"]["prompt"].as_str().unwrap().contains("/ bad"));
    }
}
