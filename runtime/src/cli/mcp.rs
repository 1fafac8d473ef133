//! `lobster mcp`: argv → an MCP server on stdin/stdout (see [`crate::mcp`]).
//!
//! Start-up checks everything it can (flags, the policy file, every
//! workflow of the catalog, tool-name collisions) and exits 2 with the
//! problem on stderr before speaking any protocol. Stdout carries only the
//! protocol; nothing else is ever printed there.

use super::argv::{split_flag, take_value};
use super::output::write_once;
use crate::app::options::SandboxArgs;
use crate::app::{Catalog, Settings};
use crate::error::{Error, Result};
use crate::kernel::Mode;
use crate::mcp::{ApprovalMode, LobsterMcp};
use std::path::PathBuf;

/// `lobster help mcp`.
pub const MCP_HELP: &str =
    "lobster mcp — serve Lobster to agents over the Model Context Protocol (stdio)

Usage:
  lobster mcp [--policy FILE] [--workflows DIR]... [--steps DIR]...
              [--allow-read DIR]... [--allow-write DIR]... [--allow-env NAME]...
              [--approvals agent|human]

Tools:
  lobster_run        run a pipeline or a workflow (one envelope back)
  lobster_resume     continue a paused run (token or approvalId)
  lobster_workflows  list the workflows under --workflows
  <workflow name>    one tool per workflow under --workflows; its input is the workflow's args

Flags:
  --policy FILE        operator policy for every run (refused when LOBSTER_POLICY is set)
  --workflows DIR      offer the workflow files in DIR (repeatable)
  --steps DIR          look for WebAssembly steps in DIR first (repeatable)
  --allow-read DIR     grant steps read access to DIR[:/GUEST] (repeatable)
  --allow-write DIR    grant steps write access to DIR[:/GUEST] (repeatable)
  --allow-env NAME     pass the environment variable NAME to steps (repeatable)
  --approvals MODE     agent (default): the agent relays the human's yes/no;
                       human: the server asks the human itself (MCP 2026-07-28
                       elicitation) and refuses approve: true from clients that cannot

Examples:
  openclaw mcp add lobster --command lobster --arg mcp
  claude mcp add lobster -- lobster mcp --workflows ./workflows
  lobster mcp --workflows examples/workflows --approvals human
";

/// Parsed `lobster mcp` flags.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct McpArgs {
    pub policy: Option<String>,
    pub workflows: Vec<PathBuf>,
    pub sandbox: SandboxArgs,
    pub approvals: ApprovalMode,
    pub help: bool,
}

/// Parse `mcp`'s argv (without `mcp`).
pub fn parse_mcp_args(argv: &[String]) -> Result<McpArgs> {
    let mut out = McpArgs::default();
    let mut i = 0;
    while i < argv.len() {
        let tok = argv[i].as_str();
        if matches!(tok, "--help" | "-h") {
            out.help = true;
            i += 1;
            continue;
        }
        let (name, inline) = split_flag(tok);
        let known = matches!(
            name,
            "--policy"
                | "--workflows"
                | "--steps"
                | "--allow-read"
                | "--allow-write"
                | "--allow-env"
                | "--approvals"
        );
        if !known {
            if name.starts_with("--") {
                let flags = super::subcommands::find("mcp").map_or(&[][..], |s| s.flags);
                return Err(super::subcommands::unknown_flag("mcp", name, flags));
            }
            return Err(Error::parse(format!("mcp does not take {tok}"))
                .with_hint("see `lobster help mcp`"));
        }
        i += 1;
        let value = take_value(inline, argv, &mut i)
            .ok_or_else(|| Error::parse(format!("mcp {name} requires a value")))?;
        match name {
            "--policy" => out.policy = Some(value),
            "--workflows" => out.workflows.push(PathBuf::from(value)),
            "--steps" => out.sandbox.steps.push(value),
            "--allow-read" => out.sandbox.allow_read.push(value),
            "--allow-write" => out.sandbox.allow_write.push(value),
            "--allow-env" => out.sandbox.allow_env.push(value),
            _ => {
                out.approvals = match value.as_str() {
                    "agent" => ApprovalMode::Agent,
                    "human" => ApprovalMode::Human,
                    other => {
                        return Err(Error::parse(format!(
                            "mcp --approvals must be agent or human (got {other:?})"
                        )))
                    }
                }
            }
        }
    }
    Ok(out)
}

/// Check the settings once at start-up, the way every call will use them.
fn settings(args: &McpArgs) -> Result<Settings> {
    let catalog = Catalog::load(&args.workflows)?;
    let limits = crate::app::options::LimitArgs {
        policy: args.policy.clone(),
        ..Default::default()
    };
    let steps = crate::app::StepOptions::try_from(&args.sandbox)?;
    crate::app::context::build_context(Mode::Tool, &limits, None, Some(&steps))?;
    Ok(Settings {
        policy: args.policy.clone(),
        steps,
        catalog,
        door: "mcp",
        ..Default::default()
    })
}

pub(super) fn mcp(argv: &[String]) -> i32 {
    let args = match parse_mcp_args(argv) {
        Ok(a) => a,
        Err(e) => {
            write_once("", &super::output::human_error(&e, None));
            return e.exit_code();
        }
    };
    if args.help {
        write_once(MCP_HELP, "");
        return 0;
    }
    let settings = match settings(&args) {
        Ok(s) => s,
        Err(e) => {
            write_once("", &super::output::human_error(&e, None));
            return e.exit_code();
        }
    };
    match crate::mcp::serve_stdio(LobsterMcp::new(settings, args.approvals)) {
        Ok(()) => 0,
        Err(e) => {
            write_once("", &super::output::human_error(&e, None));
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(words: &[&str]) -> Result<McpArgs> {
        parse_mcp_args(&words.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn flags_repeat_and_unknown_ones_are_refused() {
        let a = parse(&[
            "--workflows",
            "a",
            "--workflows=b",
            "--allow-env",
            "HOME",
            "--approvals",
            "human",
        ])
        .unwrap();
        assert_eq!(a.workflows, [PathBuf::from("a"), PathBuf::from("b")]);
        assert_eq!(a.sandbox.allow_env, ["HOME"]);
        assert_eq!(a.approvals, ApprovalMode::Human);
        assert_eq!(
            parse(&["--approvals", "robot"]).unwrap_err().to_string(),
            "mcp --approvals must be agent or human (got \"robot\")"
        );
        assert_eq!(
            parse(&["--port", "1"]).unwrap_err().to_string(),
            "lobster mcp: unknown flag --port"
        );
        assert_eq!(
            parse(&["--workflows"]).unwrap_err().to_string(),
            "mcp --workflows requires a value"
        );
        assert!(parse(&["--help"]).unwrap().help);
    }
}
