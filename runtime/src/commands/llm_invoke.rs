//! `llm.invoke` and `llm_task.invoke`: ask a model for (schema-checked) JSON
//! through the run's broker, with the reference's flags, payload, item shape,
//! run-state reuse and file cache.
//!
//! Providers and their wire shapes live in [`crate::broker::llm`]; this file
//! resolves flags and environment, keeps the cache (`LOBSTER_CACHE_DIR`,
//! default `./.lobster-cache`, `--refresh`, `--disable-cache`) and the
//! run-state record (`--state-key` / `LOBSTER_RUN_STATE_KEY`), and runs the
//! validation retry loop (`--max-validation-retries`, default 1).

use super::{collect, stream_of, Command, Example, FlagSpec, ItemStream, Output, Signature};
use crate::broker::endpoints::Endpoints;
use crate::broker::llm::{self, AskError, Provider, Question, Reply};
use crate::broker::{body_cap, BrokerCalls, Kind};
use crate::dsl::{Args, FlagValue};
use crate::error::{Error, Result};
use crate::kernel::Context;
use crate::policy::broker::{judge_endpoint_flags, Caller};
use crate::schema::Schema;
use crate::state::Writer;
use crate::value::{to_js_json, Item};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// `llm.invoke` / `llm_task.invoke`.
pub struct LlmInvoke {
    name: &'static str,
    default_provider: Option<&'static str>,
    help: &'static str,
    examples: &'static [Example],
}

/// The schema of the examples: one label per ticket.
macro_rules! label_example {
    ($cmd:literal, $description:literal) => {
        Example {
            description: $description,
            pipeline: concat!(
                $cmd,
                r#" --prompt 'Label this ticket' --output-schema '{"type":"object","properties":{"label":{"type":"string","enum":["bug","question"]}},"required":["label"]}' | map --unwrap output | map --unwrap data"#
            ),
            input: r#"["The app crashes on start"]"#,
            output: r#"[{"label": "question"}]"#,
        }
    };
}

/// `llm.invoke`: any provider.
pub const LLM: LlmInvoke = LlmInvoke {
    name: "llm.invoke",
    default_provider: None,
    examples: &[label_example!(
        "llm.invoke",
        "schema-checked JSON from the model: the answer is output.data (shown: the loopback stub model's answer, `lobster-stubs model` with LOBSTER_LLM_PROVIDER=http; a real model decides the label)"
    )],
    help: "llm.invoke — call a configured LLM adapter with caching and schema validation\n\nUsage:\n  llm.invoke --prompt 'Write summary'\n  llm.invoke --provider openclaw --model claude-3-sonnet --prompt 'Write summary'\n  cat artifacts.json | llm.invoke --provider pi --prompt 'Score each item'\n  ... | llm.invoke --prompt 'Plan next steps' --output-schema '{\"type\":\"object\"}'\n  ... | llm.invoke --provider openai --model gpt-4o-mini --prompt 'Classify' --output-schema '{...}'\n\nFeatures:\n  - Typed payload validation before invoking the adapter.\n  - Run-state + file cache so resumes do not re-call the LLM.\n  - Optional JSON-schema enforcement, retried at most --max-validation-retries times\n    after the first call.\n\nConfig:\n  - Provider resolution order: --provider, LOBSTER_LLM_PROVIDER, then environment auto-detect.\n  - Built-in providers: openclaw, pi, http, openai.\n  - OpenClaw provider uses OPENCLAW_URL (CLAWD_URL also supported) and OPENCLAW_TOKEN;\n    it calls the gateway's llm-task tool with {prompt, input, schema}.\n  - Pi provider uses LOBSTER_PI_LLM_ADAPTER_URL and is intended to be supplied by a Pi extension.\n  - Generic http provider uses LOBSTER_LLM_ADAPTER_URL and optional LOBSTER_LLM_ADAPTER_TOKEN.\n  - OpenAI-compatible provider uses LOBSTER_LLM_BASE_URL (e.g. http://127.0.0.1:8080/v1),\n    LOBSTER_LLM_API_KEY and LOBSTER_LLM_MODEL; LOBSTER_LLM_STREAM=1 asks for a streamed answer.\n",
};

/// `llm_task.invoke`: the same with the OpenClaw provider by default.
pub const LLM_TASK: LlmInvoke = LlmInvoke {
    name: "llm_task.invoke",
    default_provider: Some("openclaw"),
    examples: &[label_example!(
        "llm_task.invoke",
        "the same through the OpenClaw gateway's llm-task tool (OPENCLAW_URL; shown: `lobster-stubs gateway`'s answer)"
    )],
    help: "llm_task.invoke — backward-compatible alias for llm.invoke using OpenClaw\n\nUsage:\n  llm_task.invoke --prompt 'Write summary'\n  llm_task.invoke --model claude-3-sonnet --prompt 'Write summary'\n  cat artifacts.json | llm_task.invoke --prompt 'Score each item'\n\nFeatures:\n  - Typed payload validation before invoking the adapter.\n  - Run-state + file cache so resumes do not re-call the LLM.\n  - Optional JSON-schema enforcement, retried at most --max-validation-retries times\n    after the first call.\n\nConfig:\n  - Requires OPENCLAW_URL (or CLAWD_URL) and optionally OPENCLAW_TOKEN.\n  - Use llm.invoke for new workflows and non-OpenClaw adapters.\n",
};

const FLAGS: &[FlagSpec] = &[
    FlagSpec {
        name: "provider",
        value: Some("name"),
        kind: super::FlagType::Text,
        description:
            "LLM adapter provider (openclaw, pi, http, openai). Optional if auto-detected.",
    },
    FlagSpec {
        name: "token",
        value: Some("token"),
        kind: super::FlagType::Text,
        description: "Optional bearer token for providers that support it.",
    },
    FlagSpec {
        name: "prompt",
        value: Some("text"),
        kind: super::FlagType::Text,
        description: "Primary prompt / instructions",
    },
    FlagSpec {
        name: "model",
        value: Some("name"),
        kind: super::FlagType::Text,
        description: "Model identifier. Optional; adapter defaults may apply if omitted.",
    },
    FlagSpec {
        name: "artifacts-json",
        value: Some("json"),
        kind: super::FlagType::Json,
        description: "JSON array of artifacts to send",
    },
    FlagSpec {
        name: "metadata-json",
        value: Some("json"),
        kind: super::FlagType::Json,
        description: "JSON object of metadata to include",
    },
    FlagSpec {
        name: "output-schema",
        value: Some("json"),
        kind: super::FlagType::Json,
        description: "JSON schema LLM output must satisfy",
    },
    FlagSpec {
        name: "schema-version",
        value: Some("v"),
        kind: super::FlagType::Text,
        description: "Logical schema version for caching",
    },
    FlagSpec {
        name: "max-validation-retries",
        value: Some("n"),
        kind: super::FlagType::Integer,
        description:
            "Extra model calls allowed after the first when schema validation fails (default 1)",
    },
    FlagSpec {
        name: "temperature",
        value: Some("n"),
        kind: super::FlagType::Number,
        description: "Sampling temperature",
    },
    FlagSpec {
        name: "max-output-tokens",
        value: Some("n"),
        kind: super::FlagType::Integer,
        description: "Max completion tokens",
    },
    FlagSpec {
        name: "state-key",
        value: Some("key"),
        kind: super::FlagType::Text,
        description: "Run-state key override (else LOBSTER_RUN_STATE_KEY)",
    },
    FlagSpec {
        name: "refresh",
        value: None,
        kind: super::FlagType::Switch,
        description: "Bypass run-state + cache",
    },
    FlagSpec {
        name: "disable-cache",
        value: None,
        kind: super::FlagType::Switch,
        description: "Skip persistent cache",
    },
];

/// Flags and environment, resolved.
struct Plan {
    provider: String,
    prompt: String,
    model: Option<String>,
    schema_version: String,
    max_tokens: Option<f64>,
    temperature: Option<f64>,
    artifacts: Vec<Value>,
    metadata: Option<Value>,
    schema: Option<Value>,
    retries: u32,
    disable_cache: bool,
    refresh: bool,
    state_key: Option<String>,
}

fn env_first(env: &BTreeMap<String, String>, keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|k| {
        env.get(*k)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    })
}

fn flag_bool(v: Option<String>) -> bool {
    match v.as_deref().map(|s| s.trim().to_lowercase()) {
        None => false,
        Some(s) => !(s.is_empty() || s == "false" || s == "0" || s == "no"),
    }
}

fn number(v: Option<&FlagValue>) -> Option<f64> {
    v.and_then(|f| f.as_str().trim().parse::<f64>().ok())
        .filter(|n| n.is_finite())
}

impl LlmInvoke {
    fn err(&self, msg: impl std::fmt::Display) -> Error {
        Error::runtime(format!("{} {msg}", self.name))
    }

    fn plan(
        &self,
        args: &Args,
        env: &BTreeMap<String, String>,
        endpoints: &Endpoints,
    ) -> Result<Plan> {
        let explicit = args
            .str("provider")
            .map(str::to_string)
            .or_else(|| env.get("LOBSTER_LLM_PROVIDER").cloned())
            .unwrap_or_default()
            .trim()
            .to_lowercase();
        let provider = if !explicit.is_empty() {
            if !["openclaw", "pi", "http", "openai"].contains(&explicit.as_str()) {
                return Err(Error::runtime(format!(
                    "Unsupported llm provider: {explicit}"
                )));
            }
            explicit
        } else if let Some(d) = self.default_provider {
            d.to_string()
        } else if let Some(p) = endpoints.detect_provider() {
            p
        } else {
            return Err(Error::runtime(
                "llm.invoke could not resolve a provider. Set --provider or LOBSTER_LLM_PROVIDER",
            ));
        };
        let prompt = match args.flag("prompt") {
            Some(p) if !p.as_str().is_empty() => p.as_str().to_string(),
            _ => args.positional.join(" "),
        };
        if prompt.is_empty() {
            return Err(self.err("requires --prompt or positional text"));
        }
        let model = args
            .str("model")
            .map(|m| m.trim().to_string())
            .filter(|m| !m.is_empty())
            .or_else(|| env_first(env, &["LOBSTER_LLM_MODEL", "LLM_TASK_MODEL"]))
            .or_else(|| {
                endpoints
                    .models
                    .get(provider.as_str())
                    .and_then(|m| m.model.clone())
            });
        let schema_version = args
            .str("schema-version")
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .or_else(|| {
                env_first(
                    env,
                    &["LOBSTER_LLM_SCHEMA_VERSION", "LLM_TASK_SCHEMA_VERSION"],
                )
            })
            .unwrap_or_else(|| "v1".into());
        let parse = |flag: &str, want_array: bool| -> Result<Option<Value>> {
            let Some(raw) = args.str(flag).filter(|s| !s.is_empty()) else {
                return Ok(None);
            };
            let kind = if want_array {
                "a JSON array"
            } else {
                "a JSON object"
            };
            match serde_json::from_str::<Value>(raw) {
                Ok(v) if (want_array && v.is_array()) || (!want_array && v.is_object()) => {
                    Ok(Some(v))
                }
                _ => Err(self.err(format!("--{flag} must be {kind}"))),
            }
        };
        let artifacts = match parse("artifacts-json", true)? {
            Some(Value::Array(a)) => a,
            _ => Vec::new(),
        };
        let metadata = parse("metadata-json", false)?;
        let schema = parse("output-schema", false)?;
        if let Some(s) = &schema {
            Schema::compile(s)
                .map_err(|e| self.err(format!("--output-schema is not a valid schema: {e}")))?;
        }
        let retries_raw = args
            .str("max-validation-retries")
            .map(str::to_string)
            .or_else(|| {
                env_first(
                    env,
                    &[
                        "LOBSTER_LLM_VALIDATION_RETRIES",
                        "LLM_TASK_VALIDATION_RETRIES",
                    ],
                )
            });
        let retries = match (
            &schema,
            retries_raw.and_then(|r| r.trim().parse::<f64>().ok()),
        ) {
            (None, _) => 0,
            (Some(_), Some(n)) if n.is_finite() => n.clamp(0.0, 100.0) as u32,
            (Some(_), _) => 1,
        };
        let state_key = args
            .str("state-key")
            .map(str::to_string)
            .or_else(|| env.get("LOBSTER_RUN_STATE_KEY").cloned())
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty());
        if let Some(k) = &state_key {
            // Early, before anything is asked (the store's key layer checks
            // again at the read and the write).
            crate::state::user_state_key(k)?;
        }
        Ok(Plan {
            provider,
            prompt,
            model,
            schema_version,
            max_tokens: number(args.flag("max-output-tokens")),
            temperature: number(args.flag("temperature")),
            artifacts,
            metadata,
            schema,
            retries,
            disable_cache: args.is_set("disable-cache"),
            refresh: flag_bool(args.str("refresh").map(str::to_string))
                || flag_bool(env_first(
                    env,
                    &["LOBSTER_LLM_FORCE_REFRESH", "LLM_TASK_FORCE_REFRESH"],
                )),
            state_key,
        })
    }

    fn provider(&self, plan: &Plan, args: &Args, ctx: &Context) -> Result<Provider> {
        let token = args.str("token");
        judge_endpoint_flags(ctx.policy(), self.name, false, token.is_some())
            .map_err(|r| Error::runtime(r.to_string()).with_hint("nothing was sent"))?;
        llm::provider(&plan.provider, self.name, token, ctx.broker.endpoints())
            .map_err(Error::runtime)
    }
}

/// The reference's artifact normalisation: objects as they are, strings,
/// numbers and booleans as text, anything else as JSON data.
fn normalize_artifact(v: Value) -> Value {
    match v {
        Value::Object(_) => v,
        Value::String(s) => json!({"kind": "text", "text": s}),
        Value::Number(_) | Value::Bool(_) => {
            json!({"kind": "text", "text": crate::value::js_to_string(Some(&v))})
        }
        other => json!({"kind": "json", "data": other}),
    }
}

/// JSON with object keys sorted at every level (the cache key's identity).
fn stable(v: &Value) -> String {
    fn sort(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<_> = m.keys().collect();
                keys.sort();
                Value::Object(keys.into_iter().map(|k| (k.clone(), sort(&m[k]))).collect())
            }
            Value::Array(a) => Value::Array(a.iter().map(sort).collect()),
            other => other.clone(),
        }
    }
    to_js_json(&sort(v))
}

fn hash(text: &str) -> String {
    blake3::hash(text.as_bytes()).to_hex().to_string()
}

/// Where one answer is cached: a file in the operator's cache directory
/// (the CLI; the reference's shareable key), or a key in the tenant's own
/// store (`lobster serve`), whose name also binds the tenant, the
/// endpoint's origin and path, and the model, so no tenant or endpoint
/// answers for another.
enum AnswerCache {
    File(PathBuf),
    Store(String),
}

/// The store keys of cached answers (reserved: no pipeline can write them).
pub const CACHE_KEY_PREFIX: &str = "llm_cache_";

impl AnswerCache {
    fn of(name: &str, ctx: &Context, provider: &Provider, model: &str, cache_key: &str) -> Self {
        // The run's working directory, never a step's `cwd:`.
        match ctx.broker.endpoints().cache_dir(ctx.authority().workdir()) {
            Some(dir) => AnswerCache::File(dir.join(name).join(format!("{cache_key}.json"))),
            None => AnswerCache::Store(format!(
                "{CACHE_KEY_PREFIX}{}",
                hash(&stable(&json!({
                    "tenant": ctx.state.tenant(),
                    "target": provider.target(),
                    "model": model,
                    "cacheKey": cache_key,
                })))
            )),
        }
    }

    fn read(&self, ctx: &Context) -> Result<Option<Value>> {
        Ok(match self {
            AnswerCache::File(f) => std::fs::read_to_string(f)
                .ok()
                .and_then(|t| serde_json::from_str(&t).ok()),
            AnswerCache::Store(key) => ctx.state.get(key).ok().flatten(),
        })
    }

    fn write(&self, ctx: &Context, value: &Value) -> Result<()> {
        match self {
            AnswerCache::File(f) => {
                if let Some(dir) = f.parent() {
                    std::fs::create_dir_all(dir)?;
                }
                let text = format!("{}\n", crate::value::to_js_json_pretty(value));
                crate::state::write_atomic(f, text.as_bytes())?;
                Ok(())
            }
            AnswerCache::Store(key) => ctx.state.set(key, value),
        }
    }
}

impl Command for LlmInvoke {
    fn signature(&self) -> Signature {
        Signature {
            name: self.name,
            description: if self.default_provider.is_some() {
                "Backward-compatible alias for llm.invoke using the OpenClaw adapter"
            } else {
                "Call a configured LLM adapter with typed payloads and caching"
            },
            flags: FLAGS,
            positional: Some("Prompt text (instead of --prompt)"),
            side_effects: &["calls_llm"],
        }
    }

    fn help(&self) -> &'static str {
        self.help
    }

    /// Every run asks a model, so these examples are run against the
    /// loopback stubs by `tests/cli/broker/models.rs`, not offline.
    fn examples(&self) -> &'static [Example] {
        self.examples
    }

    fn preflight(&self, args: &Args, ctx: &Context) -> Result<()> {
        let plan = self.plan(args, &ctx.env, ctx.broker.endpoints())?;
        self.provider(&plan, args, ctx)?;
        ctx.broker
            .judge_llm(ctx.policy(), &ctx.grants, Caller::Builtin(self.name))
    }

    fn run(&self, args: &Args, input: ItemStream, ctx: &Context) -> Result<Output> {
        ctx.cancel.check()?;
        let plan = self.plan(args, &ctx.env, ctx.broker.endpoints())?;
        let provider = self.provider(&plan, args, ctx)?;
        ctx.broker
            .judge_llm(ctx.policy(), &ctx.grants, Caller::Builtin(self.name))?;
        let cap = body_cap(ctx.broker.endpoints(), ctx.limits.max_output_bytes)?;
        let mut inputs = collect(input)?;
        ctx.cancel.check()?;
        inputs.extend(plan.artifacts.iter().cloned());
        let artifacts: Vec<Value> = inputs.into_iter().map(normalize_artifact).collect();
        let hashes: Vec<String> = artifacts.iter().map(|a| hash(&stable(a))).collect();
        let cache_key = hash(&stable(&json!({
            "cacheKeyVersion": 2,
            "provider": plan.provider,
            "prompt": plan.prompt,
            "model": plan.model.clone().unwrap_or_else(|| format!("{}-default", plan.provider)),
            "schemaVersion": plan.schema_version,
            "artifactHashes": hashes,
            "outputSchema": plan.schema,
            "temperature": plan.temperature,
            "maxOutputTokens": plan.max_tokens,
        })));
        let replayed = |items: Vec<Value>, source: &str| -> Vec<Value> {
            items
                .into_iter()
                .map(|mut i| {
                    if let Value::Object(m) = &mut i {
                        m.insert("source".into(), json!(source));
                        m.insert("cached".into(), json!(true));
                        m.insert("replayed".into(), json!(true));
                    }
                    i
                })
                .collect()
        };
        // A run claimed again after its resumer died asks the broker while
        // the dead resume's calls are left to match, so each call keeps its
        // position (the dead resume may have filled these caches itself).
        let replaying = ctx.broker.replaying_record();
        if let (Some(key), false, false) = (&plan.state_key, plan.refresh, replaying) {
            if let Some(stored) = ctx.state.user(Writer::Pipeline).get(key)? {
                let matches = stored.get("type") == Some(&json!(self.name))
                    && stored.get("cacheKey") == Some(&json!(cache_key));
                if let (true, Some(Value::Array(items))) = (matches, stored.get("items")) {
                    return Ok(Output::Items(stream_of(replayed(
                        items.clone(),
                        "run_state",
                    ))));
                }
            }
        }
        let model_id = plan
            .model
            .clone()
            .unwrap_or_else(|| format!("{}-default", plan.provider));
        let cache = AnswerCache::of(self.name, ctx, &provider, &model_id, &cache_key);
        if !plan.disable_cache && !plan.refresh && !replaying {
            if let Some(v) = cache.read(ctx)? {
                if v.get("cacheKey") == Some(&json!(cache_key)) {
                    if let Some(Value::Array(items)) = v.get("items") {
                        return Ok(Output::Items(stream_of(replayed(items.clone(), "cache"))));
                    }
                }
            }
        }
        let mut extra = Map::new();
        if let Some(m) = &plan.metadata {
            extra.insert("metadata".into(), m.clone());
        }
        extra.insert("schemaVersion".into(), json!(plan.schema_version));
        let question = Question {
            prompt: plan.prompt.clone(),
            input: if artifacts.len() == 1 {
                artifacts[0].clone()
            } else {
                json!(artifacts)
            },
            artifacts: artifacts.clone(),
            artifact_hashes: hashes.clone(),
            schema: plan.schema.clone(),
            model: plan.model.clone(),
            temperature: plan.temperature,
            max_tokens: plan.max_tokens.map(|t| t.max(0.0) as u64),
            extra,
        };
        if matches!(provider, Provider::Openai { .. }) && question.model.is_none() {
            return Err(self.err("requires --model or LOBSTER_LLM_MODEL for provider=openai"));
        }
        let compiled = match &plan.schema {
            Some(s) => Some(Schema::compile(s).map_err(|e| self.err(e))?),
            None => None,
        };
        let (reply, attempt) = ask_checked(
            self.name,
            &provider,
            &question,
            compiled.as_ref(),
            plan.retries,
            cap,
            ctx,
        )?;
        let item = shape_item(
            self.name, &plan, &provider, &reply, &cache_key, &hashes, attempt,
        );
        let items = vec![item];
        if let Some(key) = &plan.state_key {
            ctx.state.user(Writer::Pipeline).set(
                key,
                &json!({"type": self.name, "version": 1, "cacheKey": cache_key, "items": items,
                        "storedAt": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)}),
            )?;
        }
        if !plan.disable_cache {
            cache.write(
                ctx,
                &json!({"items": items, "cacheKey": cache_key,
                    "storedAt": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)}),
            )?;
        }
        Ok(Output::Items(stream_of(items)))
    }
}

/// Ask, check against `schema`, and ask again with the validation errors, at
/// most `retries` extra times. Every attempt is one brokered call (recorded,
/// replayed, charged). Returns the accepted reply and its attempt number.
pub fn ask_checked(
    name: &str,
    provider: &Provider,
    question: &Question,
    schema: Option<&Schema>,
    retries: u32,
    cap: Option<usize>,
    ctx: &Context,
) -> Result<(Reply, u32)> {
    let mut errors: Vec<String> = Vec::new();
    let mut attempt = 0;
    loop {
        ctx.cancel.check()?;
        attempt += 1;
        let body = llm::request_body(provider, question, attempt, &errors);
        // The attempt is part of the identity: two retries with the same
        // feedback are two calls, not a replay of one.
        let request = json!({"provider": provider.name(), "target": provider.target(), "attempt": attempt, "body": body});
        let answer = ctx.broker.call(ctx.policy(), Kind::Llm, &request, || {
            match llm::send(provider, &body, &ctx.cancel, cap) {
                Ok(reply) => Ok((reply.to_value(), reply.tokens)),
                Err(AskError::Cancelled) => {
                    ctx.cancel.check()?;
                    Err(Error::runtime(format!("{name} cancelled")))
                }
                Err(AskError::TooLarge(m)) => Err(Error::runtime(m)),
                Err(e) => Err(Error::runtime(format!("{name} {e}"))),
            }
        })?;
        let reply = Reply::from_value(&answer);
        match llm::check(schema, &reply) {
            Ok(()) => return Ok((reply, attempt)),
            Err(found) => {
                if attempt > retries {
                    return Err(Error::runtime(format!(
                        "{name} output failed schema validation: {}",
                        found.join("; ")
                    )));
                }
                errors = found;
            }
        }
    }
}

fn shape_item(
    name: &str,
    plan: &Plan,
    provider: &Provider,
    reply: &Reply,
    cache_key: &str,
    hashes: &[String],
    attempt: u32,
) -> Item {
    let r = &reply.result;
    let field = |k: &str| r.get(k).cloned().unwrap_or(Value::Null);
    let data = reply.data.clone().unwrap_or(Value::Null);
    let format = r
        .get("output")
        .and_then(|o| o.get("format"))
        .cloned()
        .unwrap_or_else(|| json!(if data.is_null() { "text" } else { "json" }));
    let source = if name == "llm_task.invoke" {
        "clawd"
    } else {
        provider.name()
    };
    json!({
        "kind": name,
        "runId": field("runId"),
        "prompt": field("prompt"),
        "model": reply.model.clone().map_or(field("model"), Value::String),
        "schemaVersion": plan.schema_version,
        "status": r.get("status").map_or_else(|| "completed".to_string(), |s| crate::value::js_to_string(Some(s))),
        "cacheKey": cache_key,
        "artifactHashes": hashes,
        "output": {"format": format, "text": reply.text, "data": data},
        "usage": field("usage"),
        "metadata": field("metadata"),
        "warnings": field("warnings"),
        "diagnostics": field("diagnostics"),
        "createdAt": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        "source": source,
        "cached": false,
        "attemptCount": attempt,
    })
}

#[cfg(test)]
#[path = "llm_invoke_tests.rs"]
mod tests;
