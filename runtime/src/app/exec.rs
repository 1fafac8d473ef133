//! Running and resuming for the front doors: build the run's context, run it
//! on a worker thread under the call's deadline and cancellation handle, and
//! turn the outcome into a [`Reply`].

use super::context::context_builder;
use super::journal;
use super::request::{ResumeCall, RunRequest, RunTarget};
use super::Settings;
use crate::envelope::{error_envelope, error_envelope_of};
use crate::error::{Error, Result};
use crate::executor::run_pipeline;
use crate::kernel::{Cancel, CancelReason, Context, LogSink, Mode};
use crate::resume::{finish_run, Paused};
use crate::value::{to_js_json_pretty, Item};
use crate::workflow::{has_workflow_extension, looks_like_workflow};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long a cancelled run may take to stop before the call answers anyway.
pub const CANCEL_GRACE: Duration = Duration::from_millis(1000);

/// The answer to one call: the tool envelope and the exit code the CLI
/// would have ended with (0 ok/paused/cancelled, 1 runtime error, 2 parse
/// error, 128+n for a signal).
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub envelope: Item,
    pub exit_code: i32,
}

impl Reply {
    /// Whether the envelope is a success (`ok: true`, any status).
    pub fn ok(&self) -> bool {
        self.envelope.get("ok") == Some(&Item::Bool(true))
    }

    /// `status` of a successful envelope.
    pub fn status(&self) -> Option<&str> {
        self.envelope.get("status").and_then(Item::as_str)
    }

    /// An error reply.
    pub fn error(e: &Error) -> Reply {
        Reply {
            envelope: error_envelope(e),
            exit_code: e.exit_code(),
        }
    }

    /// The reply for a run's result, with the output cap applied to the
    /// envelope's printed size exactly as `--mode tool` applies it.
    pub fn from_result(result: Result<Paused>, max_bytes: Option<usize>) -> Reply {
        let paused = match result {
            Ok(p) => p,
            Err(e) => return Reply::error(&e),
        };
        let envelope = paused.envelope.to_json();
        if let Some(cap) = max_bytes {
            // The CLI prints the pretty JSON plus a newline.
            if to_js_json_pretty(&envelope).len() + 1 > cap {
                return Reply {
                    envelope: error_envelope_of(
                        "runtime_error",
                        "lobster runtime result exceeded maxStdoutBytes",
                    ),
                    exit_code: 1,
                };
            }
        }
        Reply {
            envelope,
            exit_code: 0,
        }
    }
}

/// Parse, validate and run pipeline text to a result, journaled (when the
/// context's journal is planned) from its start to its end.
pub fn run_text(text: &str, ctx: &Context) -> Result<Paused> {
    let parsed = crate::dsl::parse(text);
    let components = match &parsed {
        Ok(p) if !ctx.journal.door().is_empty() => journal::pipeline_components(p, ctx),
        _ => Vec::new(),
    };
    journal::begin(ctx, journal::pipeline_request(text), components)?;
    let result = parsed.and_then(|pipeline| {
        let outcome = run_pipeline(&pipeline, 0, Vec::new(), ctx)?;
        finish_run(text, &pipeline, outcome, ctx)
    });
    journal::finish(ctx, &result);
    result
}

/// Run the workflow file at `path`, journaled from its start to its end.
pub fn run_workflow_file(path: &Path, args_json: Option<&str>, ctx: &Context) -> Result<Paused> {
    // A path that names no file starts no run (nothing to record).
    if !ctx.journal.door().is_empty() && path.is_file() {
        journal::begin(ctx, journal::workflow_request(path, args_json), Vec::new())?;
    }
    let result = crate::workflow::run_file(path, args_json, ctx);
    journal::finish(ctx, &result);
    result
}

/// Resume a paused run; the engine continues the paused run's journal at
/// the decision, and this leg's end is recorded here.
pub fn resume_journaled(
    request: &crate::resume::ResumeRequest,
    ctx: &mut Context,
) -> Result<Paused> {
    let result = super::resume::resume(request, ctx);
    journal::finish(ctx, &result);
    result
}

/// Run a pipeline or workflow in tool mode. Blocks until the run ends, its
/// deadline passes, or `cancel` fires (see the module docs for the grace).
pub fn run(settings: &Settings, request: &RunRequest, cancel: &Cancel) -> Reply {
    run_logged(settings, request, cancel, None)
}

/// [`run`], with the log lines of WebAssembly steps sent to `log` instead
/// of the process's stderr.
pub fn run_logged(
    settings: &Settings,
    request: &RunRequest,
    cancel: &Cancel,
    log: Option<LogSink>,
) -> Reply {
    run_as(settings, request, cancel, log, None)
}

/// [`run_logged`] as run `run_id` (the id the door answers with, e.g.
/// `lobster serve`'s `runId`; `None`: a fresh one): the run's journal is
/// kept under it.
pub fn run_as(
    settings: &Settings,
    request: &RunRequest,
    cancel: &Cancel,
    log: Option<LogSink>,
    run_id: Option<String>,
) -> Reply {
    let prepared = prepare_run(settings, request, cancel);
    let (mut ctx, work) = match prepared {
        Ok(p) => p,
        Err(e) => return Reply::error(&e),
    };
    ctx.journal = settings.journal(run_id);
    ctx.broker.attach_journal(ctx.journal.clone());
    if let Some(log) = log {
        ctx.sandbox.log = log;
    }
    let max = ctx.limits.max_output_bytes;
    Reply::from_result(supervised(ctx, work), max)
}

/// Resume a paused run in tool mode (in the paused run's working directory,
/// with its grants). Blocks like [`run`].
pub fn resume(settings: &Settings, call: &ResumeCall, cancel: &Cancel) -> Reply {
    resume_logged(settings, call, cancel, None)
}

/// [`resume`], with step log lines sent to `log` (see [`run_logged`]).
pub fn resume_logged(
    settings: &Settings,
    call: &ResumeCall,
    cancel: &Cancel,
    log: Option<LogSink>,
) -> Reply {
    let mut limits = call.limits.clone();
    limits.policy = settings.policy.clone();
    let mut ctx = match context_builder(
        Mode::Tool,
        &limits,
        None,
        None,
        settings.store(),
        settings.fixed_policy.as_ref(),
        settings.sources(),
        settings.root.as_ref(),
    ) {
        Ok(c) => c.cancel(cancel.clone()).build(),
        Err(e) => return Reply::error(&e),
    };
    ctx.sandbox.observer = settings.observer.clone();
    ctx.journal = settings.journal(None);
    ctx.broker.attach_journal(ctx.journal.clone());
    if let Some(log) = log {
        ctx.sandbox.log = log;
    }
    let max = ctx.limits.max_output_bytes;
    let request = call.request.clone();
    let work: Work = Box::new(move |ctx: &mut Context| resume_journaled(&request, ctx));
    Reply::from_result(supervised(ctx, work), max)
}

type Work = Box<dyn FnOnce(&mut Context) -> Result<Paused> + Send>;

fn prepare_run(
    settings: &Settings,
    request: &RunRequest,
    cancel: &Cancel,
) -> Result<(Context, Work)> {
    let args_text = request.args_text()?;
    if settings.no_server_files {
        refuse_server_files(request)?;
    }
    let mut limits = request.limits.clone();
    limits.policy = settings.policy.clone();
    let mut ctx = context_builder(
        Mode::Tool,
        &limits,
        request.cwd.as_deref(),
        Some(&settings.sandbox),
        settings.store(),
        settings.fixed_policy.as_ref(),
        settings.sources(),
        settings.root.as_ref(),
    )?
    .cancel(cancel.clone())
    .build();
    ctx.sandbox.observer = settings.observer.clone();
    let workflow: Option<PathBuf> = match &request.target {
        RunTarget::Pipeline(text) => {
            let text = text.trim();
            if text.is_empty() {
                return Err(Error::parse("pipeline required"));
            }
            // `lobster run wf.lobster`: a lone workflow path runs the
            // workflow. Through `lobster mcp` it is contained exactly like
            // `workflow:` (a path that leads out of the working directory
            // is refused, not run); `lobster call` keeps the reference's
            // lookup.
            match lone_workflow_path(text) {
                Some(path)
                    if settings.door() == "mcp"
                        && (looks_like_workflow_in(&ctx.cwd, path) || path.contains("..")) =>
                {
                    Some(workflow_inside(&ctx.cwd, path)?)
                }
                _ => (is_lone_word(text) && looks_like_workflow_in(&ctx.cwd, text))
                    .then(|| ctx.cwd.join(text)),
            }
        }
        RunTarget::WorkflowFile(path) => Some(workflow_inside(&ctx.cwd, path)?),
        RunTarget::WorkflowPath(path) => Some(path.clone()),
        RunTarget::WorkflowNamed(name) => {
            let entry = settings.catalog.get(name).ok_or_else(|| {
                Error::parse(format!("unknown workflow: {name}")).with_hint(format!(
                    "the workflows are: {}",
                    settings.catalog.names().join(", ")
                ))
            })?;
            if request.strict_args {
                entry.check_arg_names(request.args.as_ref())?;
            }
            Some(entry.file.clone())
        }
    };
    let work: Work = match (workflow, &request.target) {
        (Some(path), _) => {
            Box::new(move |ctx: &mut Context| run_workflow_file(&path, args_text.as_deref(), ctx))
        }
        (None, RunTarget::Pipeline(text)) => {
            let text = text.clone();
            Box::new(move |ctx: &mut Context| run_text(&text, ctx))
        }
        (None, _) => unreachable!("workflow targets always resolve to a path"),
    };
    Ok((ctx, work))
}

fn looks_like_workflow_in(cwd: &Path, text: &str) -> bool {
    if Path::new(text).is_absolute() {
        return looks_like_workflow(text);
    }
    let joined = cwd.join(text);
    has_workflow_extension(&joined) && joined.is_file()
}

/// Whether a (trimmed) pipeline text is one word: no stages, no arguments.
fn is_lone_word(text: &str) -> bool {
    !text.contains('|') && !text.contains(char::is_whitespace)
}

/// The path a pipeline text names when it is nothing but a workflow file's
/// name (`wf.lobster`), which `lobster run` runs as that workflow.
pub fn lone_workflow_path(text: &str) -> Option<&str> {
    let text = text.trim();
    (is_lone_word(text) && has_workflow_extension(Path::new(text))).then_some(text)
}

/// Under [`Settings::no_server_files`]: a request naming a file or
/// directory of this process is refused before anything runs.
fn refuse_server_files(request: &RunRequest) -> Result<()> {
    let hint = "this gateway runs the workflows of your catalog (by name) and inline workflow text, not files of the server";
    if request.cwd.is_some() {
        return Err(
            Error::parse("cwd is not accepted here: runs use the gateway's own directory")
                .with_hint(hint),
        );
    }
    match &request.target {
        RunTarget::WorkflowFile(path) => Err(Error::parse(format!(
            "unknown workflow: {path} (not in this tenant's catalog)"
        ))
        .with_hint(hint)),
        RunTarget::Pipeline(text) => match lone_workflow_path(text) {
            Some(path) => Err(
                Error::parse(format!("pipeline names a workflow file ({path})")).with_hint(hint),
            ),
            None => Ok(()),
        },
        _ => Ok(()),
    }
}

/// `path` relative to `cwd`, an existing workflow file opened beneath it
/// (no `..` above it, no symlink out; [`crate::kernel::root`]).
fn workflow_inside(cwd: &Path, path: &str) -> Result<PathBuf> {
    use crate::kernel::root::{open_file, Refused};
    if path.trim().is_empty() {
        return Err(Error::parse("workflow must name a file or a workflow"));
    }
    if Path::new(path).is_absolute() {
        return Err(Error::parse(format!(
            "workflow must be a path relative to the working directory (got {path})"
        )));
    }
    let base = cwd
        .canonicalize()
        .map_err(|e| Error::runtime(format!("cannot resolve working directory: {e}")))?;
    match open_file(&[base.as_path()], &base.join(path)) {
        Ok(opened) => Ok(opened.path),
        Err(Refused::Missing) => Err(Error::parse(format!("workflow file not found: {path}"))),
        Err(Refused::Outside) => Err(Error::parse(format!(
            "workflow must stay within the working directory (got {path})"
        ))),
        Err(Refused::WrongKind) => Err(Error::parse(format!("workflow is not a file: {path}"))),
        Err(Refused::Unreadable(e)) => Err(Error::runtime(format!(
            "cannot read workflow file {path}: {e}"
        ))),
    }
}

/// Run `work` on a thread of its own ([`super::run_threads`]: reused once
/// a run ends); the calling thread keeps the deadline and
/// answers with the cancellation error if the run has not stopped within
/// [`CANCEL_GRACE`] after the deadline or `ctx.cancel` fired.
fn supervised(mut ctx: Context, work: Work) -> Result<Paused> {
    let cancel = ctx.cancel.clone();
    let deadline = ctx.limits.timeout.map(|t| Instant::now() + t);
    let (tx, rx) = mpsc::channel();
    super::run_threads::spawn(move || {
        let result = work(&mut ctx);
        let _ = tx.send(result);
    })
    .map_err(|e| Error::runtime(format!("cannot start the run's thread: {e}")))?;
    let mut grace_until: Option<Instant> = None;
    loop {
        let now = Instant::now();
        if grace_until.is_none() {
            if deadline.is_some_and(|d| now >= d) {
                cancel.trigger(CancelReason::Timeout);
            }
            if cancel.is_cancelled() {
                grace_until = Some(now + CANCEL_GRACE);
            }
        }
        // Poll for an outside cancellation every 20 ms; a finished run wakes us at once.
        let wait = match (grace_until, deadline) {
            (Some(g), _) => g.saturating_duration_since(now),
            (None, Some(d)) => d
                .saturating_duration_since(now)
                .min(Duration::from_millis(20)),
            (None, None) => Duration::from_millis(20),
        };
        match rx.recv_timeout(wait) {
            Ok(result) => return result,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if grace_until.is_some_and(|g| Instant::now() >= g) {
                    let reason = cancel.reason().unwrap_or(CancelReason::Timeout);
                    return Err(reason.to_error());
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(Error::runtime("the run ended without a result"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workflow_paths_stay_inside() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("w.lobster"), "steps: []\n").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("out.lobster")).unwrap();
        assert!(workflow_inside(dir.path(), "w.lobster").is_ok());
        assert_eq!(
            workflow_inside(dir.path(), "/etc/passwd")
                .unwrap_err()
                .to_string(),
            "workflow must be a path relative to the working directory (got /etc/passwd)"
        );
        assert_eq!(
            workflow_inside(dir.path(), "nope.lobster")
                .unwrap_err()
                .to_string(),
            "workflow file not found: nope.lobster"
        );
        let escape = workflow_inside(dir.path(), "out.lobster");
        assert!(escape.is_err(), "{escape:?}");
    }

    #[test]
    fn output_cap_applies_to_the_envelope() {
        let paused = Paused {
            envelope: crate::envelope::Envelope::ok(vec![Item::String("x".repeat(2000))]),
            rendered: None,
        };
        let r = Reply::from_result(Ok(paused.clone()), Some(1024));
        assert!(!r.ok());
        assert_eq!(
            r.envelope.pointer("/error/message").and_then(Item::as_str),
            Some("lobster runtime result exceeded maxStdoutBytes")
        );
        let r = Reply::from_result(Ok(paused), None);
        assert_eq!(r.status(), Some("ok"));
    }
}
