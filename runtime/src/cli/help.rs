//! Help texts of the CLI itself (command help lives with each command).

use crate::kernel::Registry;

/// `lobster --help`.
pub fn main_help(registry: &Registry) -> String {
    let commands = registry.names().join(", ");
    format!(
        "lobster — OpenClaw-native typed shell

Usage:
  lobster '<pipeline>'
  lobster run --mode tool '<pipeline>'
  lobster run path/to/workflow.lobster
  lobster run --file path/to/workflow.lobster --args-json '{{...}}'
  lobster run --dry-run --file path/to/workflow.lobster
  lobster run --dry-run '<pipeline>'
  lobster graph --file path/to/workflow.lobster --format mermaid
  lobster resume --token <token> --approve yes|no
  lobster resume --id <approvalId> --approve yes|no
  lobster resume --token <token> --response-json '{{...}}'
  lobster resume --token <token> --cancel
  lobster call '{{\"action\":\"run\",\"pipeline\":\"...\"}}'
  lobster check [--format human|json|sarif|github] [--policy FILE] [PATHS...]
  lobster bundle build DIR | lobster bundle verify PATH
  lobster lock [--steps DIR]... ['<pipeline>' | WORKFLOW]
  lobster keys new NAME [--dir DIR]
  lobster doctor [--steps DIR]... [--policy FILE] [--json]
  lobster mcp [--workflows DIR]... [--approvals agent|human]
  lobster serve --config serve.toml [--listen ADDR]
  lobster step new NAME --lang rust|python|js | lobster step build|test [DIR]
  lobster step publish|pull|sign ...
  lobster steps precompile [--steps DIR]...
  lobster runs list|show|export|prune | lobster approvals | lobster verify FILE
  lobster replay ID|FILE [--rerun-host] [--json]
  lobster [--store URL] store migrate
  lobster schema workflow | lobster completions bash|zsh|fish
  lobster version [--verbose]
  lobster help <subcommand|command|step>

Flags (run):
  --mode human|tool       Output mode (default human)
  --dry-run               Validate and print the execution plan without running anything
  --timeout-ms N          Stop the run after N ms (min 200; tool mode default 20000)
  --max-stdout-bytes N    Cap captured and printed output (min 1024; tool mode default 512000)
  --cwd DIR               Working directory, relative and inside the current directory

Sandbox (WebAssembly steps; they get nothing unless granted):
  --steps DIR             Also look for steps in DIR (then LOBSTER_STEP_PATH, then ./steps)
  --allow-read DIR[:/G]   Let steps read DIR (seen at /G); --allow-write DIR[:/G] read-write
  --allow-env NAME        Let steps see the environment variable NAME
  --allow-tool NAME       Let steps and built-ins call the gateway tool NAME (brokered)
  --allow-llm             Let steps and built-ins call the model (brokered)
  --policy FILE           Operator policy (also LOBSTER_POLICY): trust, roots, env, maximum limits

Modes:
  - human (default): renderers can write to stdout
  - tool: prints a single JSON envelope for easy integration

Examples:
  lobster 'exec --json --shell \"echo [1,2,3]\" | json'
  lobster run --mode tool 'exec --json --shell \"echo [1]\" | approve --prompt \"ok?\"'

Pipeline commands:
  {commands}
"
    )
}

/// The steps section of `lobster help`: what the step path holds.
pub fn steps_section(found: &[crate::sandbox::survey::FoundStep]) -> String {
    if found.is_empty() {
        return "\nSteps: none on the step path (--steps DIR, LOBSTER_STEP_PATH, ./steps)\n".into();
    }
    let mut out = String::from("\nSteps on the step path (lobster help <step>):\n");
    for f in found {
        let what = match &f.loaded {
            Ok((_, Some(meta))) => meta.summary.clone(),
            Ok((_, None)) => "wasi:cli/command (JSON items on stdin, JSON on stdout)".into(),
            Err(e) => format!("does not load ({e}); see `lobster doctor`"),
        };
        out.push_str(&format!("  {}  {what}\n", f.name()));
    }
    out
}

/// `lobster help run` / `lobster run --help`.
pub const RUN_HELP: &str = "lobster run — run a pipeline (or a workflow file)

Usage:
  lobster run [--mode human|tool] [--dry-run] [--timeout-ms N] [--max-stdout-bytes N] [--cwd DIR] '<pipeline>'
  lobster run [--mode human|tool] [--dry-run] --file <workflow.lobster> [--args-json '{...}']
  lobster run <workflow.lobster|.yaml|.yml|.json> [--args-json '{...}'] [--dry-run]
  lobster '<pipeline>'

Flags:
  --mode human|tool       human (default) prints items or rendered text; tool prints one JSON envelope
  --dry-run               Check every stage and print the plan to stderr; nothing runs
  --timeout-ms N          Stop the whole run after N ms (clamped to >= 200; tool mode default 20000)
  --max-stdout-bytes N    Cap each child's captured output and what Lobster prints (clamped to >= 1024;
                          tool mode default 512000). LOBSTER_MAX_OUTPUT_BYTES=N (any N >= 1, also in a
                          workflow step's env:) caps each child's stdout and stderr exactly
  --cwd DIR               Relative working directory that must stay inside the current directory
  --file PATH             Run a workflow file (docs/WORKFLOWS.md)
  --args-json J           Workflow args: a JSON object
  --steps DIR             Also look for WebAssembly steps in DIR (repeatable)
  --allow-read DIR[:/G]   Let wasm steps read DIR (at /G); --allow-write the same read-write
  --allow-env NAME        Let wasm steps see the environment variable NAME
  --allow-tool NAME       Let wasm steps call gateway tool NAME through the host broker (repeatable)
  --allow-llm             Let wasm steps ask a model through the host broker
  --policy FILE           Operator policy (TOML/YAML; also LOBSTER_POLICY): trust, allowed roots,
                          env names and maximum limits, enforced before anything runs

Several arguments are joined with single spaces and parsed as one pipeline.
Exit codes: 0 ok (also needs_approval, needs_input, cancelled), 1 runtime error, 2 parse error,
128+n when stopped by signal n.
";

/// `lobster help resume` / `lobster resume --help`.
pub const RESUME_HELP: &str = "lobster resume — continue a paused run

Usage:
  lobster resume --token <token> --approve yes|no
  lobster resume --id <approvalId> --approve yes|no
  lobster resume --token <token> --response-json '{...}'
  lobster resume --token <token> --cancel

Flags:
  --token T            The resumeToken of the paused run
  --id ID              The 8-hex approvalId (approval gates only)
  --approve yes|no     Answer an approval gate (alias --decision); no cancels the run
  --response-json J    Answer an input gate with JSON matching its schema
  --cancel             Drop the paused run
  --approver NAME      Who approves (workflow gates with identity rules; else LOBSTER_APPROVAL_APPROVED_BY)
  --timeout-ms N, --max-stdout-bytes N, --cwd DIR   As for run

A token resumes exactly once. The output is always a tool envelope.
";

/// `lobster help call` / `lobster call --help`.
pub const CALL_HELP: &str = "lobster call — answer one agent tool call with one envelope

Usage:
  lobster call '{\"action\":\"run\",\"pipeline\":\"exec --json --shell \\\"echo [1]\\\"\"}'
  echo '{\"action\":\"resume\",\"token\":\"...\",\"approve\":true}' | lobster call

Request fields:
  action          \"run\" or \"resume\" (required)
  pipeline        run: the pipeline text, or a workflow file path (required for run)
  cwd             run: relative working directory inside the current directory
  timeoutMs       whole-call timeout (default 20000, min 200)
  maxStdoutBytes  output cap (default 512000, min 1024)
  argsJson        run: JSON string of workflow args
  token           resume: the resumeToken
  approvalId      resume: the short approval id (instead of token)
  approve         resume: true or false (required for approval gates)
  response        resume: the JSON answer to an input gate
  approver        resume: who approves (workflow gates with identity rules)
";

/// `lobster help graph`.
pub const GRAPH_HELP: &str = "lobster graph — render workflow step graphs

Usage:
  lobster graph --file path/to/workflow.lobster [--format mermaid|dot|ascii] [--args-json '{...}']
  lobster graph path/to/workflow.lobster [--format mermaid|dot|ascii]

Flags:
  --file       Workflow file path (.lobster, .yaml, .yml, .json)
  --format     Output format: mermaid (default), dot, ascii
  --args-json  JSON object used to resolve workflow args for labels
";

/// `lobster help doctor`.
pub const DOCTOR_HELP: &str = "lobster doctor — check that Lobster works here

Usage:
  lobster doctor [--steps DIR]... [--policy FILE] [--json] [NOTES...]

Runs `exec --json --shell 'echo [1]'` in tool mode, then checks the state directory (writable,
0700, token key), every component on the step path (loads, world, digest, cached), the compiled
cache, the policy in force and the wasm engine. Each check that finds a problem says how to fix it.

On a terminal it prints a readable report; otherwise (or with --json) one tool envelope whose
output holds {toolMode, protocolVersion, version, commit, wasmtime, checks, notes?}.

Flags:
  --steps DIR     Also look for steps in DIR (repeatable)
  --policy FILE   The operator policy to check (also LOBSTER_POLICY)
  --json          The envelope even on a terminal
Exit codes: 0 when tool mode works, 1 when it does not.
";

/// `lobster help version`.
pub const VERSION_HELP: &str = "lobster version — print the version

Usage:
  lobster version            The version number only (as the reference prints it)
  lobster --version | -v     The same
  lobster version --verbose  Also the commit it was built from and the wasmtime version
";

/// `lobster help help`.
pub const HELP_HELP: &str = "lobster help — help on a subcommand, a pipeline command or a step

Usage:
  lobster help                        Everything: subcommands, flags, commands, steps found
  lobster help SUBCOMMAND             e.g. lobster help run, lobster help doctor
  lobster help COMMAND                A pipeline command's help, e.g. lobster help sort
  lobster help [--steps DIR] STEP     A step's describe: flags, what it needs, its digest
";

/// `lobster help completions`.
pub const COMPLETIONS_HELP: &str = "lobster completions — shell completion scripts

Usage:
  lobster completions bash   # e.g. in ~/.bashrc:  source <(lobster completions bash)
  lobster completions zsh    # e.g. in ~/.zshrc:   source <(lobster completions zsh)
  lobster completions fish   # lobster completions fish > ~/.config/fish/completions/lobster.fish

Completes subcommands, their flags and words, pipeline command names, and workflow files.
";

/// `lobster help schema`.
pub const SCHEMA_HELP: &str = "lobster schema — JSON Schemas of Lobster's file formats

Usage:
  lobster schema workflow    The JSON Schema (draft 2020-12) of workflow files

Editors with the YAML language server check and complete a workflow file whose first line
names the schema (docs/workflow.schema.json in the repository holds the same text):
  lobster schema workflow > workflow.schema.json
  # yaml-language-server: $schema=./workflow.schema.json
";
