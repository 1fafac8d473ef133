//! Wasm steps against the broker's edges: optional tools (`tool("NAME?")`,
//! refused at the moment of use when not granted), a hostile guest
//! (tests/guests/hostile-broker) that abuses `invoke-tool` and `llm-json`,
//! and answers larger than the step's caps. Every refusal is counted at the
//! stubs: nothing refused may be sent.

use crate::broker::{run, Stub};
use crate::common::{err_message, test_guest, Env, Run};
use serde_json::{json, Value};

/// A steps directory with the named test guests (`file` → copied as
/// `name.wasm`), or `None` (skip, as the other guest tests do).
fn steps(env: &Env, guests: &[(&str, &str)]) -> Option<String> {
    let dir = env.work_path("steps");
    std::fs::create_dir_all(&dir).unwrap();
    for (file, name) in guests {
        std::fs::copy(test_guest(file)?, dir.join(format!("{name}.wasm"))).unwrap();
    }
    Some(dir.to_str().unwrap().to_string())
}

#[test]
fn an_optional_tool_runs_without_the_grant_and_is_refused_when_called() {
    let env = Env::new();
    let Some(steps) = steps(&env, &[("brokered", "brokered")]) else {
        return;
    };
    let gw = Stub::start("gateway", None);
    let vars = [("OPENCLAW_URL", gw.url.as_str())];
    // `sessions_list` is described as optional: the step runs without
    // --allow-tool sessions_list, and the call is refused when made; the
    // guest handles the refusal (--soft) and nothing is sent.
    let base = [
        "--steps",
        steps.as_str(),
        "--allow-tool",
        "echo",
        "--allow-llm",
    ];
    let r = run(&env, &vars, &base, "brokered --tool sessions_list --soft");
    assert_eq!(r.code, 0, "{r:?}");
    let error = r.json()["output"][0]["error"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert_eq!(
        error,
        "step brokered may not call tool \"sessions_list\": the run does not grant it (--allow-tool sessions_list, and every permissions: tools: list over the step must name it); nothing was sent"
    );
    assert!(gw.requests().is_empty(), "{:?}", gw.requests());
    // A guest that does not handle it fails with the same clear message.
    let r = run(&env, &vars, &base, "brokered --tool sessions_list");
    assert_ne!(r.code, 0, "{r:?}");
    assert!(
        err_message(&r).contains("may not call tool \"sessions_list\""),
        "{r:?}"
    );
    assert!(gw.requests().is_empty());
    // Granted: the call goes through.
    let mut granted = base.to_vec();
    granted.extend(["--allow-tool", "sessions_list"]);
    let r = run(
        &env,
        &vars,
        &granted,
        "brokered --tool sessions_list --soft",
    );
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.json()["output"][0].get("error").is_none(), "{r:?}");
    assert_eq!(gw.requests().len(), 1);
    // The required tool (`echo`) still keeps the step from running at all.
    let r = run(
        &env,
        &vars,
        &["--steps", &steps, "--allow-llm"],
        "brokered --tool sessions_list --soft",
    );
    assert!(err_message(&r).contains("--allow-tool echo"), "{r:?}");
    assert_eq!(gw.requests().len(), 1);
}

/// Run hostile-broker in `mode` with the stubs; its one output item.
fn hostile(
    env: &Env,
    steps: &str,
    gw: &Stub,
    model: &Stub,
    extra: &[&str],
    mode: &str,
) -> (Run, Value) {
    let base = format!("{}/v1", model.url);
    let vars = [
        ("OPENCLAW_URL", gw.url.as_str()),
        ("LOBSTER_LLM_PROVIDER", "openai"),
        ("LOBSTER_LLM_BASE_URL", base.as_str()),
        ("LOBSTER_LLM_MODEL", "stub-model"),
    ];
    let mut args = vec![
        "--steps",
        steps,
        "--allow-tool",
        "echo",
        "--allow-tool",
        "big",
        "--allow-llm",
    ];
    args.extend_from_slice(extra);
    let r = run(env, &vars, &args, &format!("hostile-broker {mode}"));
    let item = r.json()["output"][0].clone();
    (r, item)
}

/// Requests the gateway stub received other than the guest's closing
/// `{"after": true}` call.
fn sent_besides_after(gw: &Stub) -> Vec<Value> {
    gw.requests()
        .into_iter()
        .filter(|r| r["body"]["args"]["after"] != json!(true))
        .collect()
}

#[test]
fn a_hostile_guest_is_refused_each_time_and_the_host_carries_on() {
    let env = Env::new();
    let Some(steps) = steps(&env, &[("hostile_broker", "hostile-broker")]) else {
        return;
    };
    let gw = Stub::start("gateway", None);
    let model = Stub::start("model", None);

    // Arguments far past the step's output limit: refused, nothing sent.
    let (r, item) = hostile(&env, &steps, &gw, &model, &[], "huge-args");
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(
        (item["answered"].as_u64(), item["refused"].as_u64()),
        (Some(0), Some(1)),
        "{item}"
    );
    let e = item["errors"][0].as_str().unwrap();
    assert!(
        e.starts_with("the tool call's args-json is 8000011 bytes, over the step's output limit of 512000 bytes"),
        "{e}"
    );
    assert_eq!(item["after"], "answered", "the host stopped answering");
    assert!(sent_besides_after(&gw).is_empty());

    // A tool it did not describe.
    let (r, item) = hostile(&env, &steps, &gw, &model, &[], "undescribed");
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(
        item["errors"],
        json!(["step hostile-broker called tool \"message\", which its describe does not ask for (add tool(message) to its capabilities); nothing was sent"])
    );
    assert_eq!(item["after"], "answered");
    assert!(sent_besides_after(&gw).is_empty());

    // Malformed and non-object arguments.
    let (r, item) = hostile(&env, &steps, &gw, &model, &[], "malformed");
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(item["refused"], 2, "{item}");
    let errors: Vec<&str> = item["errors"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        errors[0].starts_with("broker.invoke-tool args-json is not JSON: "),
        "{errors:?}"
    );
    assert_eq!(
        errors[1],
        "broker.invoke-tool args-json must be a JSON object"
    );
    assert_eq!(item["after"], "answered");
    assert!(sent_besides_after(&gw).is_empty());

    // A huge schema to llm-json: refused before any model call.
    let (r, item) = hostile(&env, &steps, &gw, &model, &[], "huge-schema");
    assert_eq!(r.code, 0, "{r:?}");
    let e = item["errors"][0].as_str().unwrap();
    assert!(
        e.starts_with("the llm-json request is ")
            && e.contains("over the step's output limit of 512000 bytes"),
        "{e}"
    );
    assert!(model.requests().is_empty(), "a refused model call was sent");
    assert_eq!(
        gw.requests().len(),
        4,
        "only the four closing calls reached the gateway"
    );

    // A thousand calls past the run's tool-call budget: three answered,
    // every other one refused before sending (the closing call too).
    let policy = crate::common::write(&env, "cap.toml", "[max]\ntool_calls = 3\n");
    let p = policy.to_str().unwrap().to_string();
    let (r, item) = hostile(&env, &steps, &gw, &model, &["--policy", &p], "flood");
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(
        (item["answered"].as_u64(), item["refused"].as_u64()),
        (Some(3), Some(1000)),
        "{item}"
    );
    assert_eq!(item["errors"].as_array().map(Vec::len), Some(1), "{item}");
    assert!(
        item["errors"][0]
            .as_str()
            .unwrap()
            .contains("this run has used its tool call budget (3, the policy's [max] tool_calls)"),
        "{item}"
    );
    assert!(
        item["after"].as_str().unwrap().contains("tool call budget"),
        "{item}"
    );
    assert_eq!(
        gw.requests().len(),
        4 + 3,
        "only the budgeted calls were sent"
    );
}

#[test]
fn an_oversize_brokered_answer_is_an_error_the_step_sees_and_the_caps_hold() {
    let env = Env::new();
    let Some(steps) = steps(&env, &[("hostile_broker", "hostile-broker")]) else {
        return;
    };
    let gw = Stub::start("gateway", None);
    let model = Stub::start("model", None);
    // The stub's `big` answers ~600 kB: past the step's 512000-byte limit.
    let (r, item) = hostile(&env, &steps, &gw, &model, &[], "big-answer --bytes 600000");
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(
        item["errors"],
        json!(["HTTP response body exceeded 512000 bytes"]),
        "{item}"
    );
    assert_eq!(item["after"], "answered");
    // The run's own output cap is lower still: it bounds the answer too,
    // and the run's output stays within it.
    let (r, item) = hostile(
        &env,
        &steps,
        &gw,
        &model,
        &["--max-stdout-bytes", "20000"],
        "big-answer --bytes 60000",
    );
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(
        item["errors"],
        json!(["HTTP response body exceeded 20000 bytes"]),
        "{item}"
    );
    assert!(r.stdout.len() < 20000, "{}", r.stdout.len());
    // The same answer within the caps arrives.
    let (r, item) = hostile(&env, &steps, &gw, &model, &[], "big-answer --bytes 1000");
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(
        (item["answered"].as_u64(), item["refused"].as_u64()),
        (Some(1), Some(0)),
        "{item}"
    );
}
