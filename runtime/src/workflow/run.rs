//! Running a validated workflow: steps in order, each with its condition,
//! retries, timeout and error policy; gates stop the run with a [`Stop`].

use super::condition::Condition;
use super::gate::{self, ApprovalGate, InputGate};
use super::model::*;
use super::steps;
use super::steps::pipeline::{OutputText, Piped, PipelinePause};
use super::template::{self, MapScope, Style};
use crate::error::{Error, Result};
use crate::kernel::{Cancel, CancelReason, Context};
use crate::value::{to_js_json, Item};
use serde_json::{json, Map};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// How a run (or a resumed run) ended without an error.
#[derive(Debug)]
pub enum Stop {
    /// Every step ran (or `skip_rest` ended it).
    Done,
    /// Step `index` waits for approval.
    Approval { index: usize, gate: ApprovalGate },
    /// Step `index` waits for input.
    Input { index: usize, gate: InputGate },
    /// Pipeline step `index` waits for input at one of its stages.
    PipelineInput { index: usize, pause: PipelinePause },
}

/// Files a run has read (path and blake3 digest), for the resume check.
pub type FileDigests = Vec<(PathBuf, String)>;

/// One workflow being run.
pub struct Runner<'a> {
    pub wf: Arc<Workflow>,
    pub args: Map<String, Item>,
    /// Step results by id: `{id, stdout?, json?, approved?, skipped?, …}`.
    pub results: Map<String, Item>,
    /// The last step that completed (the run's output).
    pub last: Option<String>,
    pub ctx: &'a Context,
    /// Canonical paths of the workflows being executed (cycle detection).
    pub stack: Vec<PathBuf>,
    /// Every workflow file loaded by this run.
    pub files: FileDigests,
    /// The step (id) whose `stdout` is its output's JSON text
    /// ([`OutputText::Stdout`]), with the journal's digest of that text:
    /// the run's output digest while that step is the last.
    output_digest: Option<(String, String)>,
}

impl<'a> Runner<'a> {
    /// A runner for `wf` with resolved `args`.
    pub fn new(wf: Arc<Workflow>, args: Map<String, Item>, ctx: &'a Context) -> Self {
        let files = vec![(wf.source.path.clone(), wf.source.digest.clone())];
        let stack = vec![wf.source.path.clone()];
        Runner {
            wf,
            args,
            results: Map::new(),
            last: None,
            ctx,
            stack,
            files,
            output_digest: None,
        }
    }

    /// The template scope of this run.
    pub fn scope(&self) -> MapScope<'_> {
        MapScope {
            args: &self.args,
            results: &self.results,
            extra: None,
        }
    }

    /// Run steps from `start` to the end or the first gate.
    pub fn run_from(&mut self, start: usize) -> Result<Stop> {
        let wf = self.wf.clone();
        for (index, step) in wf.steps.iter().enumerate().skip(start) {
            self.ctx.cancel.check()?;
            if let Some(cond) = &step.when {
                if !cond.eval(&self.scope())? {
                    self.results
                        .insert(step.id.clone(), json!({"id": step.id, "skipped": true}));
                    continue;
                }
            }
            if let Some(input) = &step.input {
                let gate = gate::input_gate(self, step, input)?;
                if !self.ctx.interactive {
                    return Ok(Stop::Input { index, gate });
                }
                let response = gate::ask_input(&step.id, &gate, self.ctx)?;
                self.record_input(&step.id, gate.subject.clone(), response);
                continue;
            }
            let began = std::time::Instant::now();
            let (outcome, text) = match self.attempts(step) {
                Ok(Piped::Done(r, text)) => (Ok(r), text),
                Ok(Piped::Asked(pause)) => match self.answer_pipeline(step, pause)? {
                    Ok(r) => (r, OutputText::Other),
                    Err(pause) => return Ok(Stop::PipelineInput { index, pause }),
                },
                Err(e) => (Err(e), OutputText::Other),
            };
            self.record_step(step, began, &outcome, text);
            if let Some(stop) = self.complete(index, step, outcome)? {
                return Ok(stop);
            }
        }
        Ok(Stop::Done)
    }

    /// The journal's `step` event of a workflow step (host lines record
    /// their own, with exit code and output; WebAssembly stages inside a
    /// pipeline step record theirs too).
    fn record_step(
        &mut self,
        step: &Step,
        began: std::time::Instant,
        outcome: &Result<Item>,
        text: OutputText,
    ) {
        let Some(rule) = self.ctx.journal.digest_rule() else {
            return;
        };
        if matches!(step.action, Action::Shell(_) | Action::None) {
            return;
        }
        let output_digest = outcome.as_ref().ok().map(|r| {
            let (digest, of_stdout) = crate::journal::step_output_digest_of(rule, r);
            if of_stdout && text == OutputText::Stdout {
                self.output_digest = Some((step.id.clone(), digest.clone()));
            }
            digest
        });
        let name = match &step.action {
            Action::Wasm { uses, .. } => uses.clone(),
            Action::Workflow { path, .. } => path.clone(),
            _ => String::new(),
        };
        let _ = self
            .ctx
            .journal
            .append(crate::journal::Event::Step(crate::journal::Step {
                id: step.id.clone(),
                step_kind: step.action.kind().into(),
                name,
                wall_ms: began.elapsed().as_millis() as u64,
                output_digest,
                replayable: true,
                ok: outcome.is_ok(),
                ..crate::journal::Step::default()
            }));
    }

    /// After a step's action: apply `on_error` to a failure, or store the
    /// result and run the step's approval gate. `Some(stop)` ends the run.
    pub fn complete(
        &mut self,
        index: usize,
        step: &Step,
        outcome: Result<Item>,
    ) -> Result<Option<Stop>> {
        let result = match outcome {
            Ok(r) => r,
            Err(e) if self.ctx.cancel.is_cancelled() || step.on_error == OnError::Stop => {
                return Err(e)
            }
            Err(e) => {
                self.results.insert(
                    step.id.clone(),
                    json!({"id": step.id, "error": true, "errorMessage": e.to_string()}),
                );
                return Ok((step.on_error == OnError::SkipRest).then_some(Stop::Done));
            }
        };
        self.results.insert(step.id.clone(), result);
        self.last = Some(step.id.clone());
        if let Some(approval) = &step.approval {
            let gate = gate::approval_gate(self, step, approval)?;
            if let (Some(by), Some(Item::Object(r))) =
                (&gate.initiated_by, self.results.get_mut(&step.id))
            {
                r.insert("initiatedBy".into(), json!(by));
            }
            if !self.ctx.interactive {
                return Ok(Some(Stop::Approval { index, gate }));
            }
            gate::ask_approval(&step.id, &gate, self.ctx)?;
            self.record_approval(&step.id, true, None);
        }
        Ok(None)
    }

    /// A pipeline step paused at an `ask` stage: at a terminal, ask and
    /// continue (as often as it asks); otherwise hand the pause back.
    #[allow(clippy::type_complexity)]
    fn answer_pipeline(
        &mut self,
        step: &Step,
        mut pause: PipelinePause,
    ) -> Result<Result<Result<Item>, PipelinePause>> {
        if !self.ctx.interactive {
            return Ok(Err(pause));
        }
        loop {
            let response = gate::ask_input(&step.id, &pause.gate, self.ctx)?;
            match self.continue_pipeline(step, &pause, response) {
                Ok(Piped::Done(r, _)) => return Ok(Ok(Ok(r))),
                Ok(Piped::Asked(next)) => pause = next,
                Err(e) => return Ok(Ok(Err(e))),
            }
        }
    }

    /// Continue a paused pipeline step with the input `response`.
    pub fn continue_pipeline(
        &mut self,
        step: &Step,
        pause: &PipelinePause,
        response: Item,
    ) -> Result<Piped> {
        let env = self.step_env(&step.env);
        let cwd = self.step_cwd(step)?;
        let narrowed = crate::workflow::policy::step_context(step, self.ctx);
        steps::pipeline::continue_from(
            &step.id,
            &pause.text,
            pause.next_stage,
            vec![response],
            env,
            cwd,
            narrowed.as_ref().unwrap_or(self.ctx),
        )
    }

    /// Store an input step's answer.
    pub fn record_input(&mut self, id: &str, subject: Option<Item>, response: Item) {
        let mut r = Map::new();
        r.insert("id".into(), json!(id));
        if let Some(s) = subject {
            r.insert("subject".into(), s);
        }
        r.insert("response".into(), response);
        self.results.insert(id.into(), Item::Object(r));
        self.last = Some(id.into());
    }

    /// Store an approval decision on the gated step's result.
    pub fn record_approval(&mut self, id: &str, approved: bool, by: Option<&str>) {
        if let Some(Item::Object(r)) = self.results.get_mut(id) {
            r.insert("approved".into(), json!(approved));
            if let Some(by) = by {
                r.insert("approvedBy".into(), json!(by));
            }
        }
    }

    /// The journal's digest of [`Runner::output`] when this run's steps
    /// already took it: the last step's `stdout` is the output's JSON text
    /// ([`OutputText::Stdout`]) and its digest was taken over that text.
    pub fn output_digest(&self) -> Option<String> {
        let (id, digest) = self.output_digest.as_ref()?;
        (self.last.as_deref() == Some(id.as_str())).then(|| digest.clone())
    }

    /// The run's output: the last completed step's json (an array is
    /// spread), else its response, else its stdout, else nothing.
    pub fn output(&self) -> Vec<Item> {
        let Some(r) = self.last.as_ref().and_then(|id| self.results.get(id)) else {
            return Vec::new();
        };
        match (r.get("json"), r.get("response"), r.get("stdout")) {
            (Some(Item::Array(a)), _, _) => a.clone(),
            (Some(j), _, _) => vec![j.clone()],
            (None, Some(resp), _) => vec![resp.clone()],
            (None, None, Some(Item::String(s))) if s.is_empty() => Vec::new(),
            (None, None, Some(s)) => vec![s.clone()],
            _ => Vec::new(),
        }
    }

    /// The step's environment: the run's, the args, workflow `env`, step `env`.
    pub fn step_env(&self, step_env: &[(String, String)]) -> BTreeMap<String, String> {
        self.step_envs(step_env).0
    }

    /// The step's environment and what its `env:` values may expand from
    /// (see [`extend_env`]): the args, the workflow's and step's declared
    /// variables, and the host's only where the authority allows it.
    pub fn step_envs(
        &self,
        step_env: &[(String, String)],
    ) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
        let mut env = (*self.ctx.env).clone();
        let mut declared = BTreeMap::new();
        super::args::export(&self.args, &mut declared);
        env.extend(declared.clone());
        let mut lookup = host_lookup(self.ctx);
        lookup.extend(declared);
        let pairs: Vec<_> = self.wf.env.iter().chain(step_env).cloned().collect();
        extend_env(&mut env, &mut lookup, &pairs, &self.scope());
        (env, lookup)
    }

    /// The step's working directory: step, then workflow (relative to the
    /// workflow's directory, judged by the authority), then the run's.
    pub fn step_cwd(&self, step: &Step) -> Result<PathBuf> {
        match (&step.cwd, &self.wf.cwd) {
            (Some(c), _) => super::policy::resolve_cwd(
                &self.wf,
                &format!("Workflow step {}", step.id),
                c,
                &self.scope(),
                self.ctx,
            ),
            (None, Some(c)) => {
                super::policy::resolve_cwd(&self.wf, "Workflow", c, &self.scope(), self.ctx)
            }
            (None, None) => Ok(self.ctx.cwd.clone()),
        }
    }

    /// Run a step's action with retries (each attempt under `timeout_ms`).
    fn attempts(&mut self, step: &Step) -> Result<Piped> {
        let max = step.retry.max.max(1);
        let mut attempt = 1;
        loop {
            match self.attempt(step) {
                Ok(r) => return Ok(r),
                Err(e) if self.ctx.cancel.is_cancelled() || attempt >= max => return Err(e),
                Err(e) => {
                    let delay = retry_delay(&step.retry, attempt);
                    eprintln!(
                        "[RETRY] Step '{}' failed (attempt {attempt}/{max}): {e}. Retrying in {delay}ms...",
                        step.id
                    );
                    sleep_checked(Duration::from_millis(delay), &self.ctx.cancel)?;
                    attempt += 1;
                }
            }
        }
    }

    /// A step's time limit: its `timeout_ms`, lowered by the `timeout_ms`
    /// ceilings of its own and its workflow's `permissions:`.
    fn step_timeout(&self, step: &Step) -> Option<u64> {
        let ceiling = |p: &Option<Permissions>| p.as_ref().and_then(|p| p.limits.timeout_ms);
        [
            step.timeout_ms,
            ceiling(&step.permissions),
            ceiling(&self.wf.permissions),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    fn attempt(&mut self, step: &Step) -> Result<Piped> {
        let Some(ms) = self.step_timeout(step) else {
            let ctx = self.ctx;
            return self.execute(step, ctx);
        };
        let cancel = self.ctx.cancel.child();
        let timer = cancel.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(ms));
            timer.trigger(CancelReason::Timeout);
        });
        let ctx = derive(self.ctx, None, None, Some(cancel.clone()));
        let result = self.execute(step, &ctx);
        if result.is_err() && cancel.is_cancelled() && !self.ctx.cancel.is_cancelled() {
            return Err(Error::runtime(format!(
                "Step '{}' timed out after {ms}ms",
                step.id
            )));
        }
        result
    }

    fn execute(&mut self, step: &Step, ctx: &Context) -> Result<Piped> {
        let narrowed = crate::workflow::policy::step_context(step, ctx);
        let ctx = narrowed.as_ref().unwrap_or(ctx);
        let (env, lookup) = self.step_envs(&step.env);
        let cwd = self.step_cwd(step)?;
        let stdin = resolve_stdin(step.stdin.as_ref(), &self.scope())?;
        if let Action::Pipeline(text) = &step.action {
            return steps::pipeline::run_step(&step.id, text, stdin, env, cwd, &self.scope(), ctx);
        }
        let done = match &step.action {
            Action::None => Ok(steps::synthesize(&step.id, stdin)),
            Action::Shell(line) => {
                steps::shell::run(&step.id, line, stdin, env, cwd, &self.scope(), ctx)
            }
            Action::Pipeline(_) => unreachable!("handled above"),
            Action::Wasm { uses, with, .. } => {
                let done = steps::wasm::run(
                    &self.wf.source.path,
                    &step.id,
                    uses,
                    with,
                    stdin,
                    &self.scope(),
                    // Grants are relative to the run's directory, not the step's.
                    &derive(ctx, Some(env), None, None),
                );
                return done.map(|(r, text)| Piped::Done(r, text));
            }
            Action::Parallel(p) => steps::parallel::run(self, step, p, (env, lookup), cwd, ctx),
            Action::ForEach(f) => steps::for_each::run(self, step, f, (env, lookup), cwd, ctx),
            Action::Workflow { path, args, .. } => {
                steps::compose::run(self, step, path, args, env, cwd, ctx)
            }
        };
        done.map(|r| Piped::Done(r, OutputText::Other))
    }
}

/// The host variables `env:` values may expand from: all of them where
/// the authority allows reading the host environment (trusted), none under
/// untrusted.
pub fn host_lookup(ctx: &Context) -> BTreeMap<String, String> {
    ctx.env
        .iter()
        .filter(|(name, _)| {
            ctx.authority()
                .judge(&crate::policy::Request::HostEnv {
                    name: name.as_str(),
                })
                .is_ok()
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Render `env:` `pairs` in order into `env`: each value's `$NAME` and
/// `${NAME}` expand from `lookup` only (which then learns the new value).
pub fn extend_env(
    env: &mut BTreeMap<String, String>,
    lookup: &mut BTreeMap<String, String>,
    pairs: &[(String, String)],
    scope: &dyn template::Scope,
) {
    for (k, v) in pairs {
        let value = template::render(v, scope, Style::Env, Some(lookup)).text;
        env.insert(k.clone(), value.clone());
        lookup.insert(k.clone(), value);
    }
}

/// A context for part of a run: its own env, cwd or cancellation handle.
pub fn derive(
    ctx: &Context,
    env: Option<BTreeMap<String, String>>,
    cwd: Option<PathBuf>,
    cancel: Option<Cancel>,
) -> Context {
    let mut out = ctx.child();
    if let Some(cwd) = cwd {
        out.cwd = cwd;
    }
    if let Some(env) = env {
        out.env = Arc::new(env);
    }
    if let Some(cancel) = cancel {
        out.cancel = cancel;
    }
    out
}

/// `stdin`: an exact `$id.path` is a strict lookup; other strings are
/// templates; other values are used as they are. `None`: no stdin.
pub fn resolve_stdin(raw: Option<&Item>, scope: &dyn template::Scope) -> Result<Option<Item>> {
    let Some(raw) = raw else { return Ok(None) };
    match raw {
        Item::String(s) => match template::exact_ref(s) {
            Some((id, path)) => {
                let r = scope.result(&id).ok_or_else(|| {
                    Error::runtime(format!("Unknown step reference: {id}.{path}"))
                })?;
                Ok(crate::value::get_path(r, &path).cloned())
            }
            None => Ok(Some(Item::String(
                template::render(s, scope, Style::Raw, None).text,
            ))),
        },
        other => Ok(Some(other.clone())),
    }
}

/// The delay before retry `k` (1-based).
pub fn retry_delay(r: &Retry, k: u32) -> u64 {
    let base = if r.exponential {
        r.delay_ms
            .saturating_mul(1u64 << (k - 1).min(40))
            .min(r.max_delay_ms)
    } else {
        r.delay_ms
    };
    if !r.jitter {
        return base;
    }
    let mut b = [0u8; 2];
    let _ = getrandom::fill(&mut b);
    let unit = f64::from(u16::from_le_bytes(b)) / f64::from(u16::MAX) * 2.0 - 1.0;
    let jittered = (base as f64 * (1.0 + 0.1 * unit)).round().max(0.0) as u64;
    jittered.min(r.max_delay_ms.max(base))
}

/// Sleep, waking early (with the error) when the run is cancelled.
pub fn sleep_checked(d: Duration, cancel: &Cancel) -> Result<()> {
    let end = std::time::Instant::now() + d;
    loop {
        cancel.check()?;
        let now = std::time::Instant::now();
        if now >= end {
            return Ok(());
        }
        std::thread::sleep((end - now).min(Duration::from_millis(25)));
    }
}

/// A step result from a child's stdout: `{id, stdout, json?}`.
pub fn stdout_result(id: &str, stdout: String) -> Item {
    let mut r = Map::new();
    r.insert("id".into(), json!(id));
    let parsed = serde_json::from_str::<Item>(stdout.trim()).ok();
    r.insert("stdout".into(), Item::String(stdout));
    if let Some(j) = parsed {
        r.insert("json".into(), j);
    }
    Item::Object(r)
}

/// How a value is written to a child's stdin: strings raw, null nothing,
/// anything else as JSON.
pub fn stdin_bytes(v: Option<&Item>) -> Option<Vec<u8>> {
    match v? {
        Item::Null => None,
        Item::String(s) => Some(s.as_bytes().to_vec()),
        other => Some(to_js_json(other).into_bytes()),
    }
}

/// Whether a condition allows a sub-step to run.
pub fn allowed(cond: Option<&Condition>, scope: &dyn template::Scope) -> Result<bool> {
    cond.map_or(Ok(true), |c| c.eval(scope))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_delays() {
        let mut r = Retry {
            max: 5,
            exponential: true,
            delay_ms: 100,
            max_delay_ms: 350,
            jitter: false,
        };
        assert_eq!(
            (1..=4).map(|k| retry_delay(&r, k)).collect::<Vec<_>>(),
            [100, 200, 350, 350]
        );
        r.exponential = false;
        assert_eq!(retry_delay(&r, 3), 100);
        r.jitter = true;
        let d = retry_delay(&r, 1);
        assert!((90..=110).contains(&d), "{d}");
    }

    #[test]
    fn stdout_results_parse_json() {
        assert_eq!(
            stdout_result("a", "21\n".into()),
            json!({"id":"a","stdout":"21\n","json":21})
        );
        assert_eq!(
            stdout_result("a", "hi\n".into()),
            json!({"id":"a","stdout":"hi\n"})
        );
        assert_eq!(stdin_bytes(Some(&json!({"a":1}))).unwrap(), b"{\"a\":1}");
        assert_eq!(stdin_bytes(Some(&Item::Null)), None);
    }
}
