//! `run:`/`command:` steps: a host shell line via [`Invocation::shell`].
//!
//! `${arg}` and `$step.path` in the line are never pasted into it: each
//! becomes a quoted reference to a `LOBSTER_REF_<n>` environment variable
//! holding the value (see [`crate::workflow::template`]).

use crate::error::{Error, Result};
use crate::kernel::Context;
use crate::process::Invocation;
use crate::value::Item;
use crate::workflow::run::{stdin_bytes, stdout_result};
use crate::workflow::template::{render, Scope, Style};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Run `line` for step `id`; the result is `{id, stdout, json?}`.
pub fn run(
    id: &str,
    line: &str,
    stdin: Option<Item>,
    mut env: BTreeMap<String, String>,
    cwd: PathBuf,
    scope: &dyn Scope,
    ctx: &Context,
) -> Result<Item> {
    let rendered = render(line, scope, Style::Shell, None);
    if let Some(problem) = rendered.problem {
        return Err(Error::runtime(format!("Workflow step {id}: {problem}")));
    }
    let direct = if rendered.env.is_empty()
        && !env.contains_key(crate::process::shell::SHELL_OVERRIDE_VAR)
    {
        simple_argv(&rendered.text)
    } else {
        None
    };
    for (k, v) in rendered.env {
        env.insert(k, v);
    }
    let mut inv = match direct {
        Some((program, args)) => {
            let missing = format!("workflow command failed (127): {program}: not found");
            Invocation::argv(program, args).not_found(missing)
        }
        None => Invocation::shell(rendered.text.clone())
            .not_found("workflow shell not found; check LOBSTER_SHELL"),
    }
    .env(env)
    .cwd(cwd);
    let stdin = stdin_bytes(stdin.as_ref());
    let input_digest = crate::journal::digest(stdin.as_deref().unwrap_or_default());
    if let Some(bytes) = stdin {
        inv = inv.stdin(bytes);
    }
    let started = std::time::Instant::now();
    let done = match ctx.journal.replaying() {
        // A replay answers the line with what the run recorded (unless
        // `--rerun-host`: then the replay's record has no host outputs).
        Some(recorded) => match recorded.take_host_output(ctx.journal.within_step(), id, "run") {
            Some(step) => crate::process::Finished {
                stdout: step.output.unwrap_or_default(),
                stderr: String::new(),
                code: step.exit_code,
                signal: None,
            },
            None => inv.run(ctx)?,
        },
        None => inv.run(ctx)?,
    };
    if ctx.journal.is_on() {
        // The output in full up to the cap; past it the step cannot be
        // replayed from the journal.
        let (kept, cut) = crate::journal::cap_text(&done.stdout, crate::journal::HOST_OUTPUT_CAP);
        let _ = ctx
            .journal
            .append(crate::journal::Event::Step(crate::journal::Step {
                id: id.to_string(),
                step_kind: "host".into(),
                name: "run".into(),
                wall_ms: started.elapsed().as_millis() as u64,
                input_digest: Some(input_digest),
                output_digest: Some(crate::journal::digest(done.stdout.as_bytes())),
                exit_code: done.code,
                output: Some(kept.to_string()),
                replayable: !cut,
                ok: done.success(),
                ..crate::journal::Step::default()
            }));
    }
    if !done.success() {
        let detail = [done.stderr.trim(), done.stdout.trim(), line]
            .into_iter()
            .find(|s| !s.is_empty())
            .unwrap_or_default()
            .to_string();
        return Err(Error::runtime(format!(
            "workflow command failed ({}): {detail}",
            done.code_text()
        )));
    }
    Ok(stdout_result(id, done.stdout))
}

/// Words the shell itself interprets (dash builtins and keywords): lines
/// starting with one always go through the shell.
const SHELL_WORDS: &[&str] = &[
    "alias", "bg", "break", "case", "cd", "chdir", "command", "continue", "do", "done", "echo",
    "elif", "else", "esac", "eval", "exec", "exit", "export", "false", "fc", "fg", "fi", "for",
    "getopts", "hash", "if", "in", "jobs", "kill", "local", "printf", "pwd", "read", "readonly",
    "return", "set", "shift", "test", "then", "times", "trap", "true", "type", "ulimit", "umask",
    "unalias", "unset", "until", "wait", "while",
];

/// A line the shell would run as one plain command (bare program name and
/// literal words only: no quotes, variables, globs, redirections, operators
/// or builtins) is spawned directly, saving the shell's start-up. `None`:
/// the line needs the shell.
pub fn simple_argv(line: &str) -> Option<(String, Vec<String>)> {
    let plain = |w: &str| {
        w.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./:=+,@%-".contains(c))
    };
    let mut words = line.split([' ', '\t']).filter(|w| !w.is_empty());
    let program = words.next()?;
    if !plain(program)
        || program.contains(['/', '='])
        || SHELL_WORDS.contains(&program)
        || line.contains('\n')
    {
        return None;
    }
    let args: Vec<String> = words.map(String::from).collect();
    if !args.iter().all(|w| plain(w) && !w.starts_with('~')) {
        return None;
    }
    Some((program.to_string(), args))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_commands_skip_the_shell() {
        assert_eq!(simple_argv("cat"), Some(("cat".to_string(), Vec::new())));
        assert_eq!(
            simple_argv("  wc -c  --lines"),
            Some((
                "wc".to_string(),
                vec!["-c".to_string(), "--lines".to_string()]
            ))
        );
        for line in [
            "echo hi",
            "cat *.txt",
            "cat a > b",
            "ls; rm x",
            "A=1 env",
            "./run.sh",
            "grep \"x\"",
            "cat $HOME",
            "tr a-z A-Z | cat",
            "cat ~/x",
            "exit 3",
            "",
        ] {
            assert_eq!(simple_argv(line), None, "{line}");
        }
    }
}
