//! Turning a pipeline outcome into an envelope; a halt becomes a saved
//! resume state plus a token (and an approval id for approvals).

use super::approval_id::{self, now_iso};
use super::saved::{HaltType, PipelineResumeState, StepDigest, PIPELINE_KIND};
use super::token::{self, TokenKind};
use crate::dsl::Pipeline;
use crate::envelope::{ApprovalRequest, Envelope, InputRequest};
use crate::error::Result;
use crate::executor::Outcome;
use crate::kernel::{Context, Halt};
use crate::state::StateStore;
use crate::value::Item;

/// The result of a run or resume: the envelope and any rendered text.
#[derive(Debug, Clone, PartialEq)]
pub struct Paused {
    pub envelope: Envelope,
    /// What renderers wrote (human mode prints it instead of the items).
    pub rendered: Option<String>,
    /// The journal's digest of the `ok` envelope's output when the run's
    /// steps already took it (a workflow whose last step's `stdout` is the
    /// output's JSON text), so the run's end does not write the output out
    /// again to digest it. `None`: the end digests the output itself.
    pub output_digest: Option<String>,
}

/// Finish a run of `pipeline_text`: completed runs become `ok`; a halt is
/// saved so it can be resumed, and becomes `needs_approval`/`needs_input`.
pub fn finish_run(
    pipeline_text: &str,
    pipeline: &Pipeline,
    outcome: Outcome,
    ctx: &Context,
) -> Result<Paused> {
    match outcome {
        Outcome::Completed { items, rendered } => Ok(Paused {
            envelope: Envelope::ok(items),
            rendered,
            output_digest: None,
        }),
        Outcome::Halted {
            stage,
            halt,
            rendered,
        } => {
            let envelope = save_halt(pipeline_text, pipeline, stage, halt, ctx)?;
            Ok(Paused {
                envelope,
                rendered,
                output_digest: None,
            })
        }
    }
}

/// Write the resume state `value` under `state_key` (atomically). When that
/// fails, the `approvalId` alias published for it is removed again, so a
/// failed pause leaves nothing behind; a successful one sweeps what killed
/// processes left ([`crate::state::sweep_orphans`]).
pub fn save_state(
    store: &StateStore,
    state_key: &str,
    value: &Item,
    approval_id: Option<&str>,
) -> Result<()> {
    if let Err(e) = store.set(state_key, value) {
        if let Some(id) = approval_id {
            approval_id::remove(store, id);
        }
        return Err(e);
    }
    store.sweep_now_and_then();
    Ok(())
}

fn save_halt(
    pipeline_text: &str,
    pipeline: &Pipeline,
    stage: usize,
    halt: Halt,
    ctx: &Context,
) -> Result<Envelope> {
    let store = &ctx.state;
    store.ensure_dir()?;
    let state_key = format!("pipeline_resume_{}", uuid_v4());
    let (halt_type, prompt, items, input_schema) = match &halt {
        Halt::Approval { prompt, items, .. } => {
            (HaltType::Approval, prompt.clone(), items.clone(), None)
        }
        Halt::Input { prompt, schema, .. } => (
            HaltType::Input,
            prompt.clone(),
            Vec::new(),
            Some(schema.clone()),
        ),
    };
    let plan = match halt_type {
        HaltType::Approval => Some(crate::resume::plan_digest::plan_summary(
            pipeline,
            stage + 1,
            &items,
            ctx,
        )?),
        HaltType::Input => None,
    };
    let resume_token = token::issue(store, TokenKind::Pipeline, &state_key)?;
    // Nobody knows the alias until the envelope is printed, so publishing it
    // before the state leaves no window in which it could be used.
    let approval_id = match halt_type {
        HaltType::Approval => approval_id::publish(store, &state_key)?,
        HaltType::Input => None,
    };
    let state = PipelineResumeState {
        kind: PIPELINE_KIND.into(),
        version: 1,
        pipeline: pipeline_text.to_string(),
        resume_at_index: stage + 1,
        items,
        halt_type,
        prompt,
        input_schema,
        approval_id: approval_id.clone(),
        created_at: now_iso(),
        cwd: Some(ctx.cwd.to_string_lossy().into_owned()),
        grants: ctx.grants.clone(),
        step_dirs: ctx.step_dirs(),
        step_digests: step_digests(pipeline, ctx)?,
        plan_digest: plan.as_ref().map(|p| p.digest.clone()),
        broker: ctx.broker.ledger(),
        rerun_safe: crate::policy::recovery::pipeline_recoverable_from(pipeline, stage + 1, ctx),
        journal: None,
    };
    let mut state = state;
    let envelope = halt_envelope(halt, resume_token, approval_id.clone(), plan);
    state.journal = record_gate(
        ctx,
        &envelope,
        &stage.to_string(),
        state.plan_digest.clone(),
        approval_id.clone(),
    )?;
    save_state(store, &state_key, &state.to_json(), approval_id.as_deref())?;
    Ok(envelope)
}

/// Record the gate `envelope` asks a human about (its prompt, the digest of
/// the items shown, the plan digest the approval is bound to) in the run's
/// journal, durably; the journal's head then, for the resume state.
pub fn record_gate(
    ctx: &Context,
    envelope: &Envelope,
    step: &str,
    plan_digest: Option<String>,
    approval_id: Option<String>,
) -> Result<Option<crate::journal::Head>> {
    if !ctx.journal.is_on() {
        return Ok(None);
    }
    let json = envelope.to_json();
    let request = json
        .get("requiresApproval")
        .filter(|v| !v.is_null())
        .map(|r| ("approval", r))
        .or_else(|| json.get("requiresInput").map(|r| ("input", r)));
    let (gate, request) = match request {
        Some((g, r)) => (g, r.clone()),
        None => ("approval", Item::Null),
    };
    let prompt = request
        .get("prompt")
        .and_then(Item::as_str)
        .unwrap_or_default()
        .to_string();
    let shown = request.get("items").cloned().unwrap_or(Item::Null);
    ctx.journal
        .append(crate::journal::Event::GateOpened(
            crate::journal::GateOpened {
                gate: gate.into(),
                step: step.to_string(),
                prompt,
                preview_digest: crate::journal::digest(crate::value::to_js_json(&shown).as_bytes()),
                plan_digest: plan_digest.unwrap_or_default(),
                approval_id,
            },
        ))
        .map_err(|e| {
            crate::error::Error::runtime(format!(
                "cannot record the gate in the run's journal: {e}"
            ))
        })?;
    Ok(ctx.journal.head())
}

fn halt_envelope(
    halt: Halt,
    resume_token: String,
    approval_id: Option<String>,
    plan: Option<super::plan_digest::PlanSummary>,
) -> Envelope {
    match halt {
        Halt::Approval {
            prompt,
            items,
            preview,
        } => Envelope::needs_approval(ApprovalRequest {
            prompt,
            items,
            preview,
            initiated_by: None,
            required_approver: None,
            require_different_approver: false,
            resume_token,
            approval_id,
            plan_digest: plan.as_ref().map(|p| p.digest.clone()),
            capabilities: plan.map(|p| p.capabilities),
        }),
        Halt::Input {
            prompt,
            schema,
            subject,
            items,
        } => Envelope::needs_input(InputRequest {
            prompt,
            response_schema: schema,
            defaults: None,
            subject,
            resume_token,
            items: Some(items),
        }),
    }
}

/// The digest of every wasm step of the pipeline, as resolved for this run.
pub fn step_digests(pipeline: &Pipeline, ctx: &Context) -> Result<Vec<StepDigest>> {
    let commands = crate::executor::resolve_stages(pipeline, 0, &ctx.registry)?;
    Ok(commands
        .into_iter()
        .zip(&pipeline.stages)
        .enumerate()
        .filter_map(|(stage, (cmd, s))| {
            cmd.digest().map(|d| StepDigest {
                stage,
                name: s.name.clone(),
                digest: d.to_string(),
            })
        })
        .collect())
}

/// A random RFC 4122 version-4 UUID.
pub fn uuid_v4() -> String {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b).expect("the OS random source is available");
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// The item human mode prints for a halt (the request, with its token).
/// An `ask` item also carries the input `items` before the token, as the
/// reference's halted item does.
pub fn halted_item(envelope: &Envelope) -> Option<Item> {
    if let Some(a) = &envelope.requires_approval {
        return Some(a.to_json());
    }
    let request = envelope.requires_input.as_ref()?;
    let mut item = request.to_json();
    if let (Some(items), Item::Object(map)) = (&request.items, &mut item) {
        let token = map.remove("resumeToken");
        map.insert("items".into(), Item::Array(items.clone()));
        if let Some(token) = token {
            map.insert("resumeToken".into(), token);
        }
    }
    Some(item)
}
