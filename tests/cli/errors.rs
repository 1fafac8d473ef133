//! Parse and runtime errors: messages, carets, exit codes, and validation
//! of the whole pipeline before anything runs.

use crate::common::Env;
use serde_json::json;

#[test]
fn parse_error_in_tool_mode_is_an_envelope_with_exit_2() {
    let env = Env::new();
    let r = env.tool("exec 'unclosed");
    assert_eq!(r.code, 2);
    assert_eq!(
        r.json(),
        json!({"protocolVersion":1,"ok":false,"error":{"type":"parse_error","message":"Unclosed quote"}})
    );
    let r = env.tool("head || head");
    assert_eq!(r.json()["error"]["message"], "Empty command stage");
    let r = env.tool("   ");
    assert_eq!(r.json()["error"]["message"], "Empty pipeline");
}

#[test]
fn parse_error_in_human_mode_points_at_the_character() {
    let env = Env::new();
    let r = env.run(&["head --n 1 | exec 'oops"]);
    assert_eq!(r.code, 2);
    assert_eq!(r.stdout, "");
    assert_eq!(
        crate::common::without_run_line(&r.stderr),
        "Parse error: Unclosed quote\n  head --n 1 | exec 'oops\n                    ^^^^^\n"
    );
}

#[test]
fn unknown_command_in_stage_3_runs_nothing() {
    let env = Env::new();
    let marker = env.work_path("side-effect");
    let pipeline = format!(
        "exec --shell 'touch {}' | head | sortt --key a",
        marker.display()
    );
    let r = env.run(&[&pipeline]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.starts_with("Error: Unknown command: sortt\n"),
        "{r:?}"
    );
    assert!(r.stderr.contains("^^^^^"), "caret under the name: {r:?}");
    assert!(r.stderr.contains("did you mean `sort`?"), "{r:?}");
    assert!(!marker.exists(), "stage 1 must not run");
    let r = env.tool(&pipeline);
    assert_eq!(
        r.json()["error"],
        json!({"type":"runtime_error","message":"Unknown command: sortt"})
    );
    assert!(!marker.exists());
}

#[test]
fn bad_arguments_in_a_later_stage_run_nothing() {
    let env = Env::new();
    let marker = env.work_path("side-effect");
    let r = env.tool(&format!(
        "exec --shell 'touch {}' | head --n -3",
        marker.display()
    ));
    assert_eq!(r.code, 1);
    assert_eq!(
        r.json()["error"]["message"],
        "head --n must be a non-negative number"
    );
    assert!(!marker.exists());
}

#[test]
fn runtime_error_exit_1() {
    let env = Env::new();
    let r = env.run(&["exec --shell 'echo boom >&2; exit 3'"]);
    assert_eq!(
        (r.code, crate::common::without_run_line(&r.stderr)),
        (1, "Error: exec failed (3): boom\n")
    );
    let r = env.tool("exec --shell 'exit 4'");
    assert_eq!(r.code, 1);
    assert_eq!(r.json()["error"]["type"], "runtime_error");
}

#[test]
fn unknown_mode_is_an_error_not_human_mode() {
    let env = Env::new();
    let r = env.run(&["run", "--mode", "robot", "head"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .starts_with("Parse error: run --mode must be human or tool (got \"robot\")"),
        "{r:?}"
    );
    let r = env.run(&["run", "--mode=", "head"]);
    assert_eq!(r.code, 2, "{r:?}");
}

#[test]
fn workflow_file_errors_are_clear() {
    let env = Env::new();
    let r = env.run(&["run", "--file", "missing.lobster"]);
    assert_eq!(
        (r.code, r.stderr.as_str()),
        (2, "Parse error: Workflow file not found: missing.lobster\n")
    );
    std::fs::write(env.work_path("wf.txt"), "steps: []").unwrap();
    let r = env.run(&["run", "--file", "wf.txt"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .contains("must end in .lobster, .yaml, .yml or .json"),
        "{r:?}"
    );
}
