//! `lobster run` and `lobster resume`: the CLI's one run, through `app`
//! with the signal handlers armed, printed for a person or as the tool
//! envelope; and the context `doctor`'s probe runs in.

use super::output::{self, write_once, Printer};
use super::{help, progress, resume_args, run_args, workflow_file};
use crate::app::options::LimitArgs;
use crate::app::{
    Finished, Prepared, Request, ResumeCall, RunRequest, RunTarget, Settings, StartOptions,
    StepOptions, Work,
};
use crate::error::{Error, Result};
use crate::kernel::{Cancel, Context, Mode};
use std::sync::Arc;
use std::time::Duration;

/// The context of one CLI run (see [`crate::app::context::build_context`]).
pub(super) fn build_context(
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

/// `lobster run …`, or (`fallback`) `lobster …` with no subcommand: the
/// first word is then also a possible mistyped subcommand.
pub(super) fn run(argv: &[String], fallback: bool) -> i32 {
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
        return match crate::app::dry_run::plan(&prepared) {
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
                e.with_hint(super::topics::word_hint(&first_word, &registry))
            } else {
                e
            }
        })),
    }
}

/// `lobster resume …`: always answers with a tool envelope.
pub(super) fn resume(argv: &[String]) -> i32 {
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
