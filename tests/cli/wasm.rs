//! WebAssembly steps through the CLI: grants, the gated example pipeline, and
//! resume refusing a component that changed since the pause.

use crate::common::{token_of, Env};
use std::path::{Path, PathBuf};

/// A private copy of the example steps and of the sample mail.
fn setup(env: &Env) -> Option<PathBuf> {
    env.copy_examples("steps-copy")
}

const GATED: &str = "inbox.list | inbox.categorize | approve --preview-from-stdin --limit 2 --prompt 'Apply labels?' | inbox.apply --apply";

fn mail_snapshot(env: &Env) -> Vec<(String, String)> {
    let mut files: Vec<_> = walk(&env.work_path("mail"));
    files.sort();
    files
}

fn walk(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push((
                p.display().to_string(),
                std::fs::read_to_string(&p).unwrap_or_default(),
            ));
        }
    }
    out
}

#[test]
fn gated_example_pipeline_applies_only_after_approval() {
    let env = Env::new();
    let Some(steps) = setup(&env) else { return };
    let steps = steps.to_str().unwrap();
    let before = mail_snapshot(&env);
    let r = env.run(&[
        "run",
        "--mode",
        "tool",
        "--steps",
        steps,
        "--allow-write",
        "mail",
        GATED,
    ]);
    let v = r.json();
    assert_eq!(v["status"], "needs_approval", "{r:?}");
    assert_eq!(
        v["requiresApproval"]["items"].as_array().map(Vec::len),
        Some(10)
    );
    assert!(v["requiresApproval"]["preview"]
        .as_str()
        .unwrap()
        .contains("\"category\""));
    assert_eq!(
        mail_snapshot(&env),
        before,
        "nothing is written before the approval"
    );

    let done = env.run(&["resume", "--token", &token_of(&v), "--approve", "yes"]);
    assert_eq!(done.json()["status"], "ok", "{done:?}");
    assert_ne!(
        mail_snapshot(&env),
        before,
        "the approved changes were applied"
    );
    assert!(
        env.state_files().iter().all(|f| f == "cache"),
        "{:?}",
        env.state_files()
    );
}

#[test]
fn without_a_grant_nothing_runs() {
    let env = Env::new();
    let Some(steps) = setup(&env) else { return };
    let r = env.run(&[
        "run",
        "--mode",
        "tool",
        "--steps",
        steps.to_str().unwrap(),
        GATED,
    ]);
    assert_eq!(r.code, 1, "{r:?}");
    let msg = r.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(msg.contains("needs read access to /mail"), "{msg}");
}

#[test]
fn resume_refuses_a_swapped_component_and_keeps_the_token() {
    let env = Env::new();
    let Some(steps) = setup(&env) else { return };
    let steps_s = steps.to_str().unwrap();
    let before = mail_snapshot(&env);
    let v = env
        .run(&[
            "run",
            "--mode",
            "tool",
            "--steps",
            steps_s,
            "--allow-write",
            "mail",
            GATED,
        ])
        .json();
    let token = token_of(&v);

    // Swap inbox.apply for other code while the run waits for approval.
    let apply = steps.join("inbox_apply.wasm");
    let original = std::fs::read(&apply).unwrap();
    std::fs::copy(steps.join("email_triage.wasm"), &apply).unwrap();
    let r = env.run(&["resume", "--token", &token, "--approve", "yes"]);
    assert_eq!(r.code, 1, "{r:?}");
    let msg = r.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(msg.contains("changed since the run paused"), "{msg}");
    assert_eq!(mail_snapshot(&env), before, "nothing ran");

    // The honest component back: the same token still works.
    std::fs::write(&apply, original).unwrap();
    let r = env.run(&["resume", "--token", &token, "--approve", "yes"]);
    assert_eq!(r.json()["status"], "ok", "{r:?}");
}

#[test]
fn inbox_triage_workflow_pauses_with_the_plan_then_applies() {
    let env = Env::new();
    let Some(_) = setup(&env) else { return };
    let workflow =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/workflows/inbox-triage.lobster");
    let before = mail_snapshot(&env);
    let r = env.run(&[
        "run",
        "--mode",
        "tool",
        "--allow-write",
        "mail",
        workflow.to_str().unwrap(),
    ]);
    let v = r.json();
    assert_eq!(v["status"], "needs_approval", "{r:?}");
    assert_eq!(
        v["requiresApproval"]["prompt"],
        "Label and file these messages?"
    );
    let plan = v["requiresApproval"]["items"].as_array().unwrap();
    assert_eq!(plan.len(), 10);
    assert!(plan.iter().all(|p| p["applied"] == false), "{plan:?}");
    assert_eq!(mail_snapshot(&env), before, "the plan step writes nothing");

    let done = env.run(&["resume", "--token", &token_of(&v), "--approve", "yes"]);
    assert_eq!(done.json()["status"], "ok", "{done:?}");
    assert!(
        env.work_path("mail/finance/003-invoice.eml").is_file(),
        "messages were filed"
    );
}
