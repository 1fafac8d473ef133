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
        if let Some(step) = ctx.journal.take_stand_in() {
            let items = recorded_items(step, decoder, plan.display(), &ctx.journal, input_digest);
            return Ok(Output::Lazy(Box::new(items.into_iter())));
        }
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

/// A replay's `exec` ([`crate::journal::host`]): the run's recorded stdout
/// decoded as the process's was, then its recorded exit code checked (the
/// error names the stdout, as stderr was not recorded). Its end is left as
/// a live stage's is, so the replay's journal compares with the run's.
fn recorded_items(
    step: crate::journal::Step,
    decoder: Decoder,
    display: &str,
    journal: &crate::journal::Journal,
    input_digest: Option<String>,
) -> Vec<Result<Lazy>> {
    use crate::process::decode::{decode_json, decode_lines, Stop};
    let stdout = step.output.unwrap_or_default();
    let mut items = Vec::new();
    let mut emit = |item: Item| {
        items.push(Ok(Lazy::from(item)));
        true
    };
    let decoded = match decoder {
        Decoder::Json => decode_json(stdout.as_bytes(), &mut emit),
        Decoder::Lines => decode_lines(stdout.as_bytes(), &mut emit),
    };
    let parse_error = match decoded {
        Err(Stop::Parse(message)) => Some(message),
        _ => None,
    };
    journal.host_ended(crate::journal::host::HostEnd {
        exit_code: step.exit_code,
        input_digest,
        output_digest: Some(crate::journal::digest(stdout.as_bytes())),
        output: Some(stdout.clone()),
    });
    let ended = Ended {
        finished: crate::process::Finished {
            stdout,
            stderr: String::new(),
            code: step.exit_code,
            signal: None,
        },
        stdout_truncated: false,
        parse_error,
    };
    if let Err(e) = check_end(ended, display) {
        items.push(Err(e));
    }
    items
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
mod tests;
