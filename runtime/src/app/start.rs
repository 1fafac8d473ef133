//! Starting a run: the one place where every run of every door begins
//! ([`prepare`], then [`start_prepared`]) and ends (the handle settles
//! once, with the run's result or, when a cancelled run does not stop
//! within [`CANCEL_GRACE`], with its cancellation error).
//!
//! A run executes on a thread of its own: a thread of tokio's blocking pool
//! when the door runs on tokio (`lobster serve`, `lobster mcp`: reused from
//! run to run), else a plain thread (the CLI's one run). Nothing else holds
//! a thread for it: its deadline and its grace are events on the process's
//! one timer thread ([`crate::kernel::timer`]), and a waiter blocks on the
//! handle ([`RunHandle::wait`]) or awaits it ([`RunHandle::finished`]).

use super::context::context_builder;
use super::gate::Taken;
use super::journal;
use super::options::{LimitArgs, StepOptions};
use super::request::{ResumeCall, RunRequest};
use super::target::{self, Resolved};
use super::{Reply, Settings};
use crate::error::{Error, Result};
use crate::kernel::{Cancel, Context, LogSink, Mode};
use crate::resume::{finish_run, Paused, ResumeRequest};
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long a cancelled run may take to stop before its handle settles
/// with the cancellation error anyway.
pub const CANCEL_GRACE: Duration = Duration::from_millis(1000);

/// Stack of a run's own thread when it is not tokio's (the size of a main
/// thread's: the CLI used to run on its main thread).
const RUN_STACK: usize = 8 << 20;

/// A run or a resume, as every door hands it over.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    /// Run a pipeline or a workflow.
    Run(RunRequest),
    /// Resume a paused run.
    Resume(ResumeCall),
}

/// What a run was started with besides its request.
#[derive(Default)]
pub struct StartOptions {
    /// The run's cancellation handle (a door that cancels keeps a clone).
    pub cancel: Cancel,
    /// Where step log lines go (`None`: the process's stderr).
    pub log: Option<LogSink>,
    /// Called once, on a thread that may block, when the run settles,
    /// before any waiter is woken.
    pub on_settle: Option<OnSettle>,
    /// The id the door answers with (`lobster serve`'s `runId`): the run's
    /// journal is kept under it (`None`: a fresh id).
    pub run_id: Option<String>,
    /// A resume's gate, taken by the door already ([`super::gate::take`]
    /// with the door's approver rule). `None`: the run takes it itself,
    /// with the operator's rule ([`super::gate::operator`]), before
    /// anything runs.
    pub gate: Option<Taken>,
    /// The door the run came through, for its journal, when a front door
    /// has several (`lobster serve`'s `/mcp` and approval page); `None`:
    /// the settings' ([`Settings::door`]).
    pub door: Option<&'static str>,
}

/// How a run ended.
#[derive(Debug, Clone)]
pub struct Finished {
    /// The envelope (and rendered text), or the error.
    pub result: Result<Paused>,
    /// The run's output cap (`maxStdoutBytes`), when it was known.
    pub max_output: Option<usize>,
    /// Whether it ran a workflow file (the CLI prints those its own way).
    pub workflow: bool,
    /// A resume whose decision was refused before its gate was spent (a
    /// check in the paused run's context): the gate is open as it was, and
    /// `result` says why.
    pub refused: bool,
}

impl Finished {
    /// A run that ended with `error` before it started.
    fn failed(error: Error) -> Finished {
        Finished {
            result: Err(error),
            max_output: None,
            workflow: false,
            refused: false,
        }
    }

    /// The tool envelope and exit code, with the output cap applied.
    pub fn reply(&self) -> Reply {
        Reply::from_result(&self.result, self.max_output)
    }
}

/// A run whose context is built and whose target is resolved: nothing has
/// run yet.
pub struct Prepared {
    /// The run's context.
    pub ctx: Context,
    /// What it runs.
    pub work: Work,
    /// Whether its deadline pauses while components compile (the CLI's).
    pauses: bool,
    /// A resume's gate, taken: given back or spent when the run ends.
    gate: Option<Taken>,
}

/// What a prepared run does.
#[derive(Debug, Clone, PartialEq)]
pub enum Work {
    /// Run this pipeline text.
    Pipeline(String),
    /// Run the workflow file at `path` with these `--args-json`.
    Workflow {
        /// The file.
        path: PathBuf,
        /// The args, as JSON text.
        args_json: Option<String>,
    },
    /// Decide a paused run's gate and continue it.
    Resume(ResumeRequest),
}

/// The context of a run or resume under `settings`: the request's limits
/// under the settings' policy, store, endpoint sources and root.
fn context_of(
    settings: &Settings,
    mode: Mode,
    limits: &LimitArgs,
    cwd: Option<&str>,
    steps: Option<&StepOptions>,
    cancel: &Cancel,
) -> Result<Context> {
    let mut limits = limits.clone();
    limits.policy = settings.policy.clone();
    Ok(context_builder(
        mode,
        &limits,
        cwd,
        steps,
        settings.store(),
        settings.fixed_policy.as_ref(),
        settings.sources(),
        settings.root.as_ref(),
    )?
    .cancel(cancel.clone())
    .build())
}

/// Build the context of `request` (its limits, policy, directory, grants
/// and steps; its journal as the settings plan it) and resolve its target.
/// Blocking (the store is asked); every refusal of the request comes from
/// here, before anything runs.
pub fn prepare(settings: &Settings, request: &Request, cancel: &Cancel) -> Result<Prepared> {
    prepare_as(settings, request, cancel, None, None, None)
}

/// [`prepare`], the journal kept under `run_id` when given, as coming
/// through `door` when given.
fn prepare_as(
    settings: &Settings,
    request: &Request,
    cancel: &Cancel,
    run_id: Option<String>,
    gate: Option<Taken>,
    door: Option<&'static str>,
) -> Result<Prepared> {
    let pauses = settings.deadline_pauses;
    let mut prepared = match request {
        Request::Run(run) => {
            let args_json = run.args_text()?;
            target::check_request(settings, run)?;
            let ctx = context_of(
                settings,
                run.mode,
                &run.limits,
                run.cwd.as_deref(),
                Some(&settings.steps),
                cancel,
            )?;
            let work = match target::resolve(settings, run, &ctx.cwd)? {
                Resolved::Pipeline(text) => Work::Pipeline(text),
                Resolved::Workflow(path) => Work::Workflow { path, args_json },
            };
            Prepared {
                ctx,
                work,
                pauses,
                gate: None,
            }
        }
        Request::Resume(call) => {
            let ctx = context_of(
                settings,
                Mode::Tool,
                &call.limits,
                call.cwd.as_deref(),
                None,
                cancel,
            )?;
            // Every door decides a gate through the one function: taken by
            // the door with its approver rule, else here with the operator's.
            let gate = match gate {
                Some(taken) => taken,
                None => super::gate::take(&ctx.state, &call.request, &super::gate::operator)?,
            };
            Prepared {
                ctx,
                work: Work::Resume(call.request.clone()),
                pauses,
                gate: Some(gate),
            }
        }
    };
    prepared.ctx.sandbox.observer = settings.observer.clone();
    // A resume continues the paused run's journal (its id is the chain's).
    let run_id = run_id.filter(|_| matches!(request, Request::Run(_)));
    prepared.ctx.journal = settings.journal(door, run_id);
    prepared
        .ctx
        .broker
        .attach_journal(prepared.ctx.journal.clone());
    Ok(prepared)
}

impl Prepared {
    /// `work` in a context the caller built itself (`lobster replay`: the
    /// recorded run's clock, seed, grants and a replay journal); its
    /// deadline does not pause.
    pub fn with_context(ctx: Context, work: Work) -> Prepared {
        Prepared {
            ctx,
            work,
            pauses: false,
            gate: None,
        }
    }

    /// Run it on this thread, to its result (no deadline is armed here),
    /// journaled from its start to its end when the context's journal is
    /// planned. A resume's gate (taken by [`prepare`]) is spent or given
    /// back at the end.
    pub fn run(self) -> Result<Paused> {
        self.run_gated().0
    }

    /// [`Prepared::run`]; the second value says whether a resume's gate
    /// was given back (see [`Finished::refused`]).
    fn run_gated(mut self) -> (Result<Paused>, bool) {
        let gate = self.gate.take();
        let store = self.ctx.state.clone();
        let result = self.run_work();
        let refused = gate.is_some_and(|g| super::gate::release_after(&store, &g, result.is_err()));
        (result, refused)
    }

    /// Give a resume's gate back without running.
    fn abandon(mut self) {
        if let Some(g) = self.gate.take() {
            super::gate::release(&self.ctx.state, &g);
        }
    }

    fn run_work(mut self) -> Result<Paused> {
        let result = match self.work {
            Work::Pipeline(text) => return run_text(&text, &self.ctx),
            Work::Workflow { path, args_json } => {
                // The journal records the text the loader read (once, as
                // the run's authority opens it), which is what runs. A path
                // that names no file starts no run (nothing to record); a
                // file that cannot be read is recorded with no text.
                let read = crate::workflow::read_root(&path, Some(self.ctx.authority()));
                if !self.ctx.journal.door().is_empty() && (read.is_ok() || path.is_file()) {
                    let (text, digest) = match &read {
                        Ok(r) => (&*r.text, Some(r.source.digest.clone())),
                        Err(_) => ("", None),
                    };
                    let request =
                        journal::workflow_request(&path, text, digest, args_json.as_deref());
                    journal::begin(&self.ctx, request, Vec::new())?;
                }
                crate::workflow::run_read(read, args_json.as_deref(), &self.ctx)
            }
            // The engine continues the paused run's journal at the decision;
            // this leg's end is recorded below.
            Work::Resume(request) => super::resume::resume(&request, &mut self.ctx),
        };
        journal::finish(&self.ctx, &result);
        result
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
        let outcome = crate::executor::run_pipeline(&pipeline, 0, Vec::new(), ctx)?;
        finish_run(text, &pipeline, outcome, ctx)
    });
    journal::finish(ctx, &result);
    result
}

/// Start `request` with `settings`: prepared and run on the run's thread.
pub fn start(settings: Arc<Settings>, request: Request, opts: StartOptions) -> RunHandle {
    let handle = RunHandle::new(opts.cancel.clone(), opts.on_settle);
    let h = handle.clone();
    let (log, run_id, gate, door) = (opts.log, opts.run_id, opts.gate, opts.door);
    let unstarted = gate.clone().map(|g| (g, settings.store()));
    let spawned = spawn_run(move || {
        let given = gate.clone();
        let prepared = prepare_as(&settings, &request, h.cancel(), run_id, gate, door);
        match prepared {
            Ok(mut p) => {
                if let Some(log) = log {
                    p.ctx.sandbox.log = log;
                }
                run_to_end(p, &h)
            }
            Err(e) => {
                // A gate the door took is given back: nothing ran.
                let refused = given.is_some_and(|g| {
                    super::gate::release(&settings.store(), &g);
                    true
                });
                h.settle(Finished {
                    refused,
                    ..Finished::failed(e)
                })
            }
        }
    });
    if let Err(e) = spawned {
        if let Some((g, store)) = &unstarted {
            super::gate::release(store, g);
        }
        handle.settle(Finished {
            refused: unstarted.is_some(),
            ..Finished::failed(Error::runtime(format!(
                "cannot start the run's thread: {e}"
            )))
        });
    }
    handle
}

/// Start a run [`prepare`]d already (the CLI looks at it first).
pub fn start_prepared(prepared: Prepared, opts: StartOptions) -> RunHandle {
    let handle = RunHandle::new(prepared.ctx.cancel.clone(), opts.on_settle);
    let h = handle.clone();
    let slot = Arc::new(Mutex::new(Some(prepared)));
    let mine = slot.clone();
    let spawned = spawn_run(move || {
        if let Some(p) = mine.lock().unwrap_or_else(|p| p.into_inner()).take() {
            run_to_end(p, &h)
        }
    });
    if let Err(e) = spawned {
        if let Some(p) = slot.lock().unwrap_or_else(|p| p.into_inner()).take() {
            p.abandon();
        }
        handle.settle(Finished::failed(Error::runtime(format!(
            "cannot start the run's thread: {e}"
        ))));
    }
    handle
}

/// Arm the deadline, run, settle. The journal's run start and end belong
/// here: every door's runs pass through this function.
fn run_to_end(prepared: Prepared, handle: &RunHandle) {
    let cancel = prepared.ctx.cancel.clone();
    let max_output = prepared.ctx.limits.max_output_bytes;
    let workflow = matches!(prepared.work, Work::Workflow { .. });
    if let Some(timeout) = prepared.ctx.limits.timeout {
        if prepared.pauses {
            cancel.arm_deadline(timeout);
        } else {
            cancel.arm_wall_deadline(timeout);
        }
    }
    let (result, refused) = prepared.run_gated();
    handle.settle(Finished {
        result,
        max_output,
        workflow,
        refused,
    });
}

/// Run `f` on a thread of tokio's blocking pool when there is a runtime,
/// else on a thread of its own.
fn spawn_run(f: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
    match tokio::runtime::Handle::try_current() {
        Ok(rt) => {
            rt.spawn_blocking(f);
            Ok(())
        }
        Err(_) => std::thread::Builder::new()
            .name("lobster-run".into())
            .stack_size(RUN_STACK)
            .spawn(f)
            .map(|_| ()),
    }
}

/// A run going on: its cancellation handle, and its end to wait for.
#[derive(Clone)]
pub struct RunHandle(Arc<Shared>);

/// Called once with a run's end (see [`StartOptions::on_settle`]).
pub type OnSettle = Box<dyn FnOnce(&Finished) + Send>;

struct Shared {
    cancel: Cancel,
    done: Mutex<Option<Arc<Finished>>>,
    settled: Condvar,
    notify: tokio::sync::Notify,
    on_settle: Mutex<Option<OnSettle>>,
}

impl RunHandle {
    fn new(cancel: Cancel, on_settle: Option<OnSettle>) -> RunHandle {
        let shared = Arc::new(Shared {
            cancel: cancel.clone(),
            done: Mutex::new(None),
            settled: Condvar::new(),
            notify: tokio::sync::Notify::new(),
            on_settle: Mutex::new(on_settle),
        });
        // Cancelled: the run gets CANCEL_GRACE to stop, then the handle
        // settles with the cancellation error (naming the step that was
        // running when it fired).
        let weak = Arc::downgrade(&shared);
        cancel.on_trigger(move |_| {
            let running = crate::sandbox::activity::running();
            crate::kernel::timer::at(Instant::now() + CANCEL_GRACE, move || {
                let Some(shared) = weak.upgrade() else { return };
                let handle = RunHandle(shared);
                if handle.get().is_some() {
                    return;
                }
                let error = handle.0.cancel.error_during(running);
                // Off the timer thread: settling may write records.
                std::thread::spawn(move || handle.settle(Finished::failed(error)));
            });
        });
        RunHandle(shared)
    }

    /// The run's cancellation handle.
    pub fn cancel(&self) -> &Cancel {
        &self.0.cancel
    }

    /// How the run ended, if it has.
    pub fn get(&self) -> Option<Arc<Finished>> {
        self.0
            .done
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Block until the run ends.
    pub fn wait(&self) -> Arc<Finished> {
        let mut done = self.0.done.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(f) = done.as_ref() {
                return f.clone();
            }
            done = self.0.settled.wait(done).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Wait for the run to end without holding a thread.
    pub async fn finished(&self) -> Arc<Finished> {
        loop {
            let notified = self.0.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(f) = self.get() {
                return f;
            }
            notified.await;
        }
    }

    /// Settle the run with `finished` unless it settled already; the first
    /// settlement wins. Runs the start's `on_settle`, then wakes waiters.
    fn settle(&self, finished: Finished) {
        let finished = Arc::new(finished);
        {
            let mut done = self.0.done.lock().unwrap_or_else(|p| p.into_inner());
            if done.is_some() {
                return;
            }
            *done = Some(finished.clone());
        }
        let hook = self
            .0
            .on_settle
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(hook) = hook {
            hook(&finished);
        }
        // Waiters look only after taking the lock: none misses the wake-up.
        drop(self.0.done.lock().unwrap_or_else(|p| p.into_inner()));
        self.0.settled.notify_all();
        self.0.notify.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::CancelReason;

    fn settings_in(dir: &std::path::Path) -> Arc<Settings> {
        Arc::new(Settings {
            state: Some(crate::state::StateStore::new(dir)),
            ..Settings::default()
        })
    }

    #[test]
    fn a_run_settles_once_and_every_waiter_sees_it() {
        let dir = tempfile::tempdir().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let handle = start(
            settings_in(dir.path()),
            Request::Run(RunRequest::pipeline(
                "exec --json --shell 'echo [1,2]' | head --n 1",
            )),
            StartOptions {
                on_settle: Some(Box::new(move |f| {
                    tx.send(f.reply().status().map(String::from)).unwrap()
                })),
                ..StartOptions::default()
            },
        );
        let other = handle.clone();
        let waiter = std::thread::spawn(move || other.wait().reply());
        let reply = handle.wait().reply();
        assert_eq!(reply.status(), Some("ok"), "{reply:?}");
        assert_eq!(waiter.join().unwrap(), reply);
        assert_eq!(rx.recv().unwrap().as_deref(), Some("ok"));
        assert!(rx.try_recv().is_err(), "settled twice");
    }

    #[test]
    fn a_run_that_does_not_stop_settles_after_the_grace() {
        let cancel = Cancel::default();
        // A run whose thread is stuck (it ignores the cancellation) until
        // released, then settles too late.
        let handle = RunHandle::new(cancel.clone(), None);
        let h = handle.clone();
        let (release, stuck) = std::sync::mpsc::channel::<()>();
        std::thread::spawn(move || {
            let _ = stuck.recv();
            h.settle(Finished::failed(Error::runtime("late")));
        });
        let started = Instant::now();
        cancel.trigger(CancelReason::Signal {
            name: "SIGINT",
            number: 2,
        });
        let f = handle.wait();
        assert!(started.elapsed() >= CANCEL_GRACE);
        assert_eq!(
            f.result.as_ref().unwrap_err().to_string(),
            "Received SIGINT"
        );
        release.send(()).unwrap();
    }

    #[tokio::test]
    async fn an_async_waiter_holds_no_thread_and_sees_the_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let mut request = RunRequest::pipeline("exec --shell 'sleep 5'");
        request.limits.timeout_ms = Some(300);
        let handle = start(
            settings_in(dir.path()),
            Request::Run(request),
            StartOptions::default(),
        );
        let started = Instant::now();
        let reply = handle.finished().await.reply();
        assert!(started.elapsed() < Duration::from_secs(4), "{reply:?}");
        assert_eq!(
            reply
                .envelope
                .pointer("/error/message")
                .and_then(|m| m.as_str()),
            Some("lobster runtime timed out")
        );
    }
}
