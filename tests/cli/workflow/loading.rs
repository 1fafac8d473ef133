//! A workflow file before it runs: loading YAML and JSON, args and env,
//! clear errors for a missing file or a bad extension, validation with
//! positions, `graph` and `--dry-run`.

use super::{error_message, ok_output};
use crate::common::Env;
use serde_json::json;

// ---------------------------------------------------------------- loading

#[test]
fn yaml_and_json_files_run_with_args_and_env() {
    let env = Env::new();
    let f = env.wf(
        "a.lobster",
        "args:\n  who:\n    default: world\nenv:\n  GREETING: \"hi $LOBSTER_ARG_WHO\"\n  PORT: 8080\nsteps:\n  - id: a\n    run: echo \"$GREETING ${who} $PORT $LOBSTER_ARGS_JSON\"\n",
    );
    let r = env.wf_tool(&f, None);
    assert_eq!(
        ok_output(&r),
        json!(["hi world world 8080 {\"who\":\"world\"}\n"])
    );
    let r = env.wf_tool(&f, Some(r#"{"who":"ann","extra":1}"#));
    assert_eq!(
        ok_output(&r),
        json!(["hi ann ann 8080 {\"who\":\"ann\",\"extra\":1}\n"])
    );
    let j = env.wf(
        "b.json",
        r#"{"steps":[{"id":"n","run":"echo 21"},{"id":"m","run":"cat","stdin":"$n.json"}]}"#,
    );
    assert_eq!(ok_output(&env.wf_tool(&j, None)), json!([21]));
    // A single positional that is a workflow file runs it; .yml and .yaml too.
    let y = env.wf("c.yml", "steps:\n  - id: a\n    run: echo '[1,2]'\n");
    let r = env.run(&["run", "--mode", "tool", &y]);
    assert_eq!(ok_output(&r), json!([1, 2]));
    let y = env.wf("d.YAML", "steps:\n  - id: a\n    run: echo yes\n");
    let r = env.run(&[&y]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.json(), json!(["yes\n"]));
}

#[test]
fn missing_file_and_bad_extension_are_clear_errors() {
    let env = Env::new();
    let r = env.run(&["run", "--file", "nope.lobster"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains("Workflow file not found: nope.lobster"),
        "{r:?}"
    );
    std::fs::write(env.work_path("x.txt"), "steps: []").unwrap();
    let r = env.run(&["run", "--mode", "tool", "--file", "x.txt"]);
    assert_eq!(r.code, 2);
    assert_eq!(
        error_message(&r),
        "Workflow file must end in .lobster, .yaml, .yml or .json: x.txt"
    );
    let f = env.wf("list.lobster", "- a\n- b\n");
    let r = env.wf_tool(&f, None);
    assert_eq!(r.code, 2);
    assert!(error_message(&r).ends_with(":1:1: Workflow file must be a JSON/YAML object"));
    let f = env.wf("broken.yaml", "steps:\n  - id: [\n");
    let r = env.wf_tool(&f, None);
    assert_eq!(r.code, 2);
    assert!(error_message(&r).contains("broken.yaml:"), "{r:?}");
}

#[test]
fn args_json_must_be_an_object_and_args_are_checked() {
    let env = Env::new();
    let f = env.wf(
        "a.lobster",
        "args:\n  n:\n    type: integer\n    required: true\n  tag:\n    type: string\n    default: x\nsteps:\n  - id: a\n    run: echo ${n}\n",
    );
    for bad in ["[1]", "3", "\"s\"", "null"] {
        let r = env.wf_tool(&f, Some(bad));
        assert_eq!(r.code, 2, "{bad}");
        assert_eq!(error_message(&r), "run --args-json must be a JSON object");
    }
    let r = env.wf_tool(&f, Some("{"));
    assert_eq!(error_message(&r), "run --args-json must be valid JSON");
    let r = env.wf_tool(&f, None);
    assert_eq!(r.code, 2);
    assert_eq!(error_message(&r), "Workflow arg n is required");
    let r = env.wf_tool(&f, Some(r#"{"n":"7","tag":1}"#));
    assert_eq!(
        error_message(&r),
        "Workflow arg n must be an integer (got string)\nWorkflow arg tag must be a string (got number)"
    );
    assert_eq!(ok_output(&env.wf_tool(&f, Some(r#"{"n":7}"#))), json!([7]));
}

// ------------------------------------------------------------- validation

#[test]
fn validation_reports_every_problem_with_positions_and_runs_nothing() {
    let env = Env::new();
    let marker = env.work_path("ran");
    let f = env.wf(
        "bad.lobster",
        &format!(
            "steps:\n  - id: a\n    run: touch {m}\n    timout_ms: 5\n  - id: a\n    run: echo\n    timeout_ms: 1.5\n  - id: c\n    run: cat\n    stdin: $nope.stdout\n    when: $a.json ==\n  - id: d\n    run: echo $e.stdout\n  - id: e\n    run: echo\n    on_error: maybe\n",
            m = marker.display()
        ),
    );
    let r = env.run(&["run", "--file", &f]);
    assert_eq!(r.code, 2, "{r:?}");
    let expected = [
        "bad.lobster:4:5: unknown field `timout_ms` in step a (did you mean `timeout_ms`?)",
        "bad.lobster:5:9: Duplicate workflow step id: a",
        "bad.lobster:7:17: Workflow step a timeout_ms must be a positive integer between 1 and 2147483647",
        "bad.lobster:10:12: Workflow step c: Unknown step reference: nope.stdout",
        "bad.lobster:11:11: Workflow step c: Unsupported condition: $a.json ==",
        "bad.lobster:13:10: Workflow step d references step e, which has not run yet (e.stdout)",
        "bad.lobster:16:15: Workflow step e on_error must be \"stop\", \"continue\", or \"skip_rest\"",
    ];
    for line in expected {
        assert!(r.stderr.contains(line), "missing {line:?} in\n{}", r.stderr);
    }
    assert!(!marker.exists(), "nothing may run when validation fails");

    let f = env.wf("empty.lobster", "name: x\nsteps: []\n");
    let r = env.wf_tool(&f, None);
    assert!(
        error_message(&r)
            .ends_with("empty.lobster:2:1: Workflow file requires a non-empty steps array"),
        "{r:?}"
    );
    let f = env.wf("nosteps.json", "{\"name\": \"x\"}");
    let r = env.wf_tool(&f, None);
    assert!(
        error_message(&r)
            .ends_with("nosteps.json:1:1: Workflow file requires a non-empty steps array"),
        "{r:?}"
    );
    let f = env.wf("top.lobster", "stepz:\n  - id: a\n    run: echo\n");
    let r = env.wf_tool(&f, None);
    assert!(
        error_message(&r).contains(
            "top.lobster:1:1: unknown field `stepz` in the workflow (did you mean `steps`?)"
        ),
        "{r:?}"
    );
    let f = env.wf(
        "noid.lobster",
        "steps:\n  - run: echo\n  - id: b\n    stdin: x\n",
    );
    let msg = error_message(&env.wf_tool(&f, None));
    assert!(
        msg.contains("noid.lobster:2:5: Workflow step requires an id"),
        "{msg}"
    );
    assert!(msg.contains("noid.lobster:3:5: Workflow step b requires run, command, pipeline, uses, workflow, parallel, for_each, approval, or input"), "{msg}");
    let f = env.wf(
        "two.lobster",
        "steps:\n  - id: a\n    run: echo\n    pipeline: head\n",
    );
    let msg = error_message(&env.wf_tool(&f, None));
    assert!(
        msg.contains("two.lobster:4:5: Workflow step a can only define one of"),
        "{msg}"
    );
    let f = env.wf(
        "pipe.lobster",
        "steps:\n  - id: a\n    pipeline: exec --shell 'echo' | nosuchcmd\n",
    );
    let msg = error_message(&env.wf_tool(&f, None));
    assert!(
        msg.contains(
            "pipe.lobster:3:15: Workflow step a pipeline references unknown command: nosuchcmd"
        ),
        "{msg}"
    );
}

// ------------------------------------------------------- graph and dry-run

#[test]
fn graph_formats_and_errors() {
    let env = Env::new();
    let f = env.wf(
        "g.lobster",
        "args:\n  who:\n    default: me\nsteps:\n  - id: fetch\n    run: echo \"<${who}|x>\"\n  - id: ok\n    stdin: $fetch.stdout\n    approval: go?\n  - id: go\n    when: $ok.approved\n    run: cat\n",
    );
    let r = env.run(&["graph", "--file", &f]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(
        r.stdout,
        "flowchart TD\n  fetch[\"fetch<br>run: echo &quot;&lt;me&#124;x&gt;&quot;\"]\n  ok{\"ok<br>approval gate\"}\n  go[\"go<br>run: cat\"]\n\n  fetch -->|next| ok\n  fetch -->|stdin| ok\n  ok -->|next| go\n  ok -->|when: $ok.approved| go\n"
    );
    let r = env.run(&[
        "graph",
        &f,
        "--format",
        "ascii",
        "--args-json",
        r#"{"who":"you"}"#,
    ]);
    assert!(r.stdout.starts_with("Workflow Graph\n\nNodes:\n- fetch [run] (run: echo \"<you|x>\")\n- ok [approval] (approval gate)\n"), "{r:?}");
    let r = env.run(&["graph", "--file", &f, "--format=dot"]);
    assert!(
        r.stdout
            .contains("  \"ok\" [shape=diamond,label=\"ok\\napproval gate\"];\n"),
        "{r:?}"
    );
    let r = env.run(&["graph"]);
    assert_eq!(
        (r.code, r.stderr.as_str()),
        (
            2,
            "Parse error: graph requires a workflow file path (use --file <path>)\n"
        )
    );
    let r = env.run(&["graph", &f, "--format", "svg"]);
    assert_eq!(
        r.stderr,
        "Parse error: graph --format must be one of: mermaid, dot, ascii\n"
    );
    let r = env.run(&["graph", &f, "--args-json", "[1]"]);
    assert_eq!(
        r.stderr,
        "Parse error: graph --args-json must be a JSON object\n"
    );
    let r = env.run(&["graph", &f, "--args-json", "{"]);
    assert_eq!(
        r.stderr,
        "Parse error: graph --args-json must be valid JSON\n"
    );
}

#[test]
fn dry_run_prints_the_plan_and_runs_nothing() {
    let env = Env::new();
    let marker = env.work_path("ran");
    let f = env.wf(
        "d.lobster",
        &format!(
            "args:\n  n:\n    default: 3\nsteps:\n  - id: a\n    run: touch {m} ${{n}}\n    retry:\n      max: 2\n      delay_ms: 5\n    on_error: continue\n  - id: gate\n    approval: ok ${{n}}?\n  - id: b\n    when: $gate.approved\n    run: echo $a.stdout\n    timeout_ms: 50\n  - id: c\n    when: \"!$gate.approved\"\n    run: echo never\n",
            m = marker.display()
        ),
    );
    let r = env.run(&["run", "--dry-run", "--file", &f]);
    assert_eq!((r.code, r.stdout.as_str()), (0, ""), "{r:?}");
    assert!(!marker.exists());
    for line in [
        "[DRY RUN] Would execute 4 steps:",
        "  1. a  [shell]",
        &format!("     run: touch {} 3", marker.display()),
        "     on_error: continue",
        "     retry: up to 2 attempts, fixed backoff (base: 5ms)",
        "  2. gate  [no-op]",
        "     [approval required]",
        "     prompt: ok 3?",
        "  3. b  [shell]",
        "     run: echo $a.stdout",
        "     when: $gate.approved",
        "     timeout: 50ms",
        "  4. c  [skipped — condition: false]",
    ] {
        assert!(r.stderr.contains(line), "missing {line:?} in\n{}", r.stderr);
    }
    // Trailing --dry-run next to a lone workflow path.
    let r = env.run(&["run", &f, "--dry-run"]);
    assert!(
        r.stderr.starts_with("[DRY RUN] Would execute 4 steps:"),
        "{r:?}"
    );
    assert!(!marker.exists());
}
