//! Brokered calls inside workflows: a retried step replays its recorded
//! call, a resume after approval repeats none, the email triage example,
//! and workflow tool permissions checked against the policy.

use super::{run, Stub};
use crate::common::{err_message, Env, Run};
use serde_json::json;

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
