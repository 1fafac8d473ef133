//! Resuming a paused workflow.
//!
//! Everything that can reject a resume is checked before the state is
//! claimed (so a rejected resume leaves the token usable): the decision
//! kind, the approver's identity, the input response's schema, the args
//! digest, and the blake3 digest of every file the run depends on — a
//! workflow file, sub-workflow or component edited since the pause refuses
//! the resume (the reference silently ran the edited file, spec §4.2 item 15).

use super::gate::InputGate;
use super::run::{Runner, Stop};
use super::state::{finish, WorkflowState};
use super::steps::pipeline::{Piped, PipelinePause};
use crate::envelope::Envelope;
use crate::error::{Error, Result};
use crate::kernel::Context;
use crate::resume::approval_id;
use crate::resume::claim::claim;
use crate::resume::saved::HaltType;
use crate::resume::{Decision, Paused, ResumeRequest};
use std::path::{Path, PathBuf};

/// "Not found", or why: a resume that claimed the state and was killed.
fn not_found_for(store: &crate::state::StateStore, state_key: &str) -> Error {
    crate::resume::interrupted::error_for(store, state_key).unwrap_or_else(|| {
        Error::runtime("Workflow resume state not found")
            .with_hint("the run was already resumed or cancelled, or its state was removed")
    })
}

/// Resume the workflow paused under `state_key`.
pub fn resume(state_key: &str, request: &ResumeRequest, ctx: &Context) -> Result<Paused> {
    let store = &ctx.state;
    if request.decision == Decision::Cancel {
        let claimed = claim(store, state_key)?.ok_or_else(|| {
            crate::resume::interrupted::error_for(store, state_key).unwrap_or_else(|| {
                Error::runtime("Resume state not found")
                    .with_hint("the run was already resumed or cancelled, or its state was removed")
            })
        })?;
        if let Ok(state) = WorkflowState::from_json(claimed.state.clone()) {
            if let Some(id) = &state.approval_id {
                approval_id::remove(store, id);
            }
            crate::resume::decided::record_decision(
                ctx,
                state.journal.as_ref(),
                &request.decision,
                &request.decider,
                request
                    .decider
                    .name(
                        ctx.env
                            .get("LOBSTER_APPROVAL_APPROVED_BY")
                            .map(String::as_str),
                    )
                    .as_deref(),
                &state.step_id,
            )?;
        }
        return Ok(cancelled());
    }
    let state = WorkflowState::from_json(
        crate::resume::claim::claimable(store, state_key)?
            .ok_or_else(|| not_found_for(store, state_key))?,
    )?;
    let restored = restore(ctx, &state);
    let ctx = &restored;
    // The door authenticated the decider; only the operator's own decisions
    // may take the name from the operator's environment.
    let approver = request.decider.name(
        ctx.env
            .get("LOBSTER_APPROVAL_APPROVED_BY")
            .map(String::as_str),
    );
    check_answer(&state, &request.decision)?;
    if (&state.halt_type, &request.decision) == (&HaltType::Approval, &Decision::Approve(true)) {
        super::gate::check_identity(&state.step_id, &state.identity(), approver.as_deref())?;
    }
    let (wf, files) = verify(&state, ctx)?;

    // From here on the token is spent, whatever happens.
    let claimed = claim(store, state_key)?.ok_or_else(|| not_found_for(store, state_key))?;
    let claimed_state = WorkflowState::from_json(claimed.state.clone())?;
    if claimed_state != state {
        return Err(Error::runtime(
            "Workflow resume state changed while resuming; resume refused",
        ));
    }
    if let Some(id) = &state.approval_id {
        approval_id::remove(store, id);
    }
    // Claimed again after a resumer died: what it recorded, read before
    // this resume records anything.
    let halt = match state.halt_type {
        HaltType::Input => "input",
        HaltType::Approval => "approval",
    };
    let at = format!(
        "{halt} at step {} ({})",
        state.resume_at_index, state.step_id
    );
    let dead = match crate::resume::recovered::dead_resumes(ctx, state.journal.as_ref(), &at) {
        Ok(dead) => dead,
        Err(e) => {
            claimed.abandon();
            return Err(e);
        }
    };
    crate::resume::decided::record_decision(
        ctx,
        state.journal.as_ref(),
        &request.decision,
        &request.decider,
        approver.as_deref(),
        &state.step_id,
    )?;
    if request.decision == Decision::Approve(false) {
        return Ok(cancelled());
    }
    // Its answered calls replay, an unanswered one stops the run — before
    // anything runs, or at the call (the claim is left as a dead one is).
    if let Err(e) = crate::resume::recovered::take_over(ctx, dead) {
        claimed.abandon();
        return Err(e);
    }
    let narrowed = crate::workflow::policy::permissions_context(&wf, ctx);
    let ctx = narrowed.as_ref().unwrap_or(ctx);
    let mut runner = Runner::new(wf, state.args.clone(), ctx);
    runner.files = files;
    runner.results = state.steps.clone();
    runner.last = state.last_step_id.clone();
    let stopped = continue_run(&mut runner, &state, request, approver.as_deref());
    if let Some(e) = ctx.broker.recovery_refusal() {
        claimed.abandon();
        return Err(e);
    }
    let stop = stopped?;
    // Fenced: a claim that expired while the steps ran saves nothing.
    claimed.check_held()?;
    let finished = finish(&runner, stop)?;
    drop(claimed);
    Ok(finished)
}

/// Run the steps after the gate: the rest of an `ask` stage's pipeline
/// first, when the gate was one.
fn continue_run(
    runner: &mut Runner<'_>,
    state: &WorkflowState,
    request: &ResumeRequest,
    approver: Option<&str>,
) -> Result<Stop> {
    let index = state.resume_at_index - 1;
    let early = match (&request.decision, &state.pipeline) {
        (Decision::Respond(response), Some(p)) => {
            // An `ask` stage inside the step's pipeline: continue it.
            let step = runner.wf.steps[index].clone();
            let pause = PipelinePause {
                text: p.text.clone(),
                next_stage: p.next_stage,
                gate: InputGate {
                    prompt: state.prompt.clone(),
                    schema: state
                        .input_schema
                        .clone()
                        .unwrap_or(serde_json::Value::Bool(true)),
                    defaults: None,
                    subject: state.input_subject.clone(),
                },
            };
            match runner.continue_pipeline(&step, &pause, response.clone()) {
                Ok(Piped::Asked(next)) => Some(Stop::PipelineInput { index, pause: next }),
                Ok(Piped::Done(r, _)) => runner.complete(index, &step, Ok(r))?,
                Err(e) => runner.complete(index, &step, Err(e))?,
            }
        }
        (Decision::Respond(response), None) => {
            runner.record_input(
                &state.step_id,
                state.input_subject.clone(),
                response.clone(),
            );
            None
        }
        _ => {
            runner.record_approval(&state.step_id, true, approver);
            None
        }
    };
    match early {
        Some(stop) => Ok(stop),
        None => runner.run_from(state.resume_at_index),
    }
}

/// Whether `decision` fits the paused workflow's gate: the kind of answer
/// it takes, and an input response its schema accepts. Nothing is claimed:
/// the request layer asks this before it takes a gate (the approver's
/// identity is checked by [`resume`], in the paused run's context).
pub fn check_answer(state: &WorkflowState, decision: &Decision) -> Result<()> {
    match (&state.halt_type, decision) {
        (HaltType::Approval, Decision::Respond(_)) => Err(Error::parse(
            "Workflow resume requires --approve yes|no for approval requests",
        )),
        (HaltType::Input, Decision::Approve(_)) => Err(Error::parse(
            "Workflow resume requires --response-json for input requests",
        )),
        (HaltType::Input, Decision::Respond(response)) => {
            let schema = state
                .input_schema
                .clone()
                .unwrap_or(serde_json::Value::Bool(true));
            super::gate::validate_response(&state.step_id, &schema, response)
        }
        _ => Ok(()),
    }
}

/// Run where and as the paused run did: its working directory, its grants
/// (clock and seed included) and its step path.
fn restore(ctx: &Context, state: &WorkflowState) -> Context {
    let out = crate::executor::resumed_context(
        ctx,
        state.cwd.as_deref(),
        &state.grants,
        &state.step_dirs,
    );
    out.broker.restore(state.broker.clone());
    out
}

fn cancelled() -> Paused {
    Paused {
        envelope: Envelope::cancelled(),
        rendered: None,
        output_digest: None,
    }
}

/// Reload the workflow and check that nothing it depends on changed.
fn verify(
    state: &WorkflowState,
    ctx: &Context,
) -> Result<(
    std::sync::Arc<super::model::Workflow>,
    super::run::FileDigests,
)> {
    let refused = |what: &str| {
        Error::runtime(format!(
            "Workflow resume refused: {what} changed since the run paused"
        ))
        .with_hint(
            "the paused run approved a different file; start a new run to use the edited one",
        )
    };
    if super::args::digest(&state.args) != state.args_digest {
        return Err(refused("the workflow args"));
    }
    if state
        .plan_digest
        .as_ref()
        .is_some_and(|d| *d != state.plan_digest())
    {
        return Err(Error::runtime(
            "the plan after the gate changed since it was approved (planDigest differs); refusing to resume",
        )
        .with_hint("start the run again to approve the new plan"));
    }
    for f in &state.files {
        let now = std::fs::read(&f.path)
            .map(|b| blake3::hash(&b).to_hex().to_string())
            .unwrap_or_default();
        if now != f.digest {
            return Err(refused(&ctx.authority().shown(Path::new(&f.path))));
        }
    }
    let top = ctx.authority().shown(Path::new(&state.file_path));
    let (wf, _) = super::load_plan(Path::new(&state.file_path), Some(&ctx.registry))
        .map_err(|_| refused(&top))?;
    crate::workflow::policy::check_workflow(&wf, ctx)?;
    if wf.source.digest
        != state
            .files
            .first()
            .map(|f| f.digest.clone())
            .unwrap_or_default()
    {
        return Err(refused(&top));
    }
    // Plans are pinned: every stage name resolves, in this run's resolver
    // over the recorded step path, to the file and digest it had at the
    // pause. The resolver pins what it resolves, so what is checked here is
    // what this run executes. The run's admission judges them again
    // (signatures, registries): a refusal is reported as itself, not as a
    // changed step.
    if let Some(steps) = crate::sandbox::resolver_of(&ctx.registry) {
        let refused = std::cell::RefCell::new(None);
        let verified = crate::policy::pins::verify(&state.components, |name| {
            match steps.resolve_pinned(name) {
                Ok(pin) => {
                    let pin = pin?;
                    Some((pin.path.display().to_string(), pin.digest().to_string()))
                }
                Err(e) => {
                    refused.borrow_mut().get_or_insert(e);
                    None
                }
            }
        });
        if let Some(e) = refused.into_inner() {
            return Err(e.into());
        }
        verified?;
    }
    super::steps::wasm::prepare(&wf, ctx)?;
    let idx = state.resume_at_index;
    if idx == 0 || idx > wf.steps.len() || wf.steps[idx - 1].id != state.step_id {
        return Err(Error::runtime("Invalid workflow resume state"));
    }
    let files = state
        .files
        .iter()
        .map(|f| (PathBuf::from(&f.path), f.digest.clone()))
        .collect();
    Ok((wf, files))
}
