//! argv → request → outcome → stdout/stderr/exit code.
//!
//! Dispatch (first match wins): leading `--store URL` / `--color WHEN`; no
//! arguments or a leading `-h`/`--help` → help; `help [topic]`; `version`;
//! `doctor`; `graph`; `run`; `resume`; `call`; `check`, `bundle`, `lock`,
//! `keys` (the trust layer); `mcp`; `serve`; `steps precompile`;
//! `step new|build|test|publish|pull|sign` (step projects, shipping steps);
//! `store`; `runs`, `approvals`, `verify` (the run journal); `schema`;
//! `completions`; anything else is `run <argv…>`. The subcommands are listed
//! once, in [`subcommands`]. This room prints; nothing below it does.

mod argv;
pub mod bundle;
mod call;
pub mod check;
pub mod check_format;
pub mod color;
mod completions;
mod doctor;
pub mod help;
pub mod keys;
pub mod lock;
pub mod mcp;
pub mod os_args;
pub mod output;
pub mod progress;
pub mod replay;
pub mod resume_args;
pub mod run_args;
pub mod runs;
pub mod serve;
pub mod step_project;
pub mod step_registry;
mod step_templates;
pub mod steps;
pub mod store;
pub mod subcommands;
pub mod trust_args;
pub mod workflow_file;

use crate::app::options::LimitArgs;
use crate::app::{
    Finished, Prepared, Request, ResumeCall, RunRequest, RunTarget, Settings, StartOptions,
    StepOptions, Work,
};
use crate::error::{Error, Result};
use crate::kernel::{Cancel, Context, Mode, Registry};
use crate::resume::Paused;
use crate::sandbox::StepPath;
use crate::state::StateStore;
use output::{human_error, write_once, Printer};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Run the CLI with `args` (without the program name); returns the exit code.
pub fn main(args: Vec<String>) -> i32 {
    let code = dispatch(args);
    // Journal records still queued for the files store's writers.
    crate::state::journal::flush_all();
    code
}

fn dispatch(args: Vec<String>) -> i32 {
    let mut args = args;
    // Leading global flags, in any order: `--store URL`, `--color WHEN`.
    loop {
        let taken = match args.first().map(String::as_str) {
            Some(first) if first == "--store" || first.starts_with("--store=") => {
                store::take_store_flag(args)
            }
            Some(first) if first == "--color" || first.starts_with("--color=") => {
                color::take_color_flag(args)
            }
            _ => break,
        };
        args = match taken {
            Ok(args) => args,
            Err(msg) => {
                write_once("", &format!("Parse error: {msg}\n"));
                return 2;
            }
        };
    }
    let first = args.first().map(String::as_str);
    match first {
        None | Some("-h" | "--help") => print_help(&[]),
        Some("help") => print_help(&args[1..]),
        Some("version" | "--version" | "-v") => version(&args[1..]),
        Some("doctor") => doctor::doctor(&args[1..]),
        Some("graph") => graph(&args[1..]),
        Some("run") => run(&args[1..], false),
        Some("resume") => resume(&args[1..]),
        Some("call") => call::call(&args[1..]),
        Some("check") => check::check(&args[1..]),
        Some("bundle") => bundle::bundle(&args[1..]),
        Some("lock") => lock::lock(&args[1..]),
        Some("keys") => keys::keys(&args[1..]),
        Some("mcp") => mcp::mcp(&args[1..]),
        Some("serve") => serve::serve(&args[1..]),
        Some("steps") => steps::steps(&args[1..]),
        Some("step") => step_project::step(&args[1..]),
        Some("store") => store::store(&args[1..]),
        Some("runs") => runs::runs(&args[1..]),
        Some("approvals") => runs::approvals(&args[1..]),
        Some("verify") => runs::verify(&args[1..]),
        Some("replay") => replay::replay(&args[1..]),
        Some("schema") => schema(&args[1..]),
        Some("completions") => completions::completions(&args[1..]),
        Some(_) => run(&args, true),
    }
}

/// `lobster version`: the version alone, as the reference prints it;
/// `--verbose` adds the commit and the wasmtime version.
fn version(argv: &[String]) -> i32 {
    if argv.iter().any(|a| a == "--help" || a == "-h") {
        write_once(help::VERSION_HELP, "");
        return 0;
    }
    if argv.iter().any(|a| a == "--verbose") {
        write_once(
            &format!(
                "lobster {}\ncommit: {}\nwasmtime: {}\n",
                crate::VERSION,
                crate::COMMIT,
                crate::WASMTIME_VERSION
            ),
            "",
        );
        return 0;
    }
    write_once(&format!("{}\n", crate::VERSION), "");
    0
}

/// `lobster schema workflow`: the JSON Schema of workflow files.
fn schema(argv: &[String]) -> i32 {
    match argv.first().map(String::as_str) {
        Some("workflow") => {
            write_once(crate::workflow::schema::WORKFLOW_SCHEMA, "");
            0
        }
        Some("-h" | "--help") => {
            write_once(help::SCHEMA_HELP, "");
            0
        }
        None => {
            write_once("", help::SCHEMA_HELP);
            2
        }
        Some(other) => {
            let hint = crate::executor::suggest(other, ["workflow"])
                .map(|n| format!(" (did you mean `{n}`?)"))
                .unwrap_or_default();
            write_once(
                "",
                &format!("Parse error: lobster schema: unknown schema {other:?}{hint}; the one schema is `workflow`\n"),
            );
            2
        }
    }
}

/// `lobster help [--steps DIR]... [topic]`: the main help (with the steps on
/// the step path), a CLI subcommand's, a built-in's, or a step's `describe`.
fn print_help(argv: &[String]) -> i32 {
    let mut extra = Vec::new();
    let mut topic = None;
    let mut i = 0;
    while i < argv.len() {
        match (argv[i].as_str(), argv.get(i + 1)) {
            ("--steps", Some(dir)) => {
                extra.push(PathBuf::from(dir));
                i += 1;
            }
            (t, _) if topic.is_none() => topic = Some(t),
            _ => {}
        }
        i += 1;
    }
    let cwd = std::env::current_dir().unwrap_or_default();
    let steps = crate::sandbox::StepResolver::new(
        StepPath::from_env(&cwd, &extra),
        crate::sandbox::ArtifactCache::in_state_dir(StateStore::from_env().dir()),
    );
    let registry = crate::commands::builtin();
    let text = match topic {
        None => {
            let found = crate::sandbox::survey::list_steps(&steps);
            help::main_help(&registry) + &help::steps_section(&found)
        }
        Some(name) if registry.get(name).is_none() && !help_topic(name) => {
            match steps.resolve(name) {
                Ok(Some(step)) => {
                    // Who signed it, judged by the operator's policy
                    // (LOBSTER_POLICY) when there is one.
                    let policy =
                        crate::policy::Policy::from_flag_or_env(None, &cwd).unwrap_or_default();
                    let digest = crate::commands::Command::digest(step)
                        .unwrap_or_default()
                        .to_string();
                    format!(
                        "{}\nSignature: {}\n",
                        crate::commands::Command::help(step).trim_end(),
                        step_registry::signature_line(step.path(), &digest, &policy)
                    )
                }
                Ok(None) => {
                    let hint = word_hint(name, &registry);
                    write_once("", &format!("Unknown command: {name}\n  hint: {hint}\n"));
                    return 2;
                }
                Err(e) => {
                    write_once("", &format!("Error: {e}\n"));
                    return 1;
                }
            }
        }
        Some(topic) => return print_topic(&registry, topic),
    };
    write_once(&text, "");
    0
}

/// Whether `name` is a CLI subcommand with its own help text.
fn help_topic(name: &str) -> bool {
    subcommands::find(name).is_some()
}

/// The help of a CLI subcommand or a built-in command.
fn print_topic(registry: &Registry, topic: &str) -> i32 {
    let text = match subcommands::find(topic) {
        Some(sub) => sub.help,
        None => registry.get(topic).map_or("", |cmd| cmd.help()),
    };
    write_once(text, "");
    0
}

fn graph(argv: &[String]) -> i32 {
    if argv.iter().any(|a| a == "--help" || a == "-h") {
        write_once(help::GRAPH_HELP, "");
        return 0;
    }
    let printer = Printer {
        mode: Mode::Human,
        max_bytes: None,
        text: None,
    };
    match crate::workflow::graph::graph_cli(argv) {
        Ok(text) => {
            write_once(&text, "");
            0
        }
        Err(e) => printer.error(&e),
    }
}

/// The context of one CLI run (see [`crate::app::context::build_context`]).
pub(crate) fn build_context(
    mode: Mode,
    limits: &LimitArgs,
    cwd: Option<&str>,
    sandbox: Option<&crate::app::options::SandboxArgs>,
) -> Result<Context> {
    progress::install(mode);
    let steps = sandbox.map(StepOptions::try_from).transpose()?;
    let mut ctx = crate::app::context::build_context(mode, limits, cwd, steps.as_ref())?;
    ctx.journal = crate::journal::Journal::planned("cli", None);
    ctx.broker.attach_journal(ctx.journal.clone());
    output::announce_run(&ctx.journal);
    Ok(ctx)
}

/// The settings of the CLI's one run: the operator's `--policy` and step
/// flags; its deadline stops while components compile.
fn cli_settings(
    policy: Option<String>,
    sandbox: &crate::app::options::SandboxArgs,
) -> Result<Settings> {
    Ok(Settings {
        policy,
        steps: StepOptions::try_from(sandbox)?,
        deadline_pauses: true,
        door: "cli",
        ..Settings::default()
    })
}

/// Start a prepared run with the signal handlers armed and wait for it. A
/// run that does not stop within the grace after its cancellation ends the
/// wait with the cancellation error (the process then exits with it).
fn run_prepared(prepared: Prepared) -> Arc<Finished> {
    // Without handlers a signal still ends the process, just without the envelope.
    let _ = crate::process::install_signal_handlers(&prepared.ctx.cancel);
    let cancel = prepared.ctx.cancel.clone();
    let finished = crate::app::start_prepared(prepared, StartOptions::default()).wait();
    if cancel.is_cancelled() {
        // A compile about to finish stores its artefact for the next run.
        crate::sandbox::compile::wait_idle(Duration::from_secs(3));
    }
    finished
}

/// A lone unknown word may be a mistyped subcommand or a mistyped pipeline
/// command: the hint suggests from both.
fn word_hint(word: &str, registry: &Registry) -> String {
    let sub = crate::executor::suggest(word, subcommands::SUBCOMMANDS.iter().map(|s| s.name));
    let cmd = crate::executor::suggest(word, registry.names());
    match (sub, cmd) {
        (Some(s), Some(c)) => format!(
            "did you mean the subcommand `lobster {s}` or the command `{c}`? (`lobster help` lists both)"
        ),
        (Some(s), None) => {
            format!("did you mean `lobster {s}`? (`lobster help` lists the subcommands)")
        }
        (None, Some(c)) => format!("did you mean `{c}`? (`lobster help` lists every command)"),
        (None, None) => "`lobster help` lists the subcommands and every command".into(),
    }
}

/// `lobster run …`, or (`fallback`) `lobster …` with no subcommand: the
/// first word is then also a possible mistyped subcommand.
fn run(argv: &[String], fallback: bool) -> i32 {
    let (mode, parsed) = run_args::parse_run_args(argv);
    let mut printer = Printer {
        mode,
        max_bytes: None,
        text: None,
    };
    let args = match parsed {
        Ok(a) => a,
        Err(e) => return printer.error(&e),
    };
    if args.help {
        write_once(help::RUN_HELP, "");
        return 0;
    }
    if let Some(missing) = workflow_file::missing_workflow(&args) {
        return printer.error(&missing);
    }
    let target = match workflow_file::workflow_target(&args) {
        Some(_) if args.file.is_some() && !args.rest.is_empty() => {
            return printer.error(&Error::parse(
                "run --file takes no pipeline text (got extra arguments)",
            ))
        }
        Some(file) => RunTarget::OperatorFile(file),
        None => RunTarget::Pipeline(args.pipeline_text()),
    };
    let request = RunRequest {
        target,
        args: None,
        args_json: args.args_json.clone(),
        cwd: args.cwd.clone(),
        limits: args.limits.clone(),
        strict_args: false,
        mode,
    };
    progress::install(mode);
    let prepared = cli_settings(args.limits.policy.clone(), &args.sandbox).and_then(|settings| {
        crate::app::prepare(&settings, &Request::Run(request), &Cancel::default())
    });
    let prepared = match prepared {
        Ok(p) => p,
        Err(e) => return printer.error(&e),
    };
    output::announce_run(&prepared.ctx.journal);
    printer.max_bytes = prepared.ctx.limits.max_output_bytes;
    if let Work::Pipeline(text) = &prepared.work {
        printer.text = Some(text.clone());
    }
    if args.dry_run {
        let plan = match &prepared.work {
            Work::Pipeline(text) => dry_run(text, &prepared.ctx),
            Work::Workflow { path, args_json } => {
                crate::workflow::dry_run::plan(path, args_json.as_deref(), &prepared.ctx)
            }
            Work::Resume(_) => unreachable!("a run request"),
        };
        return match plan {
            Ok(plan) => {
                write_once("", &plan);
                0
            }
            Err(e) => printer.error(&e),
        };
    }
    let first_word = argv.first().cloned().unwrap_or_default();
    let registry = prepared.ctx.registry.clone();
    let finished = run_prepared(prepared);
    match (&finished.result, finished.workflow && mode == Mode::Human) {
        (Ok(paused), true) => workflow_file::print_human(paused.clone(), &printer),
        (result, _) => printer.finish(result.clone().map_err(|e| {
            // `lobster rnu …`: the unknown first word may be a subcommand.
            if fallback && e.to_string() == format!("Unknown command: {first_word}") {
                e.with_hint(word_hint(&first_word, &registry))
            } else {
                e
            }
        })),
    }
}

/// Parse, validate and run pipeline text to a printable result.
pub(crate) fn run_text(text: &str, ctx: &Context) -> Result<Paused> {
    crate::app::start::run_text(text, ctx)
}

/// The reference's dry-run plan (to stderr): `[DRY RUN] Pipeline (n stages):`
/// and one line per stage with its arguments.
fn dry_run(text: &str, ctx: &Context) -> Result<String> {
    let pipeline = crate::dsl::parse(text)?;
    crate::executor::plan(&pipeline, 0, ctx)?;
    let n = pipeline.stages.len();
    let mut lines = vec![format!(
        "[DRY RUN] Pipeline ({n} stage{}):",
        if n == 1 { "" } else { "s" }
    )];
    for (i, stage) in pipeline.stages.iter().enumerate() {
        let mut parts: Vec<String> = stage.args.positional.clone();
        parts.extend(
            stage
                .args
                .flags
                .iter()
                .map(|(k, v)| format!("{k}={}", v.as_str())),
        );
        let args = if parts.is_empty() {
            String::new()
        } else {
            format!("  args: {}", parts.join(", "))
        };
        lines.push(format!("  {}. {}{args}", i + 1, stage.name));
    }
    lines.push(String::new());
    Ok(lines.join("\n"))
}

fn resume(argv: &[String]) -> i32 {
    if argv.iter().any(|a| a == "--help" || a == "-h") {
        write_once(help::RESUME_HELP, "");
        return 0;
    }
    // `resume` always answers with a tool envelope.
    let mut printer = Printer {
        mode: Mode::Tool,
        max_bytes: None,
        text: None,
    };
    let args = match resume_args::parse_resume_args(argv) {
        Ok(a) => a,
        Err(e) => return printer.error(&e),
    };
    progress::install(Mode::Tool);
    let settings = Settings {
        policy: args.limits.policy.clone(),
        deadline_pauses: true,
        door: "cli",
        ..Settings::default()
    };
    let request = Request::Resume(ResumeCall {
        request: args.request,
        limits: args.limits,
        cwd: args.cwd,
    });
    let prepared = match crate::app::prepare(&settings, &request, &Cancel::default()) {
        Ok(p) => p,
        Err(e) => return printer.error(&e),
    };
    output::announce_run(&prepared.ctx.journal);
    printer.max_bytes = prepared.ctx.limits.max_output_bytes;
    printer.finish(run_prepared(prepared).result.clone())
}

/// Human-readable error text, for callers outside this module.
pub fn render_error(e: &Error, text: Option<&str>) -> String {
    human_error(e, text)
}
