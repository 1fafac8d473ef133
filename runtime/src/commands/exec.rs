//! `exec`: run a host program (argv) or a shell line, optionally feeding the
//! pipeline input to its stdin, and turn its stdout into items.
//!
//! Spawning, capture, caps and cancellation live in [`crate::process`]; this
//! file is only the reference's argument rules, encodings and error texts.

use super::{Command, Example, FlagSpec, ItemStream, Output, Signature};
use crate::dsl::{Args, FlagValue};
use crate::error::{Error, Result};
use crate::kernel::Context;
use crate::process::{Decoder, Ended, Invocation, Next, OutputStream};
use crate::value::{to_js_json, Item, Lazy};

/// `exec [--json] [--stdin raw|json|jsonl] <command...>` or `exec --shell "<line>"`.
pub struct Exec;

const HELP: &str = "exec — run an OS command\n\nUsage:\n  exec <command...>\n  exec --stdin raw|json|jsonl <command...>\n  exec --json <command...>\n  exec --shell \"<command line>\"\n\nNotes:\n  - With --json, parses stdout as JSON (single value).\n  - With --stdin, writes pipeline input to stdin.\n  - With --shell (or a single arg containing spaces), runs via the system shell.\n  - --json is a switch: it never takes the next word, so `exec --json cat items.json` works.\n    Every other flag takes the next word as its value unless that word starts with --.\n";

const SHELL_NOT_FOUND: &str = "exec shell not found; check LOBSTER_SHELL or ComSpec";

/// How pipeline input reaches the child's stdin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StdinMode {
    /// Strings as-is, other items as JSON, joined with `\n` (no trailing newline).
    Raw,
    /// `JSON.stringify(items)`.
    Json,
    /// One JSON value per line, plus a trailing `\n` when there is any item.
    Jsonl,
}

/// What to run, decided from the arguments alone.
#[derive(Debug, PartialEq)]
struct Plan {
    /// `Some(line)` runs via the shell; `None` runs `argv` directly.
    shell_line: Option<String>,
    argv: Vec<String>,
    json: bool,
    stdin: Option<StdinMode>,
}

impl Plan {
    /// The reference's rules, in its order: a command is required first, the
    /// `--stdin` mode is checked next.
    fn from_args(args: &Args) -> Result<Plan> {
        let cmd = &args.positional;
        // `typeof args.shell === "string"`: a bare `--shell` is `true`, not a line.
        let shell_line = match args.flag("shell") {
            Some(FlagValue::Str(s)) => Some(s.as_str()),
            _ => None,
        };
        let use_shell =
            truthy(args.flag("shell")) || (cmd.len() == 1 && cmd[0].chars().any(is_js_whitespace));
        if cmd.is_empty() && shell_line.is_none_or(str::is_empty) {
            return Err(Error::runtime("exec requires a command"));
        }
        // A bare `--stdin` is not a string, so it means "no stdin"; so does `--stdin=`.
        let stdin = match args.flag("stdin") {
            Some(FlagValue::Str(mode)) if !mode.is_empty() => {
                Some(match mode.to_lowercase().as_str() {
                    "raw" => StdinMode::Raw,
                    "json" => StdinMode::Json,
                    "jsonl" => StdinMode::Jsonl,
                    other => {
                        return Err(Error::runtime(format!(
                            "exec --stdin must be raw, json, or jsonl (got {other})"
                        )))
                    }
                })
            }
            _ => None,
        };
        Ok(Plan {
            // `shellLine ?? cmd[0] ?? ""`: an empty `--shell=` still wins.
            shell_line: use_shell
                .then(|| shell_line.or(cmd.first().map(String::as_str)).unwrap_or(""))
                .map(str::to_string),
            argv: cmd.clone(),
            json: truthy(args.flag("json")),
            stdin,
        })
    }

    /// What `exec failed (…): …` names when the child printed nothing.
    fn display(&self) -> &str {
        match &self.shell_line {
            Some(line) => line,
            None => self.argv.first().map_or("", String::as_str),
        }
    }

    fn invocation(&self) -> Invocation {
        match &self.shell_line {
            Some(line) => Invocation::shell(line.clone()).not_found(SHELL_NOT_FOUND),
            None => {
                let program = self.argv.first().cloned().unwrap_or_default();
                let message = format!("exec command not found: {program}");
                Invocation::argv(program, self.argv.iter().skip(1).cloned()).not_found(message)
            }
        }
    }
}

/// JavaScript `Boolean(value)` of a flag: a bare flag or a non-empty string.
fn truthy(flag: Option<&FlagValue>) -> bool {
    match flag {
        None => false,
        Some(FlagValue::Bool(b)) => *b,
        Some(FlagValue::Str(s)) => !s.is_empty(),
    }
}

/// JavaScript `\s` (and what `String.prototype.trim` removes).
fn is_js_whitespace(c: char) -> bool {
    (c.is_whitespace() && c != '\u{85}') || c == '\u{FEFF}'
}

/// JavaScript `s.trim()`.
fn js_trim(s: &str) -> &str {
    s.trim_matches(is_js_whitespace)
}

/// The bytes `--stdin <mode>` writes for `items`.
fn encode_stdin(items: &[Item], mode: StdinMode) -> String {
    match mode {
        StdinMode::Json => {
            let mut out = String::from("[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&to_js_json(item));
            }
            out.push(']');
            out
        }
        StdinMode::Jsonl => {
            let mut out = String::new();
            for item in items {
                out.push_str(&to_js_json(item));
                out.push('\n');
            }
            out
        }
        StdinMode::Raw => items
            .iter()
            .map(|item| match item {
                Item::String(s) => s.clone(),
                other => to_js_json(other),
            })
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

impl Command for Exec {
    fn signature(&self) -> Signature {
        Signature {
            name: "exec",
            description: "Run an OS command",
            flags: &[
                FlagSpec {
                    name: "shell",
                    value: Some("line"),
                    kind: super::FlagType::Text,
                    description: "Run this command line via the shell (/bin/sh -c, or LOBSTER_SHELL)",
                },
                FlagSpec {
                    name: "json",
                    value: None,
                    kind: super::FlagType::Switch,
                    description: "Parse stdout as JSON (single value; an array becomes items)",
                },
                FlagSpec {
                    name: "stdin",
                    value: Some("raw|json|jsonl"),
                    kind: super::FlagType::Text,
                    description: "Write the pipeline input to the command's stdin in this encoding",
                },
            ],
            positional: Some(
                "command and arguments (a single argument containing whitespace runs via the shell)",
            ),
            side_effects: &["local_exec"],
        }
    }

    fn other_flags(&self) -> super::OtherFlags {
        // `exec gh pr list --json number`: after the command, flags are its own.
        super::OtherFlags::RefuseBeforeCommand
    }

    fn help(&self) -> &'static str {
        HELP
    }

    fn examples(&self) -> &'static [Example] {
        &[
            Example {
                description: "parse stdout as JSON; an array becomes items",
                pipeline: r#"exec --json --shell "echo [1,2]""#,
                input: "[]",
                output: "[1, 2]",
            },
            Example {
                description: "a JSON value that is not an array is one item",
                pipeline: r#"exec --json --shell "echo '{\"a\":1}'""#,
                input: "[]",
                output: r#"[{"a": 1}]"#,
            },
            Example {
                description: "--json is a switch: the program and its arguments follow it",
                pipeline: r#"exec --json echo '[1,"a"]'"#,
                input: "[]",
                output: r#"[1, "a"]"#,
            },
            Example {
                description: "empty stdout with --json is null",
                pipeline: r#"exec --json --shell "true""#,
                input: "[]",
                output: "[null]",
            },
            Example {
                description: "without --json, each non-empty stdout line is a string item",
                pipeline: r#"exec --shell "printf 'a\n\nb\n'""#,
                input: "[]",
                output: r#"["a", "b"]"#,
            },
            Example {
                description: "several arguments run the program directly, without a shell",
                pipeline: "exec echo '$HOME' '*'",
                input: "[]",
                output: r#"["$HOME *"]"#,
            },
            Example {
                description: "a single argument containing spaces runs via the shell",
                pipeline: r#"exec "echo $((1 + 1))""#,
                input: "[]",
                output: r#"["2"]"#,
            },
            Example {
                description: "feed the input as JSON lines",
                pipeline: r#"exec --stdin jsonl --shell "cat""#,
                input: r#"[{"a": 1}, "x"]"#,
                output: r#"["{\"a\":1}", "\"x\""]"#,
            },
            Example {
                description: "feed the input as one JSON array and parse the answer",
                pipeline: r#"exec --stdin json --json --shell "cat""#,
                input: r#"[1, {"b": [2]}]"#,
                output: r#"[1, {"b": [2]}]"#,
            },
            Example {
                description: "raw stdin: strings as-is, other items as JSON, one per line",
                pipeline: r#"exec --stdin raw --shell "tr a-z A-Z""#,
                input: r#"["ab", {"k": true}]"#,
                output: r#"["AB", "{\"K\":TRUE}"]"#,
            },
        ]
    }

    fn validate(&self, args: &Args) -> Result<()> {
        Plan::from_args(args).map(|_| ())
    }

    fn run(&self, args: &Args, input: ItemStream, ctx: &Context) -> Result<Output> {
        let plan = Plan::from_args(args)?;
        // Upstream runs to its end either way: into stdin, or drained.
        let mut items = Vec::new();
        for item in input {
            let item = item?;
            if plan.stdin.is_some() {
                items.push(item);
            }
        }
        let mut invocation = plan.invocation();
        let mut input_digest = None;
        if let Some(mode) = plan.stdin {
            let bytes = encode_stdin(&items, mode).into_bytes();
            if ctx.journal.is_on() {
                input_digest = Some(crate::journal::digest(&bytes));
            }
            invocation = invocation.stdin(bytes);
        }
        drop(items);
        let decoder = if plan.json {
            Decoder::Json
        } else {
            Decoder::Lines
        };
        let out = invocation.stream(ctx, decoder)?;
        Ok(Output::Lazy(Box::new(ExecItems {
            out: Some(out),
            display: plan.display().to_string(),
            journal: ctx
                .journal
                .is_on()
                .then(|| (ctx.journal.clone(), input_digest)),
        })))
    }
}

/// The items of a running `exec`: stdout decoded as it arrives, then the
/// exit status checked. A failing child or bad JSON ends the stream with an
/// error after the items decoded so far (the run fails either way). When the
/// consumer stops early (`head`), dropping this kills the child's group.
/// With the run's journal on, how the child ended goes to its `step` event
/// ([`crate::journal::host`]).
struct ExecItems {
    out: Option<OutputStream>,
    /// What `exec failed (…): …` names when the child printed nothing.
    display: String,
    /// The run's journal and the digest of what the child was fed, while
    /// the child's end is still to be recorded (`None`: journal off).
    journal: Option<(crate::journal::Journal, Option<String>)>,
}

impl ExecItems {
    /// Record how the child ended: `ended`, or nothing known (it failed to
    /// be read, or was killed when the consumer stopped).
    fn record(&mut self, ended: Option<&Ended>) {
        let Some((journal, input_digest)) = self.journal.take() else {
            return;
        };
        let mut end = crate::journal::host::HostEnd {
            input_digest,
            ..Default::default()
        };
        if let Some(ended) = ended {
            let stdout = &ended.finished.stdout;
            end.exit_code = ended.finished.code;
            if !ended.stdout_truncated {
                end.output_digest = Some(crate::journal::digest(stdout.as_bytes()));
            }
            end.output = Some(stdout.clone());
        }
        journal.host_ended(end);
    }
}

impl Iterator for ExecItems {
    type Item = Result<Lazy>;

    fn next(&mut self) -> Option<Result<Lazy>> {
        let out = self.out.as_mut()?;
        let next = out.pull();
        match next {
            Ok(Next::Item(item)) => Some(Ok(item)),
            Ok(Next::End(ended)) => {
                self.out = None;
                self.record(Some(&ended));
                check_end(ended, &self.display).err().map(Err)
            }
            Err(e) => {
                self.out = None;
                self.record(None);
                Some(Err(e))
            }
        }
    }
}

impl Drop for ExecItems {
    /// Stopped before its end (the next stage read enough): the child is
    /// killed with the stream; its step records no exit code.
    fn drop(&mut self) {
        self.record(None);
    }
}

/// The reference's order: a failing exit status wins over unparsable JSON.
/// The stderr of a successful child is discarded.
fn check_end(ended: Ended, display: &str) -> Result<()> {
    let done = &ended.finished;
    if !done.success() {
        let stderr = js_trim(&done.stderr);
        let stdout = js_trim(&done.stdout);
        let detail = [stderr, stdout]
            .into_iter()
            .find(|s| !s.is_empty())
            .unwrap_or(display);
        // Only the first STDOUT_KEPT bytes of a long stdout are kept.
        let more = if stderr.is_empty() && !stdout.is_empty() && ended.stdout_truncated {
            " …"
        } else {
            ""
        };
        return Err(Error::runtime(format!(
            "exec failed ({}): {detail}{more}",
            done.code_text()
        )));
    }
    match ended.parse_error {
        Some(e) => Err(Error::runtime(format!(
            "exec --json could not parse stdout as JSON: {e}"
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
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
}
