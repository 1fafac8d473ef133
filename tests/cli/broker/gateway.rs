//! `openclaw.invoke` against the gateway stub: the seed lines verbatim,
//! request bodies, every gateway error string, tokens never sent to a
//! remote URL, deadlines and signals mid-request, oversize responses, the
//! untrusted policy's tool allowlist, and call caps.

use super::{run, Stub};
use crate::common::{err_message, Env};
use serde_json::{json, Value};
use std::process::Stdio;
use std::time::{Duration, Instant};

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
