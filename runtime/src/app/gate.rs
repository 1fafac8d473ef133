//! Deciding a gate: the one function every door decides a paused run's gate
//! through — `lobster resume`, `lobster call`, stdio `lobster mcp`, and
//! `lobster serve`'s `/mcp`, `/v1/resume`, `/v1/runs/{id}/resume` and the
//! approval page.
//!
//! [`take`] decides in this order, and nothing is taken before the last step:
//!
//! 1. the paused run the request names: a token in its one spelling
//!    ([`crate::resume::token::decode`]) or an approval id, resolved to the
//!    run's resume-state key — the paused run's identity, whatever the
//!    request's spelling;
//! 2. the decision against the gate: the kind of answer it takes and, for
//!    an input gate, the answer against its schema (an invalid answer leaves
//!    the gate open at every door);
//! 3. the door's approver rule (who the door authenticated, and what its
//!    settings let them decide);
//! 4. the gate itself, once: a mark in the store keyed by the paused run
//!    (`gate_taken_<digest of the state key>`, created only if absent —
//!    atomically on either back end), checked again against the state
//!    after it is won. Exactly one of any number of deciders, through any
//!    doors, on any nodes sharing the store, gets past it.
//!
//! The run then continues through [`super::start`]. Checks that need the
//! paused run's own context (the approver's identity rules of a workflow
//! gate, components or plan changed since the pause) run there, before the
//! resume state itself is claimed; when one refuses, the run gives the gate
//! back ([`release`]) and its [`super::Finished::refused`] says so, so the
//! door answers a refusal and the gate can still be decided.
//!
//! [`gate_info`] tells the person who decides what a paused run waits on:
//! the workflow (or that it is a pipeline) and the gate's step, read from
//! the run's resume state without claiming it (`lobster serve`'s approval
//! page and approvals list).

use crate::error::{Error, Result};
use crate::resume::claim::{claimable, claimable_as};
use crate::resume::saved::{HaltType, PipelineResumeState};
use crate::resume::token::{self, TokenKind};
use crate::resume::{approval_id, ResumeRequest, ResumeTarget};
use crate::state::StateStore;
use crate::workflow::state::WorkflowState;
use serde_json::json;
use std::path::Path;

/// A paused run's gate, as the request named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gate {
    /// The paused run's resume-state key: its identity.
    pub state_key: String,
    /// Whether it is a pipeline's or a workflow file's.
    pub kind: TokenKind,
    /// Whether it asks for an approval (else for input).
    pub approval: bool,
    /// Which claim of the run deciding it leads to ([`claimable_as`]).
    generation: String,
}

/// Why a decision was not taken. The gate is as it was in every case.
#[derive(Debug, Clone)]
pub enum Refused {
    /// The request or the decision does not fit the gate (a token in
    /// another spelling, the wrong kind of answer, an answer the schema
    /// refuses): HTTP 400.
    Invalid(Error),
    /// The door's approver rule refuses this decider: HTTP 403.
    Forbidden(Error),
    /// The gate was decided already, or there is none: HTTP 409.
    Taken(Error),
    /// The store could not be asked: HTTP 500.
    Store(Error),
}

impl Refused {
    /// The error to show.
    pub fn error(&self) -> &Error {
        match self {
            Refused::Invalid(e) | Refused::Forbidden(e) | Refused::Taken(e) | Refused::Store(e) => {
                e
            }
        }
    }
}

impl From<Refused> for Error {
    fn from(r: Refused) -> Error {
        match r {
            Refused::Invalid(e) | Refused::Forbidden(e) | Refused::Taken(e) | Refused::Store(e) => {
                e
            }
        }
    }
}

/// A door's approver rule: `Ok` when the decider it authenticated may make
/// `request`'s decision at `gate`.
pub type Rule<'a> = &'a (dyn Fn(&Gate, &ResumeRequest) -> Result<()> + Sync);

/// The rule of the operator's own doors (`lobster resume`, `call`, stdio
/// `mcp`): whoever holds the token decides; workflow identity rules still
/// apply when the run continues.
pub fn operator(_: &Gate, _: &ResumeRequest) -> Result<()> {
    Ok(())
}

/// A gate taken by [`take`]: the run that continues it must end by
/// [`release`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taken {
    /// The gate.
    pub gate: Gate,
    store_key: String,
}

/// The mark of `state_key`'s gate for the claim `generation` of the run
/// ([`claimable_as`]: `""` while it is paused). A resumer that took the gate
/// and died after claiming leaves its mark; the take-over of its dead claim
/// (every step after the gate pure, [`crate::policy::recovery`]) is another
/// generation, so that mark does not block it, while racers for the same
/// take-over still meet at one mark.
fn taken_key(state_key: &str, generation: &str) -> String {
    let mut h = blake3::Hasher::new();
    h.update(state_key.as_bytes());
    if !generation.is_empty() {
        h.update(b"\0");
        h.update(generation.as_bytes());
    }
    format!("gate_taken_{}", &h.finalize().to_hex()[..32])
}

/// The error every loser gets: the one a resume of a spent state always
/// gave (or why the state is gone: a resume that claimed it and was killed).
fn already_decided(
    store: &StateStore,
    kind: TokenKind,
    state_key: &str,
    request: &ResumeRequest,
) -> Error {
    crate::resume::interrupted::error_for(store, state_key).unwrap_or_else(|| {
        let what = match (&request.decision, kind) {
            (crate::resume::Decision::Cancel, _) => "Resume state not found",
            (_, TokenKind::Pipeline) => "Pipeline resume state not found",
            (_, TokenKind::Workflow) => "Workflow resume state not found",
        };
        Error::runtime(what)
            .with_hint("the run was already resumed or cancelled, or its state was removed")
    })
}

/// Steps 1 and 2: the paused run `request` names and the decision checked
/// against its gate. Nothing is taken.
pub fn check(store: &StateStore, request: &ResumeRequest) -> Result<Gate, Refused> {
    let (kind, state_key) = match &request.target {
        ResumeTarget::Token(t) => {
            let r = token::decode(store, t).map_err(|e| match e {
                Error::Parse { .. } => Refused::Invalid(e),
                other => Refused::Store(other),
            })?;
            (r.kind, r.state_key)
        }
        ResumeTarget::ApprovalId(raw) => {
            let (_, key) = approval_id::lookup(store, raw).map_err(Refused::Taken)?;
            (TokenKind::of_state_key(&key), key)
        }
    };
    let (state, generation) = claimable_as(store, &state_key)
        .map_err(Refused::Store)?
        .ok_or_else(|| Refused::Taken(already_decided(store, kind, &state_key, request)))?;
    let approval = match kind {
        TokenKind::Pipeline => {
            let state = PipelineResumeState::from_json(state).map_err(Refused::Store)?;
            crate::resume::resume_run::decided_input(&state, &request.decision)
                .map_err(Refused::Invalid)?;
            state.halt_type == HaltType::Approval
        }
        TokenKind::Workflow => {
            let state = WorkflowState::from_json(state).map_err(Refused::Store)?;
            crate::workflow::resume::check_answer(&state, &request.decision)
                .map_err(Refused::Invalid)?;
            state.halt_type == HaltType::Approval
        }
    };
    Ok(Gate {
        state_key,
        kind,
        approval,
        generation,
    })
}

/// Decide `request`'s gate: the paused run it names, the decision checked
/// against the gate, the door's approver `rule`, then the gate taken once
/// (see the module docs). On `Ok` the caller continues the run (with
/// [`super::StartOptions::gate`]).
pub fn take(store: &StateStore, request: &ResumeRequest, rule: Rule) -> Result<Taken, Refused> {
    let gate = check(store, request)?;
    rule(&gate, request).map_err(Refused::Forbidden)?;
    let store_key = taken_key(&gate.state_key, &gate.generation);
    let won = store
        .create_new(
            &store_key,
            &json!({ "at": approval_id::now_iso(), "stateKey": gate.state_key }),
        )
        .map_err(Refused::Store)?;
    let lost = || Refused::Taken(already_decided(store, gate.kind, &gate.state_key, request));
    if !won {
        return Err(lost());
    }
    let taken = Taken {
        gate: gate.clone(),
        store_key,
    };
    // Won after the state was spent (a decider that finished and released
    // its mark meanwhile): nothing to decide.
    match claimable_as(store, &taken.gate.state_key) {
        Ok(Some((_, g))) if g == taken.gate.generation => Ok(taken),
        Ok(_) => {
            release(store, &taken);
            Err(lost())
        }
        Err(e) => {
            release(store, &taken);
            Err(Refused::Store(e))
        }
    }
}

/// End a taken gate when its run ends: the mark goes (the resume state is
/// spent, or the gate is open again). Returns whether the gate is open
/// again — the run `failed` before it claimed the resume state (a check in
/// the paused run's context refused the decision).
pub fn release_after(store: &StateStore, taken: &Taken, failed: bool) -> bool {
    let open = matches!(claimable(store, &taken.gate.state_key), Ok(Some(_)));
    release(store, taken);
    if !open {
        sweep(store, &taken.gate.state_key);
    }
    failed && open
}

/// Remove every mark of `state_key`'s gate once its run is spent: the
/// marks of resumers killed after their claim, whose runs a take-over
/// finished (each claim's mark has a key of its own).
fn sweep(store: &StateStore, state_key: &str) {
    let Ok(marks) = store.list_prefix("gate_taken_") else {
        return;
    };
    for (name, mark) in marks {
        if mark.get("stateKey").and_then(|k| k.as_str()) == Some(state_key) {
            let _ = store.remove(&name);
        }
    }
}

/// Open the gate of `state_key` again: a resume that took it died, and its
/// run may be claimed again ([`crate::resume::claim::claimable`]).
pub fn reopen(store: &StateStore, state_key: &str) {
    let _ = store.remove(&taken_key(state_key, ""));
}

/// Give a taken gate back without continuing its run.
pub fn release(store: &StateStore, taken: &Taken) {
    let _ = store.remove(&taken.store_key);
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resume::{Decision, ResumeRequest};

    /// A paused pipeline with an input gate taking `{"n": integer}`.
    fn paused_input(store: &StateStore) -> String {
        let state = json!({
            "kind": "pipeline-resume", "version": 1, "pipeline": "ask --prompt n",
            "resumeAtIndex": 1, "items": [], "haltType": "input_request",
            "prompt": "n?", "createdAt": "2026-01-01T00:00:00Z",
            "inputSchema": {"type": "object", "required": ["n"],
                "properties": {"n": {"type": "integer"}}}
        });
        store.set("pipeline_resume_t1", &state).unwrap();
        token::issue(store, TokenKind::Pipeline, "pipeline_resume_t1").unwrap()
    }

    fn request(token: &str, decision: Decision) -> ResumeRequest {
        ResumeRequest {
            target: ResumeTarget::Token(token.into()),
            decision,
            decider: crate::resume::Decider::Unnamed,
        }
    }

    #[test]
    fn an_invalid_answer_takes_nothing_and_a_gate_is_taken_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::new(dir.path());
        let token = paused_input(&store);
        for bad in [
            Decision::Respond(json!({"n": "x"})),
            Decision::Respond(json!({})),
            Decision::Approve(true),
        ] {
            let r = take(&store, &request(&token, bad.clone()), &operator);
            assert!(matches!(r, Err(Refused::Invalid(_))), "{bad:?}: {r:?}");
        }
        let good = request(&token, Decision::Respond(json!({"n": 3})));
        let forbid = |_: &Gate, _: &ResumeRequest| Err(Error::parse("not you"));
        assert!(matches!(
            take(&store, &good, &forbid),
            Err(Refused::Forbidden(_))
        ));
        let taken = take(&store, &good, &operator).unwrap();
        assert_eq!(taken.gate.state_key, "pipeline_resume_t1");
        assert!(!taken.gate.approval);
        assert!(matches!(
            take(&store, &good, &operator),
            Err(Refused::Taken(_))
        ));
        // Given back (its run refused before claiming): open again.
        assert!(release_after(&store, &taken, true));
        let again = take(&store, &good, &operator).unwrap();
        // Spent: the state is gone, so is the mark; a late decider finds nothing.
        store.remove("pipeline_resume_t1").unwrap();
        assert!(!release_after(&store, &again, false));
        assert!(matches!(
            take(&store, &good, &operator),
            Err(Refused::Taken(_))
        ));
    }

    #[test]
    fn racers_take_a_gate_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::new(dir.path());
        let token = paused_input(&store);
        let good = request(&token, Decision::Respond(json!({"n": 1})));
        let wins = std::thread::scope(|s| {
            let hs: Vec<_> = (0..16)
                .map(|_| s.spawn(|| take(&store, &good, &operator).is_ok()))
                .collect();
            hs.into_iter()
                .map(|h| h.join().unwrap())
                .filter(|w| *w)
                .count()
        });
        assert_eq!(wins, 1);
    }
}
