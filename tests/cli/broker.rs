//! Brokered calls (`openclaw.invoke`, `llm.invoke`, `llm_task.invoke`)
//! against the loopback stand-ins of `lobster-stubs` (the gateway's
//! `/tools/invoke` contract and an OpenAI-compatible model). Every request
//! the stubs receive is logged, so tests count what was sent.

use crate::common::{err_message, Env, Run};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running stub server; killed on drop.
pub struct Stub {
    child: Child,
    pub url: String,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Stub {
    pub fn start(kind: &str, secret: Option<&str>) -> Stub {
        Stub::start_with(kind, secret, &[])
    }

    /// Start with extra flags (`--tls --ca-out FILE`, …).
    pub fn start_with(kind: &str, secret: Option<&str>, extra: &[&str]) -> Stub {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("requests.jsonl");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_lobster-stubs"));
        cmd.arg(kind).arg("--log").arg(&log).args(extra);
        if let Some(s) = secret {
            cmd.arg(if kind == "gateway" {
                "--token"
            } else {
                "--key"
            })
            .arg(s);
        }
        let mut child = cmd.stdout(Stdio::piped()).spawn().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        Stub {
            child,
            url: line.trim().to_string(),
            log,
            _dir: dir,
        }
    }

    /// Every request received so far (whole lines only: a line the stub
    /// is still writing is counted on the next look).
    pub fn requests(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let whole = text.rfind('\n').map_or(0, |i| i + 1);
        text[..whole]
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

impl Drop for Stub {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Run `lobster run --mode tool <extra…> <pipeline>` with `vars` set and
/// every gateway/model variable of the outer environment removed.
pub fn run(env: &Env, vars: &[(&str, &str)], extra: &[&str], pipeline: &str) -> Run {
    let mut args = vec!["run", "--mode", "tool"];
    args.extend_from_slice(extra);
    args.push(pipeline);
    let mut c = env.command(&args);
    for k in [
        "OPENCLAW_URL",
        "CLAWD_URL",
        "OPENCLAW_TOKEN",
        "CLAWD_TOKEN",
        "LOBSTER_MAX_HTTP_RESPONSE_BYTES",
        "LOBSTER_LLM_PROVIDER",
        "LOBSTER_LLM_BASE_URL",
        "LOBSTER_LLM_API_KEY",
        "LOBSTER_LLM_MODEL",
        "LOBSTER_LLM_ADAPTER_URL",
        "LOBSTER_PI_LLM_ADAPTER_URL",
        "LOBSTER_CACHE_DIR",
        "LOBSTER_RUN_STATE_KEY",
        "LOBSTER_POLICY",
    ] {
        c.env_remove(k);
    }
    for (k, v) in vars {
        c.env(k, v);
    }
    crate::common::finish(c.output().unwrap())
}

const SEED_LLM: &str = r#"openclaw.invoke --tool llm-task --action json --args-json '{
  "prompt": "Given the input email, return intent and draft.",
  "thinking": "low",
  "input": { "subject": "Hello", "body": "Can you help?" },
  "schema": {
    "type": "object",
    "properties": {
      "intent": { "type": "string" },
      "draft": { "type": "string" }
    },
    "required": ["intent", "draft"],
    "additionalProperties": false
  }
}'"#;

#[test]
fn the_seed_llm_task_line_runs_verbatim_with_the_gateway_token() {
    let gw = Stub::start("gateway", Some("s3cret"));
    let env = Env::new();
    let r = run(
        &env,
        &[("OPENCLAW_URL", &gw.url), ("OPENCLAW_TOKEN", "s3cret")],
        &[],
        SEED_LLM,
    );
    assert_eq!(r.code, 0, "{r:?}");
    let out = &r.json()["output"];
    let details = &out[0]["details"];
    assert_eq!(details["provider"], "stub");
    assert_eq!(details["json"]["intent"], "intent for Hello");
    assert!(details["json"]["draft"].as_str().unwrap().contains("Hello"));
    let reqs = gw.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0]["auth"], "Bearer s3cret");
    assert_eq!(reqs[0]["body"]["tool"], "llm-task");
    assert_eq!(reqs[0]["body"]["action"], "json");
    assert_eq!(reqs[0]["body"]["args"]["input"]["subject"], "Hello");
}

#[test]
fn the_seed_each_line_posts_once_per_item_zero_one_many() {
    let gw = Stub::start("gateway", None);
    let seed = r#"openclaw.invoke --tool message --action send --each --item-key message --args-json '{"provider":"telegram","to":"..."}'"#;
    for (items, n) in [("[]", 0), (r#"["hi"]"#, 1), (r#"["a", {"b": 1}, "c"]"#, 3)] {
        let env = Env::new();
        let before = gw.requests().len();
        let r = run(
            &env,
            &[("OPENCLAW_URL", &gw.url)],
            &[],
            &format!("{} | {seed}", env.source(items)),
        );
        assert_eq!(r.code, 0, "{r:?}");
        let reqs = gw.requests();
        assert_eq!(reqs.len() - before, n, "{items}");
        let out = r.json()["output"].as_array().unwrap().clone();
        assert_eq!(out.len(), n);
        let sent: Vec<Value> = serde_json::from_str(items).unwrap();
        for (i, req) in reqs[before..].iter().enumerate() {
            assert_eq!(
                req["body"],
                json!({"tool": "message", "action": "send",
                       "args": {"provider": "telegram", "to": "...", "message": sent[i]}})
            );
            assert_eq!(req["auth"], Value::Null);
            assert_eq!(out[i]["details"]["message"], sent[i]);
        }
    }
}

#[test]
fn body_carries_session_key_and_dry_run_and_raw_answers_spread() {
    let gw = Stub::start("gateway", None);
    let env = Env::new();
    let r = run(
        &env,
        &[],
        &[],
        &format!(
            "clawd.invoke --url {} --tool echo --action a --session-key s1 --dry-run",
            gw.url
        ),
    );
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(
        r.json()["output"][0],
        json!({"tool": "echo", "action": "a", "args": {}, "sessionKey": "s1", "dryRun": true})
    );
    let r = run(
        &env,
        &[("CLAWD_URL", &gw.url)],
        &[],
        r#"openclaw.invoke --tool raw --action get --args-json '{"value": [1, {"a": 2}]}'"#,
    );
    assert_eq!(r.json()["output"], json!([1, {"a": 2}]), "{r:?}");
}

#[test]
fn every_gateway_error_string() {
    let gw = Stub::start("gateway", Some("tok"));
    let env = Env::new();
    let call = |tool: &str, token: &str| {
        run(
            &env,
            &[("OPENCLAW_URL", &gw.url), ("OPENCLAW_TOKEN", token)],
            &[],
            &format!("openclaw.invoke --tool {tool} --action x"),
        )
    };
    let cases = [
        (
            "sessions_list",
            "wrong",
            r#"openclaw.invoke failed (401): {"error":{"message":"Unauthorized","type":"unauthorized"}}"#,
        ),
        (
            "nope",
            "tok",
            r#"openclaw.invoke failed (404): {"ok":false,"error":{"type":"not_found","message":"Tool not available: nope"}}"#,
        ),
        (
            "badargs",
            "tok",
            r#"openclaw.invoke failed (400): {"ok":false,"error":{"type":"tool_error","message":"invalid arguments"}}"#,
        ),
        (
            "fail",
            "tok",
            r#"openclaw.invoke failed (500): {"ok":false,"error":{"type":"tool_error","message":"tool execution failed"}}"#,
        ),
        ("notjson", "tok", "openclaw.invoke expected JSON response"),
        (
            "okfalse",
            "tok",
            "openclaw.invoke tool error: stub tool refused",
        ),
    ];
    for (tool, token, want) in cases {
        let r = call(tool, token);
        assert_eq!(r.code, 1, "{tool}: {r:?}");
        assert_eq!(err_message(&r), want, "{tool}");
    }
    let r = call("sessions_list", "tok");
    assert_eq!(r.json()["output"][0]["details"], json!({"sessions": []}));
    // Argument and configuration errors: nothing is sent.
    let before = gw.requests().len();
    let plain =
        |vars: &[(&str, &str)], pipeline: &str| err_message(&run(&env, vars, &[], pipeline));
    assert_eq!(
        plain(&[], "openclaw.invoke --tool t --action a"),
        "openclaw.invoke requires --url or OPENCLAW_URL"
    );
    assert_eq!(
        plain(&[], "clawd.invoke --url http://127.0.0.1:1 --tool t"),
        "clawd.invoke requires --tool and --action"
    );
    assert_eq!(
        plain(&[], "openclaw.invoke --url ftp://x --tool t --action a"),
        "openclaw.invoke requires an http(s) --url"
    );
    assert_eq!(
        plain(
            &[],
            "openclaw.invoke --url http://127.0.0.1:1 --tool t --action a --args-json '{'"
        ),
        "openclaw.invoke --args-json must be valid JSON"
    );
    assert_eq!(
        plain(
            &[],
            "openclaw.invoke --url http://127.0.0.1:1 --tool t --action a --each --args-json '[]'"
        ),
        "openclaw.invoke --each requires --args-json to be an object"
    );
    assert_eq!(gw.requests().len(), before);
}

#[test]
fn an_environment_token_never_goes_to_a_remote_url() {
    let env = Env::new();
    // A listener that would see the token if it were sent: none may connect.
    let gw = Stub::start("gateway", None);
    let remote = gw.url.replace("127.0.0.1", "127.0.0.2");
    for vars in [
        vec![
            ("OPENCLAW_URL", remote.as_str()),
            ("OPENCLAW_TOKEN", "secret"),
        ],
        vec![("CLAWD_URL", remote.as_str()), ("CLAWD_TOKEN", "secret")],
    ] {
        let r = run(
            &env,
            &vars,
            &[],
            "openclaw.invoke --tool sessions_list --action list",
        );
        assert_eq!(r.code, 1, "{r:?}");
        assert_eq!(
            err_message(&r),
            "openclaw.invoke refuses to send OPENCLAW_TOKEN/CLAWD_TOKEN to non-local --url; pass --token explicitly for remote endpoints"
        );
    }
    let r = run(
        &env,
        &[("OPENCLAW_TOKEN", "secret")],
        &[],
        "llm_task.invoke --prompt hi",
    );
    assert!(err_message(&r).contains("requires OPENCLAW_URL"), "{r:?}");
    let r = run(
        &env,
        &[
            ("OPENCLAW_URL", "http://gateway.example"),
            ("OPENCLAW_TOKEN", "secret"),
        ],
        &[],
        "llm_task.invoke --prompt hi",
    );
    assert!(
        err_message(&r).contains("refuses to send OPENCLAW_TOKEN"),
        "{r:?}"
    );
    assert!(gw.requests().is_empty());
}

#[test]
fn the_run_deadline_and_signals_end_a_request_in_flight() {
    let gw = Stub::start("gateway", None);
    let env = Env::new();
    let start = Instant::now();
    let r = run(
        &env,
        &[("OPENCLAW_URL", &gw.url)],
        &["--timeout-ms", "400"],
        r#"openclaw.invoke --tool slow --action x --args-json '{"ms": 10000}'"#,
    );
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(err_message(&r), "lobster runtime timed out", "{r:?}");
    assert_eq!(gw.requests().len(), 1, "the request was in flight");

    let mut c = env.command(&[
        "run",
        "--mode",
        "tool",
        r#"openclaw.invoke --tool slow --action x --args-json '{"ms": 10000}'"#,
    ]);
    c.env("OPENCLAW_URL", &gw.url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = c.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while gw.requests().len() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let start = Instant::now();
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let r = crate::common::finish(child.wait_with_output().unwrap());
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(r.code, 143, "{r:?}");
    assert_eq!(err_message(&r), "Received SIGTERM");
}

#[test]
fn oversize_responses_hit_the_http_limit_or_the_output_cap() {
    let gw = Stub::start("gateway", None);
    let env = Env::new();
    let big = r#"openclaw.invoke --tool big --action x --args-json '{"bytes": 5000}'"#;
    let r = run(
        &env,
        &[
            ("OPENCLAW_URL", &gw.url),
            ("LOBSTER_MAX_HTTP_RESPONSE_BYTES", "1000"),
        ],
        &[],
        big,
    );
    assert_eq!(
        err_message(&r),
        "HTTP response body exceeded 1000 bytes",
        "{r:?}"
    );
    let r = run(
        &env,
        &[("OPENCLAW_URL", &gw.url)],
        &["--max-stdout-bytes", "2000"],
        big,
    );
    assert_eq!(
        err_message(&r),
        "HTTP response body exceeded 2000 bytes",
        "{r:?}"
    );
    let r = run(
        &env,
        &[
            ("OPENCLAW_URL", &gw.url),
            ("LOBSTER_MAX_HTTP_RESPONSE_BYTES", "0"),
        ],
        &[],
        big,
    );
    assert_eq!(
        err_message(&r),
        "LOBSTER_MAX_HTTP_RESPONSE_BYTES must be a positive safe integer (bytes)"
    );
    let r = run(
        &env,
        &[
            ("OPENCLAW_URL", &gw.url),
            ("LOBSTER_MAX_HTTP_RESPONSE_BYTES", "100000"),
        ],
        &[],
        big,
    );
    assert_eq!(r.code, 0, "{r:?}");
}

#[test]
fn untrusted_policy_allowlists_tools_and_refuses_chosen_endpoints_before_sending() {
    let gw = Stub::start("gateway", Some("optok"));
    let env = Env::new();
    let policy = crate::common::write(
        &env,
        "policy.toml",
        &format!(
            "trust = \"untrusted\"\ntools = [\"sessions_list\"]\n[gateway]\nurl = \"{}\"\ntoken_env = \"OP_GATEWAY_TOKEN\"\n",
            gw.url
        ),
    );
    let p = policy.to_str().unwrap();
    let vars = [("OP_GATEWAY_TOKEN", "optok")];
    let r = run(
        &env,
        &vars,
        &["--policy", p],
        "openclaw.invoke --tool sessions_list --action list",
    );
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(gw.requests()[0]["auth"], "Bearer optok");
    let r = run(
        &env,
        &vars,
        &["--policy", p],
        "openclaw.invoke --tool message --action send",
    );
    assert_eq!(
        err_message(&r),
        "policy refuses tool \"message\": it is not among the policy's tools [sessions_list]"
    );
    let r = run(
        &env,
        &vars,
        &["--policy", p],
        &format!(
            "openclaw.invoke --url {} --tool sessions_list --action list",
            gw.url
        ),
    );
    assert!(
        err_message(&r).contains("--url is refused under the untrusted policy"),
        "{r:?}"
    );
    let r = run(
        &env,
        &vars,
        &["--policy", p],
        "openclaw.invoke --token x --tool sessions_list --action list",
    );
    assert!(
        err_message(&r).contains("--token is refused under the untrusted policy"),
        "{r:?}"
    );
    let r = run(
        &env,
        &[("LOBSTER_LLM_ADAPTER_URL", "http://127.0.0.1:1")],
        &["--policy", p],
        "llm.invoke --prompt hi",
    );
    assert!(
        err_message(&r).starts_with("policy refuses model calls"),
        "{r:?}"
    );
    assert_eq!(gw.requests().len(), 1, "refused calls sent nothing");
}

#[test]
fn call_caps_stop_the_run_at_the_limit() {
    let gw = Stub::start("gateway", None);
    let env = Env::new();
    let policy = crate::common::write(&env, "p.toml", "[max]\ntool_calls = 2\n");
    let r = run(
        &env,
        &[("OPENCLAW_URL", &gw.url)],
        &["--policy", policy.to_str().unwrap()],
        &format!(
            "{} | openclaw.invoke --tool message --action send --each --args-json '{{\"to\":\"x\"}}' --item-key message",
            env.source(r#"["a", "b", "c"]"#)
        ),
    );
    assert_eq!(r.code, 1, "{r:?}");
    assert_eq!(
        err_message(&r),
        "this run has used its tool call budget (2, the policy's [max] tool_calls)"
    );
    assert_eq!(gw.requests().len(), 2);
}

#[test]
fn a_retried_workflow_step_replays_its_recorded_call() {
    let gw = Stub::start("gateway", None);
    let env = Env::new();
    let marker = env.work_path("attempt");
    crate::common::write(
        &env,
        "wf.lobster",
        &format!(
            "steps:\n  - id: send\n    pipeline: >-\n      openclaw.invoke --tool message --action send --args-json '{{\"to\":\"x\",\"message\":\"m\"}}'\n      | exec --shell 'test -e {m} || {{ touch {m}; exit 3; }}; echo ok'\n    retry: {{ max: 2, delay_ms: 1 }}\n",
            m = marker.display()
        ),
    );
    let r = run(&env, &[("OPENCLAW_URL", &gw.url)], &[], "wf.lobster");
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(
        gw.requests().len(),
        1,
        "the retry replayed the recorded answer"
    );
}

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

/// Resume the paused run of envelope `paused` with a yes, with `vars` set.
fn approve(env: &Env, vars: &[(&str, &str)], paused: &Run) -> Run {
    let token = crate::common::token_of(&paused.json());
    let mut c = env.command(&["resume", "--token", &token, "--approve", "yes"]);
    for (k, v) in vars {
        c.env(k, v);
    }
    crate::common::finish(c.output().unwrap())
}

#[test]
fn resume_after_approval_repeats_no_recorded_call() {
    let gw = Stub::start("gateway", None);
    let env = Env::new();
    let vars = [("OPENCLAW_URL", gw.url.as_str())];
    // A pipeline: the same request after the gate is answered from the
    // ledger the pause recorded.
    let call = r#"openclaw.invoke --tool echo --action a --args-json '{"n":1}'"#;
    let r = run(
        &env,
        &vars,
        &[],
        &format!("{call} | approve --prompt ok | {call}"),
    );
    assert_eq!(r.json()["status"], "needs_approval", "{r:?}");
    assert_eq!(
        r.json()["requiresApproval"]["capabilities"],
        json!(["stage 3 (openclaw.invoke): calls gateway tool echo (action a)"]),
        "{r:?}"
    );
    assert_eq!(gw.requests().len(), 1);
    let r = approve(&env, &vars, &r);
    assert_eq!(r.json()["status"], "ok", "{r:?}");
    assert_eq!(r.json()["output"][0]["args"], json!({"n": 1}));
    assert_eq!(gw.requests().len(), 1, "the resumed run asked again");
    // A workflow: the same, across steps, with the budget carried over.
    crate::common::write(
        &env,
        "wf.lobster",
        &format!(
            "steps:\n  - id: draft\n    pipeline: {call}\n  - id: review\n    approval:\n      prompt: Send?\n  - id: send\n    pipeline: {call}\n  - id: more\n    pipeline: openclaw.invoke --tool echo --action b\n"
        ),
    );
    let policy = crate::common::write(&env, "p.toml", "[max]\ntool_calls = 1\n");
    let mut pvars = vars.to_vec();
    let p = policy.to_str().unwrap().to_string();
    pvars.push(("LOBSTER_POLICY", &p));
    let r = run(&env, &pvars, &[], "wf.lobster");
    assert_eq!(r.json()["status"], "needs_approval", "{r:?}");
    let caps = r.json()["requiresApproval"]["capabilities"].clone();
    assert_eq!(
        caps,
        json!([
            "step send (openclaw.invoke): calls gateway tool echo (action a)",
            "step more (openclaw.invoke): calls gateway tool echo (action b)"
        ]),
        "{r:?}"
    );
    assert_eq!(gw.requests().len(), 2);
    let r = approve(&env, &pvars, &r);
    // `send` replayed (no charge); `more` is a new call over the budget of 1.
    assert_eq!(
        err_message(&r),
        "this run has used its tool call budget (1, the policy's [max] tool_calls)",
        "{r:?}"
    );
    assert_eq!(gw.requests().len(), 2);
}

#[test]
fn the_email_triage_llm_example_drafts_gates_and_sends_once() {
    let env = Env::new();
    if env.copy_examples("steps").is_none() {
        return;
    }
    let gw = Stub::start("gateway", Some("gt"));
    let model = Stub::start("model", Some("mk"));
    let base = format!("{}/v1", model.url);
    let vars = [
        ("OPENCLAW_URL", gw.url.as_str()),
        ("OPENCLAW_TOKEN", "gt"),
        ("LOBSTER_LLM_PROVIDER", "openai"),
        ("LOBSTER_LLM_BASE_URL", base.as_str()),
        ("LOBSTER_LLM_MODEL", "stub-model"),
        ("LOBSTER_LLM_API_KEY", "mk"),
    ];
    let workflow = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/workflows/email-triage-llm.lobster");
    // Without --allow-llm the sandboxed drafting step does not run.
    let r = run(
        &env,
        &vars,
        &["--allow-read", "mail"],
        workflow.to_str().unwrap(),
    );
    assert!(err_message(&r).contains("--allow-llm"), "{r:?}");
    assert!(model.requests().is_empty());
    let r = run(
        &env,
        &vars,
        &["--allow-read", "mail", "--allow-llm"],
        workflow.to_str().unwrap(),
    );
    let v = r.json();
    assert_eq!(v["status"], "needs_approval", "{r:?}");
    let items = v["requiresApproval"]["items"].as_array().unwrap();
    assert_eq!(items.len(), 3);
    for it in items {
        let category = it["draft"]["category"].as_str().unwrap();
        assert!(["action", "fyi", "ignore"].contains(&category), "{it}");
        let subject = it["item"]["subject"].as_str().unwrap();
        assert!(it["draft"]["reply"].as_str().unwrap().contains(subject));
    }
    assert_eq!(
        v["requiresApproval"]["capabilities"],
        json!([
            "step send (openclaw.invoke): calls gateway tool message (action send), once per item"
        ])
    );
    assert_eq!(model.requests().len(), 3);
    assert!(
        gw.requests().is_empty(),
        "nothing is sent before the approval"
    );
    let r = approve(&env, &vars, &r);
    assert_eq!(r.json()["status"], "ok", "{r:?}");
    let sent = items
        .iter()
        .filter(|it| it["draft"]["category"] != "ignore")
        .count();
    assert_eq!(gw.requests().len(), sent);
    assert_eq!(r.json()["output"].as_array().unwrap().len(), sent);
    assert_eq!(
        model.requests().len(),
        3,
        "the resumed run asked the model again"
    );
    assert_eq!(gw.requests()[0]["auth"], "Bearer gt");
}

#[test]
fn workflow_tool_permissions_are_checked_against_the_policy_and_each_other() {
    let env = Env::new();
    crate::common::write(
        &env,
        "wf.lobster",
        "permissions:\n  tools: [message, llm]\nsteps:\n  - id: a\n    pipeline: head\n    permissions:\n      tools: [message, cron]\n",
    );
    let r = env.run(&["check", "wf.lobster"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stdout.contains(
            "wf.lobster:7: Workflow step a permissions: tools \"cron\" is not in the workflow's permissions.tools [message, llm]"
        ),
        "{}",
        r.stdout
    );
    crate::common::write(
        &env,
        "ok.lobster",
        "permissions:\n  tools: [message, llm]\nsteps:\n  - id: a\n    pipeline: head\n",
    );
    let policy = crate::common::write(
        &env,
        "p.toml",
        "trust = \"untrusted\"\ntools = [\"message\"]\n",
    );
    let r = env.run(&["check", "--policy", policy.to_str().unwrap(), "ok.lobster"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stdout.contains(
            "permissions.tools llm is not allowed by the policy (tools [message], llm = false)"
        ),
        "{}",
        r.stdout
    );
    assert!(
        !r.stdout.contains("permissions.tools message"),
        "{}",
        r.stdout
    );
    let r = env.run(&["check", "ok.lobster"]);
    assert_eq!(r.code, 0, "{r:?}");
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
