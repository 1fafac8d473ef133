//! What a paused run waits on, told to the person who decides it: the
//! workflow (or that it is a pipeline) and the gate's step, read from the
//! run's resume state without claiming it (`lobster serve`'s approval page
//! and approvals list).

use crate::resume::saved::PipelineResumeState;
use crate::resume::token::{self, TokenKind};
use crate::state::StateStore;
use crate::workflow::state::WorkflowState;
use std::path::Path;

/// Where a paused run stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateInfo {
    /// The workflow's `name:` (else its file name), or `None` for a pipeline.
    pub workflow: Option<String>,
    /// The gate's step id, or for a pipeline `stage N: <stage text>`.
    pub step: String,
}

/// The gate behind `resume_token` in `store`; `None` when the token or its
/// state cannot be read (decided meanwhile, or not this store's).
pub fn gate_info(store: &StateStore, resume_token: &str) -> Option<GateInfo> {
    let found = token::decode(store, resume_token).ok()?;
    let state = store.get(&found.state_key).ok()??;
    match found.kind {
        TokenKind::Workflow => {
            let s: WorkflowState = serde_json::from_value(state).ok()?;
            let path = Path::new(&s.file_path);
            let named = crate::workflow::load::load(path)
                .ok()
                .and_then(|(_, doc)| doc.value.get("name")?.as_str().map(str::to_string))
                .filter(|n| !n.trim().is_empty());
            let file = path
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default();
            Some(GateInfo {
                workflow: Some(named.unwrap_or(file)),
                step: s.step_id,
            })
        }
        TokenKind::Pipeline => {
            let s: PipelineResumeState = serde_json::from_value(state).ok()?;
            let gate = s.resume_at_index.checked_sub(1)?;
            let pipeline = crate::dsl::parse(&s.pipeline).ok()?;
            let stage = pipeline.stages.get(gate)?;
            Some(GateInfo {
                workflow: None,
                step: format!("stage {}: {}", gate + 1, stage.raw),
            })
        }
    }
}
