//! Typos never pass silently: an unknown flag is refused when the plan is
//! checked, before anything runs, through every door, with the nearest
//! declared flag and a caret under the flag; raw arguments stay raw.

use crate::common::{err_message, test_guest, without_run_line, write, Env};
use serde_json::json;

#[test]
fn an_unknown_flag_is_refused_before_anything_runs_with_a_caret() {
    let env = Env::new();
    let marker = env.work_path("ran");
    let pipeline = format!("exec --shell 'touch {}' | head --nn 1", marker.display());
    let r = env.run(&[&pipeline]);
    assert_eq!(r.code, 2, "{r:?}");
    assert_eq!(r.stdout, "");
    let caret_at = pipeline.find("--nn").unwrap();
    assert_eq!(
        without_run_line(&r.stderr),
        format!(
            "Parse error: Unknown flag --nn for head (did you mean --n?)\n  {pipeline}\n  {}^^^^\n  hint: head takes --n (`lobster help head`)\n",
            " ".repeat(caret_at)
        )
    );
    assert!(!marker.exists(), "stage 1 must not run");
    // Tool mode: the same message, with the suggestion, in the envelope.
    let r = env.tool(&pipeline);
    assert_eq!(r.code, 2);
    assert_eq!(
        r.json()["error"],
        json!({"type": "parse_error", "message": "Unknown flag --nn for head (did you mean --n?)"})
    );
    assert!(!marker.exists());
}

#[test]
fn the_issues_typos_are_refused() {
    let env = Env::new();
    let src = env.source(r#"[{"number": 3}, {"number": 1}]"#);
    for (stage, message) in [
        (
            "sort --kye number",
            "Unknown flag --kye for sort (did you mean --key?)",
        ),
        (
            "approve --limt 2 --prompt ok",
            "Unknown flag --limt for approve (did you mean --limit?)",
        ),
        ("json --pretty", "Unknown flag --pretty for json"),
        (
            "openclaw.invoke --dryrun --tool t --action a",
            "Unknown flag --dryrun for openclaw.invoke (did you mean --dry-run?)",
        ),
        (
            "exec --jsn cat x",
            "Unknown flag --jsn for exec (did you mean --json?)",
        ),
    ] {
        let r = env.tool(&format!("{src} | {stage}"));
        assert_eq!(r.code, 2, "{stage}: {r:?}");
        assert_eq!(err_message(&r), message, "{stage}");
    }
    // A command without flags says so.
    let r = env.run(&["json --pretty"]);
    assert!(r.stderr.contains("hint: json takes no flags"), "{r:?}");
}

#[test]
fn the_references_other_spellings_are_accepted() {
    let env = Env::new();
    let src = env.source(r#"["a", "b", "c"]"#);
    for stage in [
        "approve --previewFromStdin --previewLimit 2 --prompt ok",
        "approve --preview-from-stdin --preview-limit 2 --prompt ok",
        "approve --preview-from-stdin --limit 2 --emit",
    ] {
        let r = env.tool(&format!("{src} | {stage}"));
        assert_eq!(r.code, 0, "{stage}: {r:?}");
        assert_eq!(r.json()["requiresApproval"]["preview"], "a\nb", "{stage}");
    }
    let r = env.tool(&format!("{src} | ask --subjectFromStdin --prompt p"));
    assert_eq!(r.json()["status"], "needs_input", "{r:?}");
    // dryRun/itemKey/sessionKey are accepted by the plan (the call itself
    // then needs a gateway; only the flags are under test here).
    let r = env.tool("openclaw.invoke --dryRun --itemKey x --sessionKey k --tool t --action a");
    assert_eq!(r.json()["error"]["type"], "runtime_error", "{r:?}");
    assert!(!err_message(&r).contains("Unknown flag"), "{r:?}");
}

#[test]
fn exec_flags_after_the_command_are_the_commands() {
    let env = Env::new();
    // As the reference: `--color hi` after the command is not refused
    // (greedy parsing gives it to exec, which passes nothing on).
    let r = env.tool("exec echo a --color hi");
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.json()["output"], json!(["a"]));
    let r = env.tool("exec --json --shell 'echo [1]' | exec --json --stdin json cat --whatever");
    assert_eq!(r.code, 0, "{r:?}");
}

#[test]
fn workflow_pipeline_steps_and_lobster_call_refuse_too() {
    let env = Env::new();
    let marker = env.work_path("ran");
    write(
        &env,
        "wf.lobster",
        &format!(
            "steps:\n  - id: first\n    run: touch {}\n  - id: second\n    pipeline: exec --json --shell 'echo [3,1]' | sort --kye x\n",
            marker.display()
        ),
    );
    let r = env.run(&["run", "--mode", "tool", "wf.lobster"]);
    assert_ne!(r.code, 0, "{r:?}");
    assert!(
        err_message(&r).contains("Unknown flag --kye for sort (did you mean --key?)"),
        "{r:?}"
    );
    let call =
        json!({"action": "run", "pipeline": "exec --json --shell 'echo [1,2]' | head --nn 1"});
    let r = env.run(&["call", &call.to_string()]);
    assert_eq!(r.code, 2, "{r:?}");
    assert_eq!(
        err_message(&r),
        "Unknown flag --nn for head (did you mean --n?)"
    );
}

#[test]
fn a_described_step_refuses_flags_its_describe_does_not_list() {
    let env = Env::new();
    let Some(steps) = env.copy_examples("steps") else {
        return;
    };
    let steps = steps.to_string_lossy().to_string();
    let r = env.run(&[
        "--steps",
        &steps,
        "--allow-read",
        "mail",
        "inbox.list --limt 2",
    ]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.starts_with(
            "Parse error: Unknown flag --limt for inbox.list (did you mean --limit?)\n  inbox.list --limt 2\n             ^^^^^^\n"
        ),
        "{r:?}"
    );
    assert!(
        r.stderr
            .contains("hint: inbox.list takes --folder, --label, --limit"),
        "{r:?}"
    );
    // Its declared flag works.
    let r = env.run(&[
        "run",
        "--mode",
        "tool",
        "--steps",
        &steps,
        "--allow-read",
        "mail",
        "inbox.list --limit 2",
    ]);
    assert_eq!(
        r.json()["output"].as_array().map(Vec::len),
        Some(2),
        "{r:?}"
    );
}

#[test]
fn a_wasi_command_step_keeps_its_raw_arguments() {
    let env = Env::new();
    let Some(echo) = test_guest("cmd-echo") else {
        return;
    };
    std::fs::create_dir_all(env.work_path("steps")).unwrap();
    std::fs::copy(echo, env.work_path("steps/cmd-echo.wasm")).unwrap();
    let r = env.tool("exec --json --shell 'echo [1]' | cmd-echo --anything goes");
    assert_eq!(r.code, 0, "{r:?}");
    let argv = &r.json()["output"][0]["argv"];
    assert!(
        argv.as_array()
            .is_some_and(|a| a.iter().any(|w| w == "--anything=goes")),
        "{r:?}"
    );
}
