//! Tamper-proof, exactly-once resume: an edited workflow or sub-workflow or
//! a swapped component refuses the resume, concurrent resumes run the rest
//! once, forged and legacy tokens are rejected, and the working directory
//! and templated sub-workflow paths are those of the pause.

use super::{error_message, ok_output, wasm_setup, MAIL_WORKFLOW};
use crate::common::{token_of, Env, Run};
use serde_json::json;

#[test]
fn a_component_swapped_while_paused_refuses_the_resume() {
    let env = Env::new();
    if wasm_setup(&env).is_none() {
        return;
    }
    let f = env.wf("mail.lobster", MAIL_WORKFLOW);
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
    let t = token_of(&v);
    let apply = env.work_path("steps/inbox_apply.wasm");
    let original = std::fs::read(&apply).unwrap();
    std::fs::copy(env.work_path("steps/email_triage.wasm"), &apply).unwrap();
    let r = env.run(&["resume", "--token", &t, "--approve", "yes"]);
    assert_eq!(r.code, 1);
    assert!(
        error_message(&r).ends_with("inbox_apply.wasm changed since the run paused"),
        "{r:?}"
    );
    std::fs::write(&apply, original).unwrap();
    let r = env.run(&["resume", "--token", &t, "--approve", "yes"]);
    assert_eq!(r.json()["status"], "ok", "{r:?}");
}

// ------------------------------------------------------ tamper-proof resume

#[test]
fn editing_the_workflow_while_paused_refuses_the_resume() {
    let env = Env::new();
    let marker = env.work_path("ran");
    let original =
        "steps:\n  - id: gate\n    approval: Send the report?\n  - id: send\n    run: echo sent\n";
    let f = env.wf("w.lobster", original);
    let t = token_of(&env.wf_tool(&f, None).json());
    // The hidden edit: the approved step now does something else.
    env.wf(
        "w.lobster",
        &format!(
            "steps:\n  - id: gate\n    approval: Send the report?\n  - id: send\n    run: touch {}\n",
            marker.display()
        ),
    );
    let r = env.run(&["resume", "--token", &t, "--approve", "yes"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        error_message(&r).starts_with("Workflow resume refused: ")
            && error_message(&r).ends_with("w.lobster changed since the run paused"),
        "{r:?}"
    );
    assert!(!marker.exists(), "the edited step ran");
    // The token was not spent: restoring the approved file lets it resume.
    env.wf("w.lobster", original);
    let r = env.run(&["resume", "--token", &t, "--approve", "yes"]);
    assert_eq!(ok_output(&r), json!(["sent\n"]));
}

#[test]
fn editing_a_sub_workflow_while_paused_refuses_the_resume() {
    let env = Env::new();
    env.wf("child.lobster", "steps:\n  - id: c\n    run: echo child\n");
    let f = env.wf(
        "parent.lobster",
        "steps:\n  - id: gate\n    approval: go?\n  - id: sub\n    workflow: child.lobster\n",
    );
    let t = token_of(&env.wf_tool(&f, None).json());
    env.wf("child.lobster", "steps:\n  - id: c\n    run: echo evil\n");
    let r = env.run(&["resume", "--token", &t, "--approve", "yes"]);
    assert_eq!(r.code, 1);
    assert!(
        error_message(&r).contains("child.lobster changed since the run paused"),
        "{r:?}"
    );
}

#[test]
fn concurrent_resumes_run_the_rest_exactly_once() {
    concurrent_workflow_resumes(None, 8);
}

#[test]
fn concurrent_resumes_run_the_rest_exactly_once_postgres() {
    let Some(url) = crate::own_pg::pg_url() else {
        return;
    };
    concurrent_workflow_resumes(Some(&url), 50);
}

/// `n` racing `lobster resume` processes on one workflow token, with the
/// store at `store` (`None`: files).
fn concurrent_workflow_resumes(store: Option<&str>, n: usize) {
    let env = Env::with_store(store);
    let f = env.wf(
        "c.lobster",
        "steps:\n  - id: gate\n    approval: once?\n  - id: effect\n    run: echo x >> effects; echo done\n",
    );
    let t = token_of(&env.wf_tool(&f, None).json());
    let children: Vec<_> = (0..n)
        .map(|_| env.spawn(&["resume", "--token", &t, "--approve", "yes"]))
        .collect();
    let runs: Vec<Run> = children
        .into_iter()
        .map(|c| crate::common::finish(c.wait_with_output().unwrap()))
        .collect();
    let wins = runs.iter().filter(|r| r.code == 0).count();
    assert_eq!(wins, 1, "{runs:?}");
    // A loser that looks while the winner still runs is told so (the
    // interrupted-run record); one that looks later finds nothing.
    for r in runs.iter().filter(|r| r.code != 0) {
        let m = error_message(r);
        assert!(
            m == "Workflow resume state not found"
                || m.starts_with(
                    "this run is being resumed right now (after approval at step 1 (gate)"
                ),
            "{m}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(env.work_path("effects")).unwrap(),
        "x\n"
    );
    assert_eq!(env.state_files(), Vec::<String>::new());
}

#[test]
fn forged_and_legacy_workflow_tokens_are_rejected() {
    use base64::Engine as _;
    let env = Env::new();
    let f = env.wf("g.lobster", "steps:\n  - id: gate\n    approval: ok?\n");
    env.wf_tool(&f, None);
    let legacy = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(
        json!({"protocolVersion":1,"v":1,"kind":"workflow-file","filePath":f,"resumeAtIndex":1,"steps":{},"args":{}})
            .to_string(),
    );
    let r = env.run(&["resume", "--token", &legacy, "--approve", "yes"]);
    assert_eq!(
        (r.code, error_message(&r)),
        (2, "Invalid token".to_string())
    );
}

#[test]
fn resumed_steps_run_in_the_original_working_directory() {
    let env = Env::new();
    std::fs::create_dir_all(env.work_path("elsewhere")).unwrap();
    let f = env.wf(
        "w.lobster",
        "steps:\n  - id: gate\n    approval: go?\n  - id: write\n    run: pwd > where.txt\n",
    );
    let t = token_of(&env.wf_tool(&f, None).json());
    let r = crate::common::finish(
        env.command(&["resume", "--token", &t, "--approve", "yes"])
            .current_dir(env.work_path("elsewhere"))
            .output()
            .unwrap(),
    );
    assert_eq!(r.code, 0, "{r:?}");
    assert!(env.work_path("where.txt").exists());
    assert!(!env.work_path("elsewhere/where.txt").exists());
}

#[test]
fn templated_sub_workflow_paths_are_pinned_at_the_pause() {
    let env = Env::new();
    env.wf("child.lobster", "steps:\n  - id: c\n    run: echo child\n");
    let f = env.wf(
        "parent.lobster",
        "args:\n  which:\n    default: child\nsteps:\n  - id: gate\n    approval: go?\n  - id: sub\n    workflow: ${which}.lobster\n",
    );
    let t = token_of(&env.wf_tool(&f, None).json());
    env.wf("child.lobster", "steps:\n  - id: c\n    run: echo evil\n");
    let r = env.run(&["resume", "--token", &t, "--approve", "yes"]);
    assert!(
        error_message(&r).contains("child.lobster changed since the run paused"),
        "{r:?}"
    );
    env.wf("child.lobster", "steps:\n  - id: c\n    run: echo child\n");
    let r = env.run(&["resume", "--token", &t, "--approve", "yes"]);
    assert_eq!(ok_output(&r), json!(["child\n"]));
}
