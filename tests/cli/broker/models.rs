//! `llm.invoke` and `llm_task.invoke` against the OpenAI-compatible stub:
//! plain, streamed, malformed and retried answers, the `llm-task` shape,
//! the HTTP adapter, deadlines and size caps of model calls, and the model
//! commands' examples in `commands list`.

use super::{run, Stub};
use crate::common::{err_message, Env};
use serde_json::json;
use std::time::{Duration, Instant};

#[test]
fn llm_invoke_openai_plain_streamed_malformed_and_retried() {
    let model = Stub::start("model", Some("k"));
    let env = Env::new();
    let base = format!("{}/v1", model.url);
    let schema = r#"{"type":"object","properties":{"category":{"enum":["work","personal"]},"reply":{"type":"string"}},"required":["category","reply"]}"#;
    let vars = [
        ("LOBSTER_LLM_BASE_URL", base.as_str()),
        ("LOBSTER_LLM_API_KEY", "k"),
        ("LOBSTER_LLM_MODEL", "stub-model"),
        ("LOBSTER_CACHE_DIR", "cache"),
    ];
    let pipeline = |extra: &str| {
        format!(
            "{} | llm.invoke --provider openai --prompt 'Classify' --output-schema '{schema}' {extra}",
            env.source(r#"[{"subject": "Lunch?"}]"#)
        )
    };
    let r = run(&env, &vars, &[], &pipeline(""));
    assert_eq!(r.code, 0, "{r:?}");
    let item = &r.json()["output"][0];
    assert_eq!(item["kind"], "llm.invoke");
    assert_eq!(item["source"], "openai");
    assert_eq!(item["cached"], false);
    assert_eq!(item["attemptCount"], 1);
    assert_eq!(item["output"]["format"], "json");
    assert!(item["output"]["data"]["reply"]
        .as_str()
        .unwrap()
        .contains("Lunch?"));
    let req = &model.requests()[0];
    assert_eq!(req["auth"], "Bearer k");
    assert_eq!(
        req["body"]["response_format"]["json_schema"]["schema"]["required"],
        json!(["category", "reply"])
    );
    // The same question again comes from the cache, without a request.
    let r = run(&env, &vars, &[], &pipeline(""));
    assert_eq!(r.json()["output"][0]["source"], "cache", "{r:?}");
    assert_eq!(model.requests().len(), 1);
    // --refresh asks again; streamed answers are assembled.
    let mut streamed = vars.to_vec();
    streamed.push(("LOBSTER_LLM_STREAM", "1"));
    let r = run(&env, &streamed, &[], &pipeline("--refresh"));
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(
        r.json()["output"][0]["output"]["data"]["category"],
        item["output"]["data"]["category"]
    );
    assert_eq!(model.requests()[1]["body"]["stream"], true);
    // Schema-violating, then valid: one retry with the errors in the prompt.
    let r = run(
        &env,
        &vars,
        &[],
        &pipeline("--disable-cache --model stub-violate-once"),
    );
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.json()["output"][0]["attemptCount"], 2);
    let reqs = model.requests();
    let retry_prompt = reqs.last().unwrap()["body"]["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        retry_prompt.contains("did not match the schema"),
        "{retry_prompt}"
    );
    // Malformed JSON every time: fails after the retries, naming the problem.
    let before = model.requests().len();
    let r = run(
        &env,
        &vars,
        &[],
        &pipeline("--disable-cache --model stub-malformed --max-validation-retries 2"),
    );
    assert_eq!(
        err_message(&r),
        "llm.invoke output failed schema validation: / the answer is not valid JSON"
    );
    assert_eq!(model.requests().len() - before, 3);
    // Remote failure and bad key.
    let r = run(
        &env,
        &vars,
        &[],
        &pipeline("--disable-cache --model stub-fail"),
    );
    assert!(
        err_message(&r)
            .starts_with("llm.invoke request failed: 500 Internal Server Error: {\"error\""),
        "{r:?}"
    );
    let mut bad = vars.to_vec();
    bad[1] = ("LOBSTER_LLM_API_KEY", "wrong");
    let r = run(&env, &bad, &[], &pipeline("--disable-cache"));
    assert!(
        err_message(&r).starts_with("llm.invoke request failed: 401 Unauthorized:"),
        "{r:?}"
    );
    let r = run(
        &env,
        &[("LOBSTER_LLM_BASE_URL", base.as_str())],
        &[],
        "llm.invoke --prompt hi",
    );
    assert_eq!(
        err_message(&r),
        "llm.invoke requires --model or LOBSTER_LLM_MODEL for provider=openai"
    );
}

#[test]
fn llm_task_invoke_speaks_the_real_llm_task_shape() {
    let gw = Stub::start("gateway", None);
    let env = Env::new();
    let r = run(
        &env,
        &[("OPENCLAW_URL", &gw.url), ("LOBSTER_CACHE_DIR", "c")],
        &[],
        &format!(
            "{} | llm_task.invoke --prompt 'Reply' --output-schema '{{\"type\":\"object\",\"properties\":{{\"draft\":{{\"type\":\"string\"}}}},\"required\":[\"draft\"]}}'",
            env.source(r#"[{"subject": "Invoice"}]"#)
        ),
    );
    assert_eq!(r.code, 0, "{r:?}");
    let item = &r.json()["output"][0];
    assert_eq!(item["kind"], "llm_task.invoke");
    assert_eq!(item["source"], "clawd");
    assert_eq!(item["model"], "stub-model");
    assert!(item["output"]["data"]["draft"]
        .as_str()
        .unwrap()
        .contains("Invoice"));
    let req = &gw.requests()[0]["body"];
    assert_eq!(
        (req["tool"].as_str(), req["action"].as_str()),
        (Some("llm-task"), Some("json"))
    );
    assert_eq!(req["args"]["input"], json!({"subject": "Invoice"}));
    assert!(req["args"]["schema"].is_object());
}

#[test]
fn llm_invoke_http_adapter_retry_context_state_key_and_envelope_errors() {
    let model = Stub::start("model", None);
    let env = Env::new();
    let vars = [
        ("LOBSTER_LLM_ADAPTER_URL", model.url.as_str()),
        ("LOBSTER_CACHE_DIR", "c"),
    ];
    let schema =
        r#"{"type":"object","properties":{"score":{"type":"integer"}},"required":["score"]}"#;
    let r = run(
        &env,
        &vars,
        &[],
        &format!("llm.invoke --prompt 'Score' --model stub-violate-once --output-schema '{schema}' --state-key sk"),
    );
    assert_eq!(r.code, 0, "{r:?}");
    let item = &r.json()["output"][0];
    assert_eq!(
        (item["source"].as_str(), item["attemptCount"].as_i64()),
        (Some("http"), Some(2))
    );
    assert_eq!(item["runId"], "stub-run-2");
    let reqs = model.requests();
    assert_eq!(reqs[0]["path"], "/invoke");
    assert!(reqs[0]["body"].get("retryContext").is_none());
    assert_eq!(reqs[1]["body"]["retryContext"]["attempt"], 2);
    assert!(reqs[1]["body"]["retryContext"]["validationErrors"][0]
        .as_str()
        .unwrap()
        .contains("score"));
    // The run-state record answers a re-run, even with the cache disabled.
    let r = run(
        &env,
        &vars,
        &[],
        &format!("llm.invoke --prompt 'Score' --model stub-violate-once --output-schema '{schema}' --state-key sk --disable-cache"),
    );
    assert_eq!(r.json()["output"][0]["source"], "run_state", "{r:?}");
    assert_eq!(model.requests().len(), 2);
    let r = run(
        &env,
        &vars,
        &[],
        "llm.invoke --prompt 'x' --model stub-fail --disable-cache",
    );
    assert_eq!(err_message(&r), "llm.invoke remote error: adapter failed");
    let gw = Stub::start("gateway", None);
    let r = run(
        &env,
        &[("OPENCLAW_URL", &gw.url)],
        &[],
        "llm.invoke --provider openclaw --prompt x --disable-cache --token t",
    );
    // The gateway's llm-task refuses a call without a schema (400), reported as a request failure.
    assert_eq!(
        err_message(&r),
        r#"llm.invoke request failed: 400: {"ok":false,"error":{"type":"tool_error","message":"llm-task requires prompt and schema"}}"#
    );
    assert_eq!(gw.requests()[0]["auth"], "Bearer t");
}

#[test]
fn model_calls_obey_the_deadline_the_size_caps_and_the_call_budget() {
    let model = Stub::start("model", None);
    let env = Env::new();
    let base = format!("{}/v1", model.url);
    let vars = [
        ("LOBSTER_LLM_BASE_URL", base.as_str()),
        ("LOBSTER_LLM_MODEL", "stub-slow"),
    ];
    let start = Instant::now();
    let r = run(
        &env,
        &vars,
        &["--timeout-ms", "400"],
        "llm.invoke --prompt hi --disable-cache",
    );
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(err_message(&r), "lobster runtime timed out", "{r:?}");
    let small = [
        ("LOBSTER_LLM_BASE_URL", base.as_str()),
        ("LOBSTER_LLM_MODEL", "stub-model"),
        ("LOBSTER_MAX_HTTP_RESPONSE_BYTES", "50"),
    ];
    let r = run(&env, &small, &[], "llm.invoke --prompt hi --disable-cache");
    assert_eq!(
        err_message(&r),
        "HTTP response body exceeded 50 bytes",
        "{r:?}"
    );
    let policy = crate::common::write(&env, "p.toml", "[max]\nllm_calls = 1\n");
    let r = run(
        &env,
        &[
            ("LOBSTER_LLM_BASE_URL", base.as_str()),
            ("LOBSTER_LLM_MODEL", "stub-malformed"),
        ],
        &["--policy", policy.to_str().unwrap()],
        "llm.invoke --prompt hi --disable-cache --output-schema '{\"type\":\"object\"}'",
    );
    assert_eq!(
        err_message(&r),
        "this run has used its model call budget (1, the policy's [max] llm_calls)",
        "{r:?}"
    );
    let before = model.requests().len();
    let tokens = crate::common::write(&env, "t.toml", "[max]\nllm_tokens = 1\n");
    let r = run(
        &env,
        &[
            ("LOBSTER_LLM_BASE_URL", base.as_str()),
            ("LOBSTER_LLM_MODEL", "stub-malformed"),
        ],
        &["--policy", tokens.to_str().unwrap()],
        "llm.invoke --prompt hi --disable-cache --output-schema '{\"type\":\"object\"}'",
    );
    assert!(err_message(&r).contains("model token budget (1"), "{r:?}");
    assert_eq!(
        model.requests().len() - before,
        1,
        "the second call was refused before sending"
    );
}

#[test]
fn the_model_commands_examples_in_commands_list_run_against_the_stubs() {
    let model = Stub::start("model", None);
    let gw = Stub::start("gateway", None);
    let env = Env::new();
    let list = env.run(&["run", "--mode", "tool", "commands.list"]).json();
    let mut ran = 0;
    for cmd in list["output"].as_array().unwrap() {
        let name = cmd["name"].as_str().unwrap();
        let vars: &[(&str, &str)] = match name {
            "llm.invoke" => &[
                ("LOBSTER_LLM_PROVIDER", "http"),
                ("LOBSTER_LLM_ADAPTER_URL", &model.url),
            ],
            "llm_task.invoke" => &[("OPENCLAW_URL", &gw.url)],
            _ => continue,
        };
        let examples = cmd["examples"].as_array().expect("examples, not null");
        assert!(!examples.is_empty(), "{name}");
        for ex in examples {
            let source = env.source(&ex["input"].to_string());
            let pipeline = format!("{source} | {}", ex["pipeline"].as_str().unwrap());
            let r = run(&env, vars, &[], &pipeline);
            assert_eq!(r.code, 0, "{name}: {r:?}");
            assert_eq!(r.json()["output"], ex["output"], "{name}: {pipeline}");
            ran += 1;
        }
    }
    assert_eq!(ran, 2);
}
