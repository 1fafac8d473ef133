//! The examples in `examples/workflows/`, `lobster call` on workflow files,
//! and WebAssembly `uses:` steps in workflows.

use super::{error_message, examples, ok_output, wasm_setup, MAIL_WORKFLOW};
use crate::common::{token_of, Env};
use serde_json::json;
use std::path::Path;

#[test]
fn uses_steps_run_in_the_sandbox_behind_a_gate() {
    let env = Env::new();
    if wasm_setup(&env).is_none() {
        return;
    }
    let f = env.wf("mail.lobster", MAIL_WORKFLOW);
    // Grants are checked for every component before anything runs.
    let r = env.run(&[
        "run",
        "--mode",
        "tool",
        "--allow-read",
        "mail",
        "--file",
        &f,
    ]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        error_message(&r).contains(
            "mail.lobster:10:5: Workflow step apply: step inbox.apply needs write access"
        ),
        "{r:?}"
    );
    let before = std::fs::read_dir(env.work_path("mail")).unwrap().count();
    let v = env
        .run(&[
            "run",
            "--mode",
            "tool",
            "--allow-write",
            "mail",
            "--file",
            &f,
        ])
        .json();
    assert_eq!(v["requiresApproval"]["prompt"], "Apply labels?", "{v}");
    assert_eq!(v["requiresApproval"]["items"].as_array().unwrap().len(), 10);
    // The resume runs with the grants recorded at the pause.
    let r = env.run(&["resume", "--token", &token_of(&v), "--approve", "yes"]);
    let out = ok_output(&r);
    assert!(
        out.as_array().unwrap().iter().any(|o| o["applied"] == true),
        "{out}"
    );
    assert!(std::fs::read_dir(env.work_path("mail")).unwrap().count() >= before);
    assert_eq!(
        env.state_files()
            .iter()
            .filter(|f| !f.starts_with("cache"))
            .count(),
        0
    );
    // A missing component is a positioned plan error.
    let f = env.wf(
        "missing.lobster",
        "steps:\n  - id: x\n    uses: steps/nope.wasm\n",
    );
    let r = env.wf_tool(&f, None);
    assert_eq!(r.code, 2);
    assert!(
        error_message(&r)
            .starts_with("missing.lobster:3:11: Workflow step x component not found: "),
        "{r:?}"
    );
}

// ---------------------------------------------------------------- examples

#[test]
fn example_workflows_run() {
    let env = Env::new();
    let ex = examples();
    let run =
        |name: &str, args: Option<&str>| env.wf_tool(&ex.join(name).display().to_string(), args);
    assert_eq!(ok_output(&run("greet.lobster", None)), json!(["world\n"]));
    assert_eq!(
        ok_output(&run("greet.lobster", Some(r#"{"who":"ann","loud":true}"#))),
        json!(["ANN\n"])
    );
    assert_eq!(
        ok_output(&run("triage.lobster", None)),
        json!(["page skipped: false, ignore skipped: true\n"])
    );
    assert_eq!(
        ok_output(&run("batch.lobster", None))[2],
        json!({"file": "c.txt", "index": 2, "upper": "C.TXT\n"})
    );
    assert_eq!(
        ok_output(&run("fanout.lobster", None)),
        json!(["net latency 12\n"])
    );
    assert_eq!(
        ok_output(&run("release.lobster", None)),
        json!(["sub-workflow said release team\n\n"])
    );
    // deploy: approval with a different-approver rule.
    let r = run("deploy.lobster", None);
    assert_eq!(error_message(&r), "Workflow arg env is required");
    let v = run("deploy.lobster", Some(r#"{"env":"staging"}"#)).json();
    assert_eq!(
        v["requiresApproval"]["prompt"],
        "Apply the plan to staging?"
    );
    let t = token_of(&v);
    let r = env.run(&[
        "resume",
        "--token",
        &t,
        "--approve",
        "yes",
        "--approver",
        "deploy-bot",
    ]);
    assert_eq!(r.code, 2);
    let r = env.run(&[
        "resume",
        "--token",
        &t,
        "--approve",
        "yes",
        "--approver",
        "ann",
    ]);
    assert_eq!(ok_output(&r), json!([30]));
}

#[test]
fn call_runs_workflow_files_with_args() {
    let env = Env::new();
    let f = env.wf(
        "c.lobster",
        "args:\n  x:\n    default: 1\nsteps:\n  - id: a\n    run: echo ${x}\n",
    );
    let req = json!({"action":"run","pipeline": f, "argsJson": "{\"x\":5}"}).to_string();
    let r = env.run(&["call", &req]);
    assert_eq!(ok_output(&r), json!([5]));
}

#[test]
fn example_mail_workflow_runs_wasm_steps() {
    let env = Env::new();
    if wasm_setup(&env).is_none() {
        return;
    }
    let wf = examples().join("mail.lobster").display().to_string();
    let steps = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/steps/target/wasm32-wasip2/release")
        .display()
        .to_string();
    let v = env
        .run(&[
            "run",
            "--mode",
            "tool",
            "--steps",
            &steps,
            "--allow-write",
            "mail",
            &wf,
        ])
        .json();
    assert_eq!(
        v["requiresApproval"]["prompt"], "Apply the proposed labels and moves?",
        "{v}"
    );
    let r = env.run(&["resume", "--token", &token_of(&v), "--approve", "yes"]);
    assert!(ok_output(&r)
        .as_array()
        .unwrap()
        .iter()
        .any(|o| o["applied"] == true));
}

#[test]
fn example_inbox_triage_workflow_runs_wasm_steps() {
    let env = Env::new();
    if wasm_setup(&env).is_none() {
        return;
    }
    let wf = examples()
        .join("inbox-triage.lobster")
        .display()
        .to_string();
    let v = env
        .run(&["run", "--mode", "tool", "--allow-write", "mail", &wf])
        .json();
    assert_eq!(
        v["requiresApproval"]["prompt"], "Label and file these messages?",
        "{v}"
    );
    assert_eq!(v["requiresApproval"]["items"].as_array().unwrap().len(), 10);
    let r = env.run(&["resume", "--token", &token_of(&v), "--approve", "yes"]);
    let out = ok_output(&r);
    assert!(
        out.as_array().unwrap().iter().all(|o| o["applied"] == true),
        "{out}"
    );
}
