//! The resume state of a paused pipeline, as stored on disk.

use crate::error::{Error, Result};
use crate::kernel::Grants;
use crate::value::Item;
use serde::{Deserialize, Serialize};

/// What kind of gate the run stopped at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum HaltType {
    #[serde(rename = "approval_request")]
    Approval,
    #[serde(rename = "input_request")]
    Input,
}

/// A paused pipeline: enough to continue it, nothing the token must carry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PipelineResumeState {
    /// Always `pipeline-resume`.
    pub kind: String,
    /// Format version of this record.
    pub version: u32,
    /// The whole pipeline text; re-parsed and re-validated on resume.
    pub pipeline: String,
    /// The first stage to run on resume.
    pub resume_at_index: usize,
    /// Items handed to that stage on an approval (an input response replaces them).
    pub items: Vec<Item>,
    pub halt_type: HaltType,
    pub prompt: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<Item>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_id: Option<String>,
    pub created_at: String,
    /// The working directory of the paused run; the resume runs there too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// What the run's WebAssembly steps were granted, with its clock and
    /// random seed, so the rest of the run sees the same capabilities.
    #[serde(default)]
    pub grants: Grants,
    /// Where wasm steps were found.
    #[serde(default)]
    pub step_dirs: Vec<String>,
    /// The blake3 digest of every wasm step in the pipeline: resume refuses
    /// to run a component that changed since the pause.
    #[serde(default)]
    pub step_digests: Vec<StepDigest>,
    /// Approvals: the digest of what runs after the gate
    /// ([`crate::policy::plan_digest`]); resume recomputes and compares it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_digest: Option<String>,
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
    /// Where the run's journal stood at the pause: the resumed run
    /// continues the chain from here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal: Option<crate::journal::Head>,
}

/// The component behind one stage.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepDigest {
    pub stage: usize,
    pub name: String,
    pub digest: String,
}

/// The `kind` of pipeline resume states.
pub const PIPELINE_KIND: &str = "pipeline-resume";

impl PipelineResumeState {
    /// Read a stored record, rejecting anything that is not one.
    pub fn from_json(value: Item) -> Result<Self> {
        let state: Self = serde_json::from_value(value)
            .map_err(|_| Error::runtime("Invalid pipeline resume state"))?;
        if state.kind != PIPELINE_KIND || state.version != 1 {
            return Err(Error::runtime("Invalid pipeline resume state"));
        }
        Ok(state)
    }

    /// The record as JSON.
    pub fn to_json(&self) -> Item {
        serde_json::to_value(self).expect("a resume state serialises")
    }
}
