//! `lobster run` argv.
//!
//! Hand-parsed rather than with clap because the reference's protocol mixes
//! Lobster's flags with pipeline text: flags are recognised anywhere as whole
//! argv elements, `--dry-run` only before the pipeline begins, and every other
//! element is joined with single spaces into the pipeline text.

use super::argv::{parse_count, split_flag, take_value};
use crate::app::options::{LimitArgs, SandboxArgs};
use crate::error::{Error, Result};
use crate::kernel::Mode;

/// Everything `run` was asked.
#[derive(Debug, Clone, PartialEq)]
pub struct RunArgs {
    pub mode: Mode,
    pub file: Option<String>,
    pub args_json: Option<String>,
    pub dry_run: bool,
    pub limits: LimitArgs,
    pub cwd: Option<String>,
    /// `--help`/`-h` before the pipeline text.
    pub help: bool,
    /// Step path and grants for WebAssembly steps.
    pub sandbox: SandboxArgs,
    /// Pipeline words, joined with spaces by [`RunArgs::pipeline_text`].
    pub rest: Vec<String>,
}

impl RunArgs {
    /// The pipeline text.
    pub fn pipeline_text(&self) -> String {
        self.rest.join(" ")
    }
}

/// Parse `run`'s argv (without `run`). Flag errors are parse errors; `mode` is
/// still reported so the caller knows how to print them.
pub fn parse_run_args(argv: &[String]) -> (Mode, Result<RunArgs>) {
    let mut mode_raw: Option<String> = None;
    let mut result = RunArgs {
        mode: Mode::Human,
        file: None,
        args_json: None,
        dry_run: false,
        limits: LimitArgs::default(),
        cwd: None,
        help: false,
        sandbox: SandboxArgs::default(),
        rest: Vec::new(),
    };
    let mut error: Option<Error> = None;
    let mut i = 0;
    while i < argv.len() {
        let tok = argv[i].as_str();
        let (name, inline) = split_flag(tok);
        let known = matches!(
            name,
            "--mode"
                | "--file"
                | "--args-json"
                | "--timeout-ms"
                | "--max-stdout-bytes"
                | "--cwd"
                | "--steps"
                | "--allow-read"
                | "--allow-write"
                | "--allow-env"
                | "--allow-tool"
                | "--policy"
        );
        // A bare switch, recognised anywhere as a whole argv element like the others.
        if tok == "--allow-llm" {
            result.sandbox.allow_llm = true;
            i += 1;
            continue;
        }
        if result.rest.is_empty() && inline.is_none() && matches!(tok, "--dry-run") {
            result.dry_run = true;
            i += 1;
            continue;
        }
        if result.rest.is_empty() && matches!(tok, "--help" | "-h") {
            result.help = true;
            i += 1;
            continue;
        }
        if !known {
            // Before the pipeline begins a `--word` is a flag of `run`: a
            // stage name never starts with `--`.
            if result.rest.is_empty() && tok.starts_with("--") {
                let mut flags = super::subcommands::RUN_FLAGS.to_vec();
                flags.push("--help");
                error.get_or_insert(super::subcommands::unknown_flag("run", name, &flags));
                i += 1;
                continue;
            }
            result.rest.push(tok.to_string());
            i += 1;
            continue;
        }
        i += 1;
        let Some(value) = take_value(inline, argv, &mut i) else {
            error.get_or_insert(Error::parse(format!("run {name} requires a value")));
            continue;
        };
        match name {
            "--mode" => mode_raw = Some(value),
            "--file" => result.file = Some(value),
            "--args-json" => result.args_json = Some(value),
            "--cwd" => result.cwd = Some(value),
            "--steps" => result.sandbox.steps.push(value),
            "--allow-read" => result.sandbox.allow_read.push(value),
            "--allow-write" => result.sandbox.allow_write.push(value),
            "--allow-env" => result.sandbox.allow_env.push(value),
            "--allow-tool" => result.sandbox.allow_tool.push(value),
            "--policy" => result.limits.policy = Some(value),
            "--timeout-ms" => match parse_count("--timeout-ms", &value) {
                Ok(n) => result.limits.timeout_ms = Some(n),
                Err(e) => {
                    error.get_or_insert(e);
                }
            },
            _ => match parse_count("--max-stdout-bytes", &value) {
                Ok(n) => result.limits.max_stdout_bytes = Some(n),
                Err(e) => {
                    error.get_or_insert(e);
                }
            },
        }
    }
    // `run wf.lobster --dry-run`: a trailing --dry-run next to a lone file path.
    if result.file.is_none() && result.rest.len() == 2 && result.rest[1] == "--dry-run" {
        let candidate = &result.rest[0];
        if !candidate.contains('|') && super::workflow_file::looks_like_workflow(candidate) {
            result.rest.pop();
            result.dry_run = true;
        }
    }
    let mode = match mode_raw.as_deref() {
        None | Some("human") => Mode::Human,
        Some("tool") => Mode::Tool,
        Some(other) => {
            error.get_or_insert(
                Error::parse(format!("run --mode must be human or tool (got {other:?})"))
                    .with_hint(
                        "use --mode tool for one JSON envelope, or leave it out for human output",
                    ),
            );
            Mode::Human
        }
    };
    result.mode = mode;
    match error {
        Some(e) => (mode, Err(e)),
        None => (mode, Ok(result)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(words: &[&str]) -> Result<RunArgs> {
        parse_run_args(&words.iter().map(|s| s.to_string()).collect::<Vec<_>>()).1
    }

    #[test]
    fn flags_anywhere_rest_joined() {
        let a = parse(&["exec", "--json", "--mode", "tool", "x"]).unwrap();
        assert_eq!(a.mode, Mode::Tool);
        assert_eq!(a.pipeline_text(), "exec --json x");
        let a = parse(&["--mode=tool", "--timeout-ms=500", "head"]).unwrap();
        assert_eq!(a.limits.timeout_ms, Some(500));
    }

    #[test]
    fn dry_run_only_before_the_pipeline() {
        assert!(parse(&["--dry-run", "head"]).unwrap().dry_run);
        let a = parse(&["head", "--dry-run"]).unwrap();
        assert!(!a.dry_run);
        assert_eq!(a.pipeline_text(), "head --dry-run");
    }

    #[test]
    fn bad_mode_is_an_error() {
        assert_eq!(
            parse(&["--mode", "robot", "head"]).unwrap_err().to_string(),
            "run --mode must be human or tool (got \"robot\")"
        );
        assert_eq!(
            parse(&["head", "--mode"]).unwrap_err().to_string(),
            "run --mode requires a value"
        );
        assert!(parse(&["--timeout-ms", "abc", "head"]).is_err());
    }

    #[test]
    fn sandbox_flags_repeat() {
        let a = parse(&[
            "--allow-read",
            "mail",
            "--allow-write=out:/o",
            "--steps",
            "s1",
            "--steps",
            "s2",
            "x",
        ])
        .unwrap();
        assert_eq!(a.sandbox.allow_read, ["mail"]);
        assert_eq!(a.sandbox.allow_write, ["out:/o"]);
        assert_eq!(a.sandbox.steps, ["s1", "s2"]);
        assert_eq!(a.pipeline_text(), "x");
    }

    #[test]
    fn help_only_before_the_pipeline() {
        assert!(parse(&["--help"]).unwrap().help);
        let a = parse(&["exec", "--help"]).unwrap();
        assert!(!a.help);
    }
}
