//! The CLI's subcommands in one table: their one-line summaries, their flags
//! and their help texts. `lobster help SUBCOMMAND`, "did you mean" for a
//! mistyped subcommand or flag, and `lobster completions` all read it, so a
//! new subcommand is known to all three at once.

use super::{
    bundle, check, help, keys, lock, mcp, replay, runs, serve, step_project, steps, store,
};
use crate::error::Error;

/// One subcommand.
#[derive(Debug, Clone, Copy)]
pub struct Subcommand {
    pub name: &'static str,
    /// One line, for completions.
    pub summary: &'static str,
    /// Its flags (with `--`), for suggestions and completions.
    pub flags: &'static [&'static str],
    /// Words that may follow it (`store migrate`), for completions.
    pub words: &'static [&'static str],
    /// What `lobster help NAME` prints.
    pub help: &'static str,
}

/// `run`'s flags (also accepted without `run`: `lobster --steps DIR '…'`).
pub const RUN_FLAGS: &[&str] = &[
    "--mode",
    "--file",
    "--args-json",
    "--dry-run",
    "--timeout-ms",
    "--max-stdout-bytes",
    "--cwd",
    "--steps",
    "--allow-read",
    "--allow-write",
    "--allow-env",
    "--allow-tool",
    "--allow-llm",
    "--policy",
];

/// Every subcommand, in the order `lobster help` lists them.
pub const SUBCOMMANDS: &[Subcommand] = &[
    Subcommand {
        name: "run",
        summary: "run a pipeline or a workflow file",
        flags: RUN_FLAGS,
        words: &[],
        help: help::RUN_HELP,
    },
    Subcommand {
        name: "resume",
        summary: "continue a paused run",
        flags: &[
            "--token",
            "--id",
            "--approve",
            "--decision",
            "--response-json",
            "--cancel",
            "--approver",
            "--timeout-ms",
            "--max-stdout-bytes",
            "--cwd",
            "--policy",
            "--mode",
        ],
        words: &[],
        help: help::RESUME_HELP,
    },
    Subcommand {
        name: "call",
        summary: "answer one agent tool call (JSON) with one envelope",
        flags: &[],
        words: &[],
        help: help::CALL_HELP,
    },
    Subcommand {
        name: "graph",
        summary: "render a workflow's step graph",
        flags: &["--file", "--format", "--args-json"],
        words: &[],
        help: help::GRAPH_HELP,
    },
    Subcommand {
        name: "check",
        summary: "validate workflows, steps, bundles and lock files (for CI)",
        flags: &["--format", "--steps", "--policy"],
        words: &[],
        help: check::CHECK_HELP,
    },
    Subcommand {
        name: "bundle",
        summary: "package a step with a reviewed manifest",
        flags: &["--out"],
        words: &["build", "verify"],
        help: bundle::BUNDLE_HELP,
    },
    Subcommand {
        name: "lock",
        summary: "pin steps to their blake3 digests (lobster.lock)",
        flags: &["--steps"],
        words: &[],
        help: lock::LOCK_HELP,
    },
    Subcommand {
        name: "keys",
        summary: "make a signing key pair for steps",
        flags: &["--dir"],
        words: &["new"],
        help: keys::KEYS_HELP,
    },
    Subcommand {
        name: "doctor",
        summary: "check tool mode, the state directory, the steps and the engine",
        flags: &["--steps", "--policy", "--json"],
        words: &[],
        help: help::DOCTOR_HELP,
    },
    Subcommand {
        name: "mcp",
        summary: "serve Lobster over MCP on stdio",
        flags: &[
            "--policy",
            "--workflows",
            "--steps",
            "--allow-read",
            "--allow-write",
            "--allow-env",
            "--approvals",
        ],
        words: &[],
        help: mcp::MCP_HELP,
    },
    Subcommand {
        name: "serve",
        summary: "the multi-tenant HTTP gateway",
        flags: &["--config", "--listen"],
        words: &["hash-password"],
        help: serve::SERVE_HELP,
    },
    Subcommand {
        name: "step",
        summary: "create, build, test, publish, pull and sign a WebAssembly step",
        flags: &["--lang", "--dir", "--sdk", "--policy", "--out", "--key"],
        words: &["new", "build", "test", "publish", "pull", "sign"],
        help: step_project::STEP_HELP,
    },
    Subcommand {
        name: "steps",
        summary: "manage the steps on the step path",
        flags: &["--steps"],
        words: &["precompile"],
        help: steps::STEPS_HELP,
    },
    Subcommand {
        name: "store",
        summary: "the state store (files or PostgreSQL)",
        flags: &[],
        words: &["migrate"],
        help: store::STORE_HELP,
    },
    Subcommand {
        name: "runs",
        summary: "list, show, export and prune the journals runs leave",
        flags: &[
            "--status",
            "--since",
            "--limit",
            "--older-than",
            "--keep",
            "--tenant",
            "--json",
        ],
        words: &["list", "show", "export", "prune"],
        help: runs::RUNS_HELP,
    },
    Subcommand {
        name: "approvals",
        summary: "the runs waiting at a gate",
        flags: &["--tenant", "--json"],
        words: &[],
        help: runs::RUNS_HELP,
    },
    Subcommand {
        name: "verify",
        summary: "check an exported or stored run journal offline",
        flags: &["--run", "--key", "--json"],
        words: &[],
        help: runs::RUNS_HELP,
    },
    Subcommand {
        name: "replay",
        summary:
            "run a finished run again offline from its journal; identical or the first divergence",
        flags: &[
            "--rerun-host",
            "--steps",
            "--cwd",
            "--policy",
            "--tenant",
            "--json",
        ],
        words: &[],
        help: replay::REPLAY_HELP,
    },
    Subcommand {
        name: "schema",
        summary: "print the JSON Schema of workflow files",
        flags: &[],
        words: &["workflow"],
        help: help::SCHEMA_HELP,
    },
    Subcommand {
        name: "completions",
        summary: "print a shell completion script (bash, zsh, fish)",
        flags: &[],
        words: &["bash", "zsh", "fish"],
        help: help::COMPLETIONS_HELP,
    },
    Subcommand {
        name: "version",
        summary: "print the version (--verbose: commit and wasmtime)",
        flags: &["--verbose"],
        words: &[],
        help: help::VERSION_HELP,
    },
    Subcommand {
        name: "help",
        summary: "help on a subcommand, a command or a step",
        flags: &["--steps"],
        words: &[],
        help: help::HELP_HELP,
    },
];

/// The subcommand called `name`.
pub fn find(name: &str) -> Option<&'static Subcommand> {
    SUBCOMMANDS.iter().find(|s| s.name == name)
}

/// A hint for a mistyped word among `words`: the nearest, else the list.
pub fn near_word(word: &str, words: &[&str]) -> String {
    match crate::executor::suggest(word, words.iter().copied()) {
        Some(near) => format!("did you mean `{near}`?"),
        None => format!("one of: {}", words.join(", ")),
    }
}

/// `lobster <command>: unknown flag --x (did you mean --y?)`, with a hint
/// naming the subcommand's help. `known` are the flags it takes.
pub fn unknown_flag(command: &str, flag: &str, known: &[&str]) -> Error {
    let bare = flag.trim_start_matches('-');
    let near = crate::executor::suggest_flag(bare, known.iter().map(|k| k.trim_start_matches('-')));
    let mut message = format!("lobster {command}: unknown flag {flag}");
    if let Some(near) = near {
        message.push_str(&format!(" (did you mean --{near}?)"));
    }
    let topic = command.split(' ').next().unwrap_or(command);
    Error::parse(message).with_hint(format!("`lobster help {topic}` lists its flags"))
}
