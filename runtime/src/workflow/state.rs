//! The resume state of a paused workflow, and turning a run's end into an
//! envelope (saving the state, issuing the token and approval id).

use super::gate::Identity;
use super::run::{Runner, Stop};
use super::steps::pipeline::PipelinePause;
use crate::envelope::{ApprovalRequest, Envelope, InputRequest};
use crate::error::{Error, Result};
use crate::resume::approval_id::{self, now_iso};
use crate::resume::pause::uuid_v4;
use crate::resume::saved::HaltType;
use crate::resume::token::{self, TokenKind};
use crate::resume::Paused;
use crate::value::Item;
use serde::{Deserialize, Serialize};
use serde_json::Map;

/// The `kind` of workflow resume states.
pub const WORKFLOW_KIND: &str = "workflow-resume";

/// One file the paused run depends on, with its blake3 digest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileDigest {
    pub path: String,
    pub digest: String,
}

/// A paused workflow, as stored in the state directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowState {
    pub kind: String,
    pub version: u32,
    /// The workflow file (canonical path).
    pub file_path: String,
    /// Every workflow file and component the run depends on; all are
    /// re-hashed on resume and must be unchanged.
    pub files: Vec<FileDigest>,
    pub args: Map<String, Item>,
    pub args_digest: String,
    /// The run's working directory (the resumed steps run there too).
    #[serde(default)]
    pub cwd: Option<String>,
    /// What WebAssembly steps were granted (with the run's clock and seed).
    #[serde(default)]
    pub grants: crate::kernel::Grants,
    /// Where WebAssembly pipeline stages were found.
    #[serde(default)]
    pub step_dirs: Vec<String>,
    pub resume_at_index: usize,
    pub steps: Map<String, Item>,
    #[serde(default)]
    pub last_step_id: Option<String>,
    pub halt_type: HaltType,
    pub step_id: String,
    pub prompt: String,
    #[serde(default)]
    pub initiated_by: Option<String>,
    #[serde(default)]
    pub required_approver: Option<String>,
    #[serde(default)]
    pub require_different_approver: bool,
    #[serde(default)]
    pub input_schema: Option<Item>,
    #[serde(default)]
    pub input_subject: Option<Item>,
    #[serde(default)]
    pub approval_id: Option<String>,
    /// For an input requested by a pipeline stage (`ask`): the rendered
    /// pipeline and the stage that receives the response.
    #[serde(default)]
    pub pipeline: Option<PipelineResume>,
    pub created_at: String,
    /// Approvals: blake3 of what the rest of the run depends on
    /// ([`WorkflowState::plan_digest`]); resume recomputes and compares it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_digest: Option<String>,
    /// Every WebAssembly pipeline stage the plan resolved: name, file and
    /// digest; resume refuses a name that resolves to anything else.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub components: Vec<crate::policy::pins::ComponentPin>,
    /// Brokered answers recorded so far (by request digest) and the budget
    /// spent: the resumed run replays them instead of asking again.
    #[serde(default, skip_serializing_if = "crate::broker::Ledger::is_empty")]
    pub broker: crate::broker::Ledger,
    /// Every step after the gate is pure or acts only through journaled
    /// brokered calls ([`crate::policy::recovery`]): if the resume's
    /// claimer dies, the run goes back to its gate (replaying the calls the
    /// claimer made) instead of stopping for a human. The store reads it as
    /// [`crate::state::RERUN_SAFE`].
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rerun_safe: bool,
    /// Where the run's journal stood at the pause (see
    /// [`crate::resume::saved::PipelineResumeState::journal`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal: Option<crate::journal::Head>,
}

impl WorkflowState {
    /// blake3 over what runs after the gate: every file and component digest,
    /// where the run continues, the args, the results so far (the gated
    /// items among them) and the grants.
    pub fn plan_digest(&self) -> String {
        let doc = serde_json::json!({
            "version": 1,
            "files": self.files.iter().map(|f| [&f.path, &f.digest]).collect::<Vec<_>>(),
            "resumeAt": self.resume_at_index,
            "stepId": self.step_id,
            "argsDigest": self.args_digest,
            "steps": self.steps,
            "grants": {
                "dirs": self.grants.dirs.iter().map(|d| serde_json::json!({
                    "host": d.host.to_string_lossy(),
                    "guest": d.guest,
                    "access": d.access,
                })).collect::<Vec<_>>(),
                "env": self.grants.env,
            },
        });
        let mut doc = doc;
        if !self.components.is_empty() {
            doc["components"] = serde_json::json!(self.components);
        }
        blake3::hash(&serde_json::to_vec(&doc).unwrap_or_default())
            .to_hex()
            .to_string()
    }
}

/// Where a paused pipeline step continues.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PipelineResume {
    pub text: String,
    pub next_stage: usize,
}

impl WorkflowState {
    /// Read a stored record, rejecting anything that is not one.
    pub fn from_json(v: Item) -> Result<Self> {
        let s: Self = serde_json::from_value(v)
            .map_err(|_| Error::runtime("Invalid workflow resume state"))?;
        if s.kind != WORKFLOW_KIND || s.version != 1 {
            return Err(Error::runtime("Invalid workflow resume state"));
        }
        Ok(s)
    }

    /// The identity rules of the gate.
    pub fn identity(&self) -> Identity {
        Identity {
            initiated_by: self.initiated_by.clone(),
            required_approver: self.required_approver.clone(),
            require_different_approver: self.require_different_approver,
        }
    }
}

/// Turn the end of a run into an envelope; a gate is saved for resume.
pub fn finish(runner: &Runner, stop: Stop) -> Result<Paused> {
    let (index, halt_type, step_id) = match &stop {
        Stop::Done => {
            return Ok(Paused {
                envelope: Envelope::ok(runner.output()),
                rendered: None,
                output_digest: runner.output_digest(),
            })
        }
        Stop::Approval { index, .. } => (*index, HaltType::Approval, &runner.wf.steps[*index].id),
        Stop::Input { index, .. } | Stop::PipelineInput { index, .. } => {
            (*index, HaltType::Input, &runner.wf.steps[*index].id)
        }
    };
    let store = &runner.ctx.state;
    store.ensure_dir()?;
    let state_key = format!("workflow_resume_{}", uuid_v4());
    let resume_token = token::issue(store, TokenKind::Workflow, &state_key)?;
    let approval_id = match halt_type {
        HaltType::Approval => approval_id::publish(store, &state_key)?,
        HaltType::Input => None,
    };
    let mut files: Vec<FileDigest> = Vec::new();
    let mut pinned = runner.files.clone();
    pinned.extend(pin_templated(runner, index));
    super::add_components(&mut pinned, runner.ctx);
    for (p, d) in &pinned {
        let path = p.display().to_string();
        if !files.iter().any(|f| f.path == path) {
            files.push(FileDigest {
                path,
                digest: d.clone(),
            });
        }
    }
    let mut state = WorkflowState {
        kind: WORKFLOW_KIND.into(),
        version: 1,
        file_path: runner.wf.source.path.display().to_string(),
        files,
        args: runner.args.clone(),
        args_digest: super::args::digest(&runner.args),
        cwd: Some(runner.ctx.cwd.display().to_string()),
        grants: runner.ctx.grants.clone(),
        broker: runner.ctx.broker.ledger(),
        step_dirs: runner.ctx.step_dirs(),
        resume_at_index: index + 1,
        steps: runner.results.clone(),
        last_step_id: runner.last.clone(),
        halt_type,
        step_id: step_id.clone(),
        prompt: String::new(),
        initiated_by: None,
        required_approver: None,
        require_different_approver: false,
        input_schema: None,
        input_subject: None,
        approval_id: approval_id.clone(),
        pipeline: None,
        created_at: now_iso(),
        plan_digest: None,
        components: component_pins(runner.ctx),
        rerun_safe: {
            let mut after = super::policy::after_gate(&runner.wf, index, runner.ctx);
            // An `ask` stage's pipeline goes on first.
            if let Stop::PipelineInput { pause, .. } = &stop {
                let rest = crate::dsl::parse(&pause.text)
                    .map_or(crate::policy::recovery::After::Other, |p| {
                        crate::policy::recovery::After::Pipeline(p, pause.next_stage)
                    });
                after.insert(0, rest);
            }
            crate::policy::recovery::recoverable(&after, runner.ctx)
        },
        journal: None,
    };
    if let Stop::PipelineInput { pause, .. } = &stop {
        state.pipeline = Some(PipelineResume {
            text: pause.text.clone(),
            next_stage: pause.next_stage,
        });
    }
    let envelope = match stop {
        Stop::Approval { gate, .. } => {
            state.prompt = gate.prompt.clone();
            state.initiated_by = gate.initiated_by.clone();
            state.required_approver = gate.required_approver.clone();
            state.require_different_approver = gate.require_different_approver;
            let digest = state.plan_digest();
            state.plan_digest = Some(digest.clone());
            let capabilities =
                crate::workflow::policy::capabilities_after(&runner.wf, index, runner.ctx);
            Envelope::needs_approval(ApprovalRequest {
                prompt: gate.prompt,
                items: gate.items,
                preview: gate.preview,
                initiated_by: gate.initiated_by,
                required_approver: gate.required_approver,
                require_different_approver: gate.require_different_approver,
                resume_token,
                approval_id,
                plan_digest: Some(digest),
                capabilities: Some(capabilities),
            })
        }
        Stop::Input { gate, .. }
        | Stop::PipelineInput {
            pause: PipelinePause { gate, .. },
            ..
        } => {
            state.prompt = gate.prompt.clone();
            state.input_schema = Some(gate.schema.clone());
            state.input_subject = gate.subject.clone();
            let mut request = InputRequest {
                prompt: gate.prompt,
                response_schema: gate.schema,
                defaults: gate.defaults,
                subject: gate.subject,
                resume_token,
                items: None,
            };
            fit_subject(&mut request, runner, step_id)?;
            Envelope::needs_input(request)
        }
        Stop::Done => unreachable!("handled above"),
    };
    state.journal = crate::resume::pause::record_gate(
        runner.ctx,
        &envelope,
        step_id,
        state.plan_digest.clone(),
        state.approval_id.clone(),
    )?;
    let value = serde_json::to_value(&state).expect("a resume state serialises");
    crate::resume::pause::save_state(store, &state_key, &value, state.approval_id.as_deref())?;
    Ok(Paused {
        envelope,
        rendered: None,
        output_digest: None,
    })
}

/// The run's resolved WebAssembly stages as pins (sorted by name).
pub fn component_pins(ctx: &crate::kernel::Context) -> Vec<crate::policy::pins::ComponentPin> {
    let Some(steps) = crate::sandbox::resolver_of(&ctx.registry) else {
        return Vec::new();
    };
    let mut out: Vec<_> = steps
        .resolved()
        .into_iter()
        .map(|(name, pin)| crate::policy::pins::ComponentPin {
            name,
            path: pin.path.display().to_string(),
            digest: pin.digest().to_string(),
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// Sub-workflows named by a templated path in the steps after the gate:
/// render the path with what is known now and pin the file (and its literal
/// sub-workflows) if it exists. Best effort: a path that depends on later
/// results is resolved when it runs.
fn pin_templated(runner: &Runner, gate: usize) -> super::run::FileDigests {
    let mut out = Vec::new();
    for step in runner.wf.steps.iter().skip(gate + 1) {
        if let super::model::Action::Workflow { path, .. } = &step.action {
            if !path.contains('$') {
                continue;
            }
            let rendered =
                super::template::render(path, &runner.scope(), super::template::Style::Raw, None)
                    .text;
            let full = super::steps::compose::resolve_path(&runner.wf.source.path, &rendered);
            if let Ok((_, files)) = super::load_plan(&full, None) {
                out.extend(files);
            }
        }
    }
    out
}

/// Largest subject kept whole in a `needs_input` envelope.
const MAX_SUBJECT_BYTES: usize = 192_000;

/// Keep the `needs_input` envelope under `LOBSTER_MAX_TOOL_ENVELOPE_BYTES`
/// (default 512000; values below 1024 are ignored): an oversized subject is
/// replaced by `{truncated, bytes, preview}` in the envelope (the resume
/// state keeps all of it).
fn fit_subject(req: &mut InputRequest, runner: &Runner, step_id: &str) -> Result<()> {
    let limit = runner
        .ctx
        .env
        .get("LOBSTER_MAX_TOOL_ENVELOPE_BYTES")
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|n| *n >= 1024)
        .unwrap_or(512_000);
    let size = |r: &InputRequest| {
        crate::value::to_js_json_pretty(&Envelope::needs_input(r.clone()).to_json()).len()
    };
    let Some(subject) = req.subject.clone() else {
        return Ok(());
    };
    let text = crate::value::to_js_json(&subject);
    if text.len() <= MAX_SUBJECT_BYTES && size(req) <= limit {
        return Ok(());
    }
    let preview: String = text.chars().take(2000).collect();
    req.subject =
        Some(serde_json::json!({"truncated": true, "bytes": text.len(), "preview": preview}));
    if size(req) <= limit {
        return Ok(());
    }
    req.subject = Some(serde_json::json!({
        "truncated": true,
        "bytes": text.len(),
        "preview": "[subject omitted: envelope size limit]"
    }));
    if size(req) <= limit {
        return Ok(());
    }
    Err(Error::runtime(format!(
        "Workflow input step {step_id} needs_input envelope exceeds {limit} bytes even after subject truncation"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rejects_foreign_records() {
        assert!(WorkflowState::from_json(json!({"kind": "pipeline-resume"})).is_err());
        let e = WorkflowState::from_json(json!(3)).unwrap_err();
        assert_eq!(e.to_string(), "Invalid workflow resume state");
    }
}
