//! `lobster:step@0.2.0`'s `broker` import through the CLI: real components
//! (tests/guests/brokered, a 0.2 step; tests/guests/legacy01, a 0.1 step)
//! against the loopback stubs of `lobster-stubs`, counting the requests the
//! stubs received.

use crate::broker::Stub;
use crate::common::{err_message, test_guest, Env, Run};
use serde_json::json;

/// A steps directory with the brokered and the 0.1 guest, or `None` (skip).
fn steps(env: &Env) -> Option<String> {
    let dir = env.work_path("steps");
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["brokered", "legacy01"] {
        std::fs::copy(test_guest(name)?, dir.join(format!("{name}.wasm"))).unwrap();
    }
    Some(dir.to_str().unwrap().to_string())
}

fn run(env: &Env, vars: &[(&str, &str)], extra: &[&str], pipeline: &str) -> Run {
    let mut args = vec!["run", "--mode", "tool"];
    args.extend_from_slice(extra);
    args.push(pipeline);
    let mut c = env.command(&args);
    for k in [
        "OPENCLAW_URL",
        "OPENCLAW_TOKEN",
        "LOBSTER_LLM_PROVIDER",
        "LOBSTER_LLM_BASE_URL",
        "LOBSTER_LLM_MODEL",
        "LOBSTER_POLICY",
    ] {
        c.env_remove(k);
    }
    for (k, v) in vars {
        c.env(k, v);
    }
    crate::common::finish(c.output().unwrap())
}

#[test]
fn a_step_gets_only_described_and_granted_tools_and_nothing_is_sent_otherwise() {
    let env = Env::new();
    let Some(steps) = steps(&env) else { return };
    let gw = Stub::start("gateway", None);
    let vars = [("OPENCLAW_URL", gw.url.as_str())];
    // Not described (the step asks for `echo` only): refused, nothing sent.
    let r = run(
        &env,
        &vars,
        &[
            "--steps",
            &steps,
            "--allow-tool",
            "echo",
            "--allow-tool",
            "message",
            "--allow-llm",
        ],
        "brokered --tool message",
    );
    assert_ne!(r.code, 0, "{r:?}");
    assert!(
        err_message(&r).contains("called tool \"message\", which its describe does not ask for"),
        "{r:?}"
    );
    assert!(gw.requests().is_empty(), "a refused call was sent");
    // Described but not granted: the step does not run at all.
    let r = run(
        &env,
        &vars,
        &["--steps", &steps, "--allow-llm"],
        "brokered --tool echo",
    );
    assert_ne!(r.code, 0, "{r:?}");
    assert!(err_message(&r).contains("--allow-tool echo"), "{r:?}");
    assert!(gw.requests().is_empty(), "a refused call was sent");
    // Granted: the answer arrives (the stub's echo tool returns the body).
    let grant = ["--steps", &steps, "--allow-tool", "echo", "--allow-llm"];
    let r = run(
        &env,
        &vars,
        &grant,
        "brokered --tool echo --args '{\"to\":\"x\"}'",
    );
    assert_eq!(r.code, 0, "{r:?}");
    let out = &r.json()["output"];
    assert_eq!(out[0]["args"], json!({"to": "x", "n": 0}), "{r:?}");
    assert_eq!(gw.requests().len(), 1);
    assert_eq!(gw.requests()[0]["body"]["tool"], "echo");
}

#[test]
fn the_policy_refuses_at_the_call_and_call_caps_hold() {
    let env = Env::new();
    let Some(steps) = steps(&env) else { return };
    let gw = Stub::start("gateway", None);
    let policy = crate::common::write(&env, "p.toml", "tools = [\"message\"]\n");
    let p = policy.to_str().unwrap().to_string();
    let grant = ["--steps", &steps, "--allow-tool", "echo", "--allow-llm"];
    // Described and granted, but the policy's tools list does not name it.
    let r = run(
        &env,
        &[("OPENCLAW_URL", &gw.url), ("LOBSTER_POLICY", &p)],
        &grant,
        "brokered --tool echo",
    );
    assert_ne!(r.code, 0, "{r:?}");
    assert!(
        err_message(&r).contains("policy refuses tool \"echo\""),
        "{r:?}"
    );
    assert!(gw.requests().is_empty());
    // [max] tool_calls = 2: the third distinct call is refused before sending.
    let policy = crate::common::write(&env, "cap.toml", "[max]\ntool_calls = 2\n");
    let p = policy.to_str().unwrap().to_string();
    let r = run(
        &env,
        &[("OPENCLAW_URL", &gw.url), ("LOBSTER_POLICY", &p)],
        &grant,
        "brokered --tool echo --calls 3",
    );
    assert_ne!(r.code, 0, "{r:?}");
    assert!(
        err_message(&r).contains("tool call budget (2, the policy's [max] tool_calls)"),
        "{r:?}"
    );
    assert_eq!(gw.requests().len(), 2);
}

#[test]
fn llm_json_answers_schema_checked_json_and_resume_repeats_no_call() {
    let env = Env::new();
    let Some(steps) = steps(&env) else { return };
    let model = Stub::start("model", None);
    let base = format!("{}/v1", model.url);
    let vars = [
        ("LOBSTER_LLM_PROVIDER", "openai"),
        ("LOBSTER_LLM_BASE_URL", base.as_str()),
        ("LOBSTER_LLM_MODEL", "stub-violate-once"),
    ];
    let grant = ["--steps", &steps, "--allow-llm", "--allow-tool", "echo"];
    // Without the grant the step does not run; nothing is sent.
    let r = run(
        &env,
        &vars,
        &["--steps", &steps, "--allow-tool", "echo"],
        "brokered --llm",
    );
    assert!(err_message(&r).contains("--allow-llm"), "{r:?}");
    assert!(model.requests().is_empty());
    // A gated pipeline: the model answers twice (violation, then a valid
    // answer after the validation feedback); the resumed run asks nothing.
    crate::common::write(&env, "mail.json", r#"[{"subject":"Hello"}]"#);
    let pipeline = "exec --json cat mail.json | brokered --llm | approve --prompt send? | exec --json cat mail.json | brokered --llm";
    let paused = run(&env, &vars, &grant, pipeline);
    assert_eq!(paused.json()["status"], "needs_approval", "{paused:?}");
    assert_eq!(model.requests().len(), 2);
    // What the human approves names the model calls still to come.
    let caps = &paused.json()["requiresApproval"]["capabilities"];
    let caps: Vec<&str> = caps
        .as_array()
        .expect("capabilities")
        .iter()
        .filter_map(|c| c.as_str())
        .collect();
    assert!(
        caps.iter()
            .any(|c| c.starts_with("stage 5 (brokered)") && c.contains("model calls")),
        "{caps:?}"
    );
    let token = crate::common::token_of(&paused.json());
    let mut c = env.command(&["resume", "--token", &token, "--approve", "yes"]);
    for (k, v) in vars {
        c.env(k, v);
    }
    let r = crate::common::finish(c.output().unwrap());
    assert_eq!(r.json()["status"], "ok", "{r:?}");
    let out = &r.json()["output"][0];
    assert!(
        out["intent"].is_string() && out["draft"].is_string(),
        "{r:?}"
    );
    assert_eq!(model.requests().len(), 2, "the resumed run asked again");
}

#[test]
fn a_0_1_component_still_runs_beside_0_2() {
    let env = Env::new();
    let Some(steps) = steps(&env) else { return };
    crate::common::write(&env, "items.json", r#"[1,{"a":2}]"#);
    let r = run(
        &env,
        &[],
        &["--steps", &steps],
        "exec --json cat items.json | legacy.echo",
    );
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.json()["output"], json!([1, {"a": 2}]));
}

#[test]
fn the_deadline_ends_a_brokered_call_in_flight() {
    let env = Env::new();
    let Some(steps) = steps(&env) else { return };
    let model = Stub::start("model", None);
    let base = format!("{}/v1", model.url);
    crate::common::write(&env, "mail.json", r#"[{"subject":"Hello"}]"#);
    // Compile the steps first: compiling is kept off the run's deadline, so
    // on a busy machine a cold compile would only lengthen the wall time.
    let warm = crate::common::finish(
        env.command(&["steps", "precompile", "--steps", &steps])
            .output()
            .unwrap(),
    );
    assert_eq!(warm.code, 0, "{warm:?}");
    // stub-slow answers after 3 s; the run (and so the step) has 700 ms.
    let started = std::time::Instant::now();
    let r = run(
        &env,
        &[
            ("LOBSTER_LLM_PROVIDER", "openai"),
            ("LOBSTER_LLM_BASE_URL", base.as_str()),
            ("LOBSTER_LLM_MODEL", "stub-slow"),
        ],
        &[
            "--steps",
            &steps,
            "--allow-llm",
            "--allow-tool",
            "echo",
            "--timeout-ms",
            "700",
        ],
        "exec --json cat mail.json | brokered --llm",
    );
    let took = started.elapsed();
    assert_ne!(r.code, 0, "{r:?}");
    assert!(
        took < std::time::Duration::from_millis(3000),
        "{took:?} {r:?}"
    );
    assert_eq!(model.requests().len(), 1, "the request was in flight");
}
