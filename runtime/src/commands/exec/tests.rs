//! `exec`'s tests: argument rules, stdin encodings, shell selection,
//! streamed JSON and lines, failures, caps and timeouts.

use super::*;
use crate::executor::{run_pipeline, Outcome};
use crate::kernel::{Context, Mode};
use crate::state::StateStore;
use serde_json::json;
use std::sync::Arc;

#[test]
fn examples() {
    super::super::examples::check_examples(&super::Exec);
}

fn ctx(dir: &std::path::Path) -> Context {
    let mut ctx = crate::commands::test_context(Mode::Tool, StateStore::new(dir.join("state")));
    ctx.cwd = dir.to_path_buf();
    ctx
}

fn run_in(ctx: &Context, pipeline: &str, input: Vec<Item>) -> Result<Vec<Item>> {
    let pipeline = crate::dsl::parse(pipeline)?;
    match run_pipeline(&pipeline, 0, input, ctx)? {
        Outcome::Completed { items, .. } => Ok(items),
        other => panic!("unexpected outcome {other:?}"),
    }
}

fn run(pipeline: &str, input: Vec<Item>) -> Result<Vec<Item>> {
    let dir = tempfile::tempdir().unwrap();
    run_in(&ctx(dir.path()), pipeline, input)
}

fn err(pipeline: &str) -> String {
    run(pipeline, vec![]).unwrap_err().to_string()
}

fn plan(pipeline: &str) -> Result<Plan> {
    Plan::from_args(&crate::dsl::parse(pipeline).unwrap().stages[0].args)
}

#[test]
fn a_command_is_required() {
    for p in [
        "exec",
        "exec --json",
        "exec --shell",
        "exec --shell=",
        "exec --stdin raw",
    ] {
        assert_eq!(err(p), "exec requires a command", "{p}");
    }
    // `--json` is a switch (the current reference's parser): it leaves the
    // command alone. Other flags stay greedy.
    assert_eq!(
        run(r#"exec --json "echo [1]""#, vec![]).unwrap(),
        vec![json!(1)]
    );
    assert_eq!(err(r#"exec --stdin "echo [1]""#), "exec requires a command");
}

#[test]
fn bad_stdin_mode_is_caught_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx(dir.path());
    let marker = dir.path().join("ran");
    let text = format!(
        "exec --shell \"touch '{}'\" | exec --stdin XML cat",
        marker.display()
    );
    let e = run_in(&ctx, &text, vec![]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "exec --stdin must be raw, json, or jsonl (got xml)"
    );
    assert!(e.span().is_some());
    assert!(!marker.exists());
    // A missing command wins over a bad mode, as in the reference.
    assert_eq!(err("exec --stdin nope"), "exec requires a command");
}

#[test]
fn shell_selection() {
    let p = plan("exec --shell \"echo a\"").unwrap();
    assert_eq!(p.shell_line.as_deref(), Some("echo a"));
    let p = plan("exec \"echo a\"").unwrap();
    assert_eq!(p.shell_line.as_deref(), Some("echo a"));
    let p = plan("exec echo a").unwrap();
    assert_eq!(
        (p.shell_line, p.argv),
        (None, vec!["echo".into(), "a".into()])
    );
    // A tab counts as whitespace; so does U+3000 (JavaScript `\s`).
    assert!(plan("exec \"a\tb\"").unwrap().shell_line.is_some());
    assert!(plan("exec a\u{3000}b").unwrap().shell_line.is_some());
    assert!(plan("exec a\u{85}b").unwrap().shell_line.is_none());
    // Bare `--shell` runs the first positional through the shell.
    let p = plan("exec --shell \"echo x\" y").unwrap();
    assert_eq!(p.shell_line.as_deref(), Some("echo x"));
    let p = plan("exec a --shell").unwrap();
    assert_eq!(p.shell_line.as_deref(), Some("a"));
    // Bare `--stdin` is not a mode.
    assert_eq!(plan("exec --stdin").map(|p| p.stdin).ok(), None);
    assert_eq!(plan("exec cat --stdin").unwrap().stdin, None);
    assert_eq!(
        plan("exec --stdin JsonL cat").unwrap().stdin,
        Some(StdinMode::Jsonl)
    );
}

#[test]
fn argv_and_shell_forms_run() {
    assert_eq!(
        run("exec printf '%s|' 'a b' c", vec![]).unwrap(),
        vec![json!("a b|c|")]
    );
    assert_eq!(
        run("exec --shell \"echo one; echo two\"", vec![]).unwrap(),
        vec![json!("one"), json!("two")]
    );
}

#[test]
fn stdin_encodings() {
    let items = vec![json!("s"), json!({"a": [1, null]}), json!(2.0)];
    assert_eq!(
        encode_stdin(&items, StdinMode::Json),
        r#"["s",{"a":[1,null]},2]"#
    );
    assert_eq!(
        encode_stdin(&items, StdinMode::Jsonl),
        "\"s\"\n{\"a\":[1,null]}\n2\n"
    );
    assert_eq!(
        encode_stdin(&items, StdinMode::Raw),
        "s\n{\"a\":[1,null]}\n2"
    );
    assert_eq!(encode_stdin(&[], StdinMode::Json), "[]");
    assert_eq!(encode_stdin(&[], StdinMode::Jsonl), "");
    assert_eq!(encode_stdin(&[], StdinMode::Raw), "");
    // Through a real child, byte for byte (od shows every byte).
    let out = run(
        "exec --stdin raw --shell \"od -An -c | tr -s ' '\"",
        vec![json!("x"), json!(1)],
    )
    .unwrap();
    assert_eq!(out, vec![json!(" x \\n 1")]);
}

#[test]
fn without_stdin_mode_input_is_drained_not_fed() {
    let out = run("exec --shell \"cat; echo done\"", vec![json!("hidden")]).unwrap();
    assert_eq!(out, vec![json!("done")]);
    let out = run(
        "exec --stdin --shell \"cat; echo done\"",
        vec![json!("hidden")],
    )
    .unwrap();
    assert_eq!(out, vec![json!("done")]);
}

#[test]
fn upstream_errors_propagate() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx(dir.path());
    let input: ItemStream =
        Box::new(vec![Ok(json!(1)), Err(Error::runtime("upstream broke"))].into_iter());
    let args = crate::dsl::parse("exec true").unwrap().stages[0]
        .args
        .clone();
    let e = Exec.run(&args, input, &ctx).err().unwrap();
    assert_eq!(e.to_string(), "upstream broke");
}

#[test]
fn epipe_is_not_an_error() {
    let big = vec![json!("x".repeat(1 << 20))];
    assert_eq!(
        run("exec --stdin raw true", big).unwrap(),
        Vec::<Item>::new()
    );
}

#[test]
fn failures_name_stderr_then_stdout_then_the_command() {
    assert_eq!(
        err(r#"exec --shell "echo out; echo '  oops  ' >&2; exit 4""#),
        "exec failed (4): oops"
    );
    assert_eq!(
        err(r#"exec --shell "echo ' out '; exit 2""#),
        "exec failed (2): out"
    );
    assert_eq!(err("exec false"), "exec failed (1): false");
    assert_eq!(err(r#"exec "exit 7""#), "exec failed (7): exit 7");
    assert_eq!(
        err(r#"exec --shell "kill -9 $$""#),
        "exec failed (null): kill -9 $$"
    );
}

#[test]
fn missing_program_or_shell() {
    assert_eq!(
        err("exec lobster-no-such-program-xyz --flagless"),
        "exec command not found: lobster-no-such-program-xyz"
    );
    let dir = tempfile::tempdir().unwrap();
    let mut ctx = ctx(dir.path());
    let mut env = (*ctx.env).clone();
    env.insert("LOBSTER_SHELL".into(), "/no/such/shell".into());
    ctx.env = Arc::new(env);
    let e = run_in(&ctx, "exec --shell \"echo hi\"", vec![]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "exec shell not found; check LOBSTER_SHELL or ComSpec"
    );
}

#[test]
fn json_output() {
    assert_eq!(
        run(r#"exec --json --shell "printf ' \n[1,\"a\"]\n\n'""#, vec![]).unwrap(),
        vec![json!(1), json!("a")]
    );
    assert_eq!(
        run(r#"exec --json --shell "echo 21""#, vec![]).unwrap(),
        vec![json!(21)]
    );
    assert_eq!(
        run(r#"exec --json=yes --shell "echo []""#, vec![]).unwrap(),
        Vec::<Item>::new()
    );
    let e = err(r#"exec --json --shell "echo nope""#);
    assert!(
        e.starts_with("exec --json could not parse stdout as JSON: "),
        "{e}"
    );
}

#[test]
fn lines_split_on_crlf_and_drop_empties() {
    assert_eq!(
        run(r#"exec --shell "printf 'x\r\ny\r\n'""#, vec![]).unwrap(),
        vec![json!("x"), json!("y")]
    );
}

#[test]
fn stderr_of_a_successful_child_is_discarded() {
    assert_eq!(
        run(r#"exec --shell "echo noise >&2; echo ok""#, vec![]).unwrap(),
        vec![json!("ok")]
    );
}

#[test]
fn output_cap_applies() {
    let dir = tempfile::tempdir().unwrap();
    let mut ctx = ctx(dir.path());
    ctx.limits.max_output_bytes = Some(1024);
    let e = run_in(&ctx, r#"exec --shell "yes | head -c 2000000""#, vec![]).unwrap_err();
    assert_eq!(e.to_string(), "lobster stdout exceeded maxStdoutBytes");
}

#[test]
fn timeout_surfaces_as_the_run_error() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx(dir.path());
    ctx.cancel
        .arm_deadline(std::time::Duration::from_millis(200));
    let start = std::time::Instant::now();
    let e = run_in(&ctx, r#"exec --shell "sleep 30 & wait""#, vec![]).unwrap_err();
    assert_eq!(e.to_string(), "lobster runtime timed out");
    assert!(start.elapsed() < std::time::Duration::from_secs(5));
}

#[test]
fn js_whitespace_and_trim() {
    assert_eq!(js_trim("\u{FEFF}\u{a0} x \n\t"), "x");
    assert_eq!(js_trim("\u{85}x"), "\u{85}x");
}
