//! The tool envelope: exact keys, order, JSON formatting; one document on stdout.

use crate::common::Env;
use serde_json::json;

#[test]
fn ok_envelope_is_byte_exact() {
    let env = Env::new();
    let r = env.tool(&env.source(r#"[1,{"b":2.0,"a":1e21}]"#));
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(
        r.stdout,
        "{\n  \"protocolVersion\": 1,\n  \"ok\": true,\n  \"status\": \"ok\",\n  \"output\": [\n    1,\n    {\n      \"b\": 2,\n      \"a\": 1e+21\n    }\n  ],\n  \"requiresApproval\": null,\n  \"requiresInput\": null\n}\n"
    );
}

#[test]
fn renderer_output_goes_into_the_envelope() {
    let env = Env::new();
    for renderer in ["json", "table"] {
        let r = env.tool(&format!("{} | {renderer}", env.source(r#"[{"a":1}]"#)));
        assert_eq!(r.code, 0, "{r:?}");
        let v = r.json();
        assert_eq!(v["output"], json!([{"a": 1}]), "{renderer}");
    }
}

#[test]
fn human_mode_prints_items_or_rendered_text() {
    let env = Env::new();
    let r = env.run(&["exec --json --shell 'echo [1,2]'"]);
    assert_eq!((r.code, r.stdout.as_str()), (0, "[\n  1,\n  2\n]\n"));
    let r = env.run(&["exec --json --shell 'echo []'"]);
    assert_eq!(r.stdout, "[]\n");
    let r = env.run(&[&format!("{} | table", env.source(r#"[{"a":1}]"#))]);
    assert_eq!(r.stdout, "a  \n---\n1  \n");
}

#[test]
fn argv_elements_are_joined_with_spaces() {
    let env = Env::new();
    let r = env.run(&[
        "run", "--mode", "tool", "exec", "--json", "--shell", "echo [7]",
    ]);
    // Joined without re-quoting: `exec --json --shell echo [7]`, so the shell line is
    // `echo`, its empty stdout parses as null, and `[7]` is a stray positional.
    assert_eq!(r.json()["output"], json!([null]), "{r:?}");
    let r = env.run(&[
        "run",
        "--mode",
        "tool",
        "exec --json --shell 'echo [7]'",
        "|",
        "head --n 1",
    ]);
    assert_eq!(r.json()["output"], json!([7]));
}

#[test]
fn version_and_help() {
    let env = Env::new();
    let r = env.run(&["version"]);
    assert_eq!(r.stdout.trim(), env!("CARGO_PKG_VERSION"));
    for args in [&[][..], &["--help"], &["-h"], &["help"]] {
        let r = env.run(args);
        assert_eq!(r.code, 0);
        assert!(
            r.stdout
                .starts_with("lobster — OpenClaw-native typed shell\n"),
            "{args:?}: {r:?}"
        );
    }
    let r = env.run(&["help", "head"]);
    assert_eq!(
        r.stdout,
        "head — take first N items\n\nUsage:\n  head --n 10\n"
    );
    let r = env.run(&["help", "nope"]);
    assert_eq!(
        (r.code, r.stderr.lines().next()),
        (2, Some("Unknown command: nope"))
    );
    let r = env.run(&["run", "--help"]);
    assert!(r.stdout.starts_with("lobster run"), "{r:?}");
    let r = env.run(&["resume", "--help"]);
    assert!(r.stdout.starts_with("lobster resume"), "{r:?}");
    let r = env.run(&["graph", "--help"]);
    assert!(r.stdout.starts_with("lobster graph"), "{r:?}");
}

#[test]
fn help_inside_the_pipeline_belongs_to_the_pipeline() {
    let env = Env::new();
    // `--help` after the pipeline began is the stage's flag, not the CLI's:
    // `head` has no such flag, so the plan refuses it and names the help.
    let r = env.run(&[
        "run",
        "--mode",
        "tool",
        "exec --json --shell 'echo [1]'",
        "|",
        "head",
        "--help",
    ]);
    assert_eq!(r.code, 2, "{r:?}");
    assert_eq!(r.json()["error"]["message"], "Unknown flag --help for head");
    let r = env.run(&["exec --json --shell 'echo [1]' | head --help"]);
    assert!(
        r.stderr
            .contains("hint: head takes --n (`lobster help head`)"),
        "{r:?}"
    );
}

#[test]
fn doctor_reports_tool_mode() {
    let env = Env::new();
    let r = env.run(&["doctor", "a", "b"]);
    assert_eq!(r.code, 0, "{r:?}");
    let v = r.json();
    assert_eq!(v["output"][0]["toolMode"], json!(true));
    assert_eq!(v["output"][0]["protocolVersion"], json!(1));
    assert_eq!(v["output"][0]["notes"], json!(["a", "b"]));
}

#[test]
fn dry_run_prints_the_plan_and_runs_nothing() {
    let env = Env::new();
    let marker = env.work_path("ran");
    let pipeline = format!(
        "exec --shell 'touch {}' | where a=1 | head --n 2",
        marker.display()
    );
    let r = env.run(&["run", "--dry-run", &pipeline]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.stdout, "");
    assert!(
        r.stderr
            .starts_with("[DRY RUN] Pipeline (3 stages):\n  1. exec  args: shell=touch "),
        "{r:?}"
    );
    assert!(
        r.stderr
            .ends_with("  2. where  args: a=1\n  3. head  args: n=2\n"),
        "{r:?}"
    );
    assert!(!marker.exists());
}
