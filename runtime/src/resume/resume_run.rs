//! Resuming a paused pipeline: check the decision against the gate, claim
//! the state exactly once, then continue (or cancel).

use super::approval_id;
use super::claim::claim;
use super::pause::{finish_run, Paused};
use super::request::{Decision, ResumeRequest};
use super::saved::{HaltType, PipelineResumeState};
use crate::dsl::Pipeline;
use crate::envelope::Envelope;
use crate::error::{Error, Result};
use crate::executor::run_pipeline;
use crate::kernel::Context;

/// Resume the paused pipeline whose resume state is `state_key` (the
/// request layer finds it from the token or approval id, and hands a
/// workflow's to the workflow layer). Everything that can be rejected
/// (decision, response schema, pipeline validity, changed components) is
/// checked before the state is claimed, so a rejected resume leaves the
/// token usable.
///
/// The run continues in the paused run's working directory, with its grants
/// (clock and seed included) and its step path.
pub fn resume_pipeline(
    state_key: &str,
    request: &ResumeRequest,
    ctx: &mut Context,
) -> Result<Paused> {
    let store = &ctx.state.clone();
    let state_key = state_key.to_string();
    let not_found = |msg: &str| {
        super::interrupted::error_for(store, &state_key).unwrap_or_else(|| {
            Error::runtime(msg.to_string())
                .with_hint("the run was already resumed or cancelled, or its state was removed")
        })
    };

    if request.decision == Decision::Cancel {
        let claimed =
            claim(store, &state_key)?.ok_or_else(|| not_found("Resume state not found"))?;
        if let Ok(state) = PipelineResumeState::from_json(claimed.state.clone()) {
            forget_alias(ctx, &state);
            let step = state.resume_at_index.saturating_sub(1).to_string();
            super::decided::record_decision(
                ctx,
                state.journal.as_ref(),
                &request.decision,
                &request.decider,
                request.decider.name(None).as_deref(),
                &step,
            )?;
        }
        return Ok(Paused {
            envelope: Envelope::cancelled(),
            rendered: None,
            output_digest: None,
        });
    }

    let stored = super::claim::claimable(store, &state_key)?
        .ok_or_else(|| not_found("Pipeline resume state not found"))?;
    let state = PipelineResumeState::from_json(stored)?;
    let input = decided_input(&state, &request.decision)?;
    let pipeline = crate::dsl::parse(&state.pipeline)
        .map_err(|_| Error::runtime("Invalid pipeline resume state"))?;
    if input.is_some() {
        restore_run_settings(ctx, &state);
        // A swapped component first: that is why its flags may differ now.
        verify_steps_unchanged(&state, &pipeline, ctx)?;
        crate::executor::plan(&pipeline, state.resume_at_index, ctx)?;
        if state.halt_type == HaltType::Approval {
            verify_plan_unchanged(&state, &pipeline, ctx)?;
        }
    }

    // From here on the token is spent, whatever happens.
    let claimed =
        claim(store, &state_key)?.ok_or_else(|| not_found("Pipeline resume state not found"))?;
    let state = PipelineResumeState::from_json(claimed.state.clone())?;
    forget_alias(ctx, &state);
    let step = state.resume_at_index.saturating_sub(1).to_string();
    // Claimed again after a resumer died: what it recorded, read before
    // this resume records anything.
    let halt = match state.halt_type {
        HaltType::Input => "input",
        HaltType::Approval => "approval",
    };
    let at = format!("{halt} at stage {}", state.resume_at_index);
    let dead = match super::recovered::dead_resumes(ctx, state.journal.as_ref(), &at) {
        Ok(dead) => dead,
        Err(e) => {
            claimed.abandon();
            return Err(e);
        }
    };
    super::decided::record_decision(
        ctx,
        state.journal.as_ref(),
        &request.decision,
        &request.decider,
        request.decider.name(None).as_deref(),
        &step,
    )?;
    let Some(input) = input else {
        return Ok(Paused {
            envelope: Envelope::cancelled(),
            rendered: None,
            output_digest: None,
        });
    };
    // Its answered calls replay, an unanswered one stops the run — before
    // anything runs, or at the call (the claim is left as a dead one is).
    if let Err(e) = super::recovered::take_over(ctx, dead) {
        claimed.abandon();
        return Err(e);
    }
    let outcome = run_pipeline(&pipeline, state.resume_at_index, input, ctx);
    if let Some(e) = ctx.broker.recovery_refusal() {
        claimed.abandon();
        return Err(e);
    }
    let outcome = outcome?;
    // Fenced: a claim that expired while the stages ran saves nothing.
    claimed.check_held()?;
    let finished = finish_run(&state.pipeline, &pipeline, outcome, ctx)?;
    drop(claimed);
    Ok(finished)
}

/// What the stage after the gate gets for `decision` (`None`: the run
/// ends, declined), or why the decision does not fit the gate: the wrong
/// kind of answer, or an input response the gate's schema refuses. Nothing
/// is claimed: the request layer asks this before it takes a gate.
pub fn decided_input(
    state: &PipelineResumeState,
    decision: &Decision,
) -> Result<Option<Vec<crate::value::Item>>> {
    Ok(match (&state.halt_type, decision) {
        (HaltType::Input, Decision::Approve(_)) => {
            return Err(Error::parse("pipeline input resumes require response"));
        }
        (HaltType::Approval, Decision::Respond(_)) => {
            return Err(Error::parse(
                "approval resumes require approved=true|false, not response",
            ));
        }
        (HaltType::Input, Decision::Respond(response)) => {
            let schema = state
                .input_schema
                .clone()
                .unwrap_or(serde_json::Value::Bool(true));
            crate::schema::validate_response(&schema, response, "pipeline input response")?;
            Some(vec![response.clone()])
        }
        (HaltType::Approval, Decision::Approve(true)) => Some(state.items.clone()),
        (HaltType::Approval, Decision::Approve(false)) | (_, Decision::Cancel) => None,
    })
}

/// Run where and as the paused run did.
fn restore_run_settings(ctx: &mut Context, state: &PipelineResumeState) {
    *ctx = crate::executor::resumed_context(
        ctx,
        state.cwd.as_deref(),
        &state.grants,
        &state.step_dirs,
    );
    ctx.broker.restore(state.broker.clone());
}

/// Refuse when a wasm step of the pipeline is not the component that was
/// there at the pause: an approval covers exactly the code it was shown.
fn verify_steps_unchanged(
    state: &PipelineResumeState,
    pipeline: &Pipeline,
    ctx: &Context,
) -> Result<()> {
    let now = super::pause::step_digests(pipeline, ctx)?;
    for was in &state.step_digests {
        let current = now
            .iter()
            .find(|d| d.stage == was.stage)
            .map(|d| d.digest.as_str());
        if current != Some(was.digest.as_str()) {
            return Err(crate::policy::pins::changed(
                &was.name,
                &was.digest,
                current,
            ));
        }
    }
    if let Some(extra) = now
        .iter()
        .find(|d| !state.step_digests.iter().any(|w| w.stage == d.stage))
    {
        return Err(Error::runtime(format!(
            "step {} was not a WebAssembly step when the run paused; refusing to resume",
            extra.name
        )));
    }
    Ok(())
}

/// Refuse when what would run after the gate is not what was approved.
fn verify_plan_unchanged(
    state: &PipelineResumeState,
    pipeline: &Pipeline,
    ctx: &Context,
) -> Result<()> {
    let Some(approved) = &state.plan_digest else {
        return Ok(());
    };
    let now = crate::resume::plan_digest::plan_summary(
        pipeline,
        state.resume_at_index,
        &state.items,
        ctx,
    )?;
    if &now.digest != approved {
        return Err(Error::runtime(format!(
            "the plan after the gate changed since it was approved (planDigest {} at the pause, {} now); refusing to resume",
            crate::policy::enforce::short(approved),
            crate::policy::enforce::short(&now.digest)
        ))
        .with_hint("start the run again to approve the new plan"));
    }
    Ok(())
}

fn forget_alias(ctx: &Context, state: &PipelineResumeState) {
    if let Some(id) = &state.approval_id {
        approval_id::remove(&ctx.state, id);
    }
}
