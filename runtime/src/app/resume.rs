//! Resuming a paused run by the kind of state its token or approval id
//! names: a pipeline's ([`crate::resume::resume_pipeline`]) or a workflow
//! file's ([`crate::workflow::resume::resume`]). The token's MAC is checked
//! here, before either is asked.

use crate::error::Result;
use crate::kernel::Context;
use crate::resume::token::{self, TokenKind};
use crate::resume::{approval_id, Paused, ResumeRequest, ResumeTarget};

/// Resume the run `request` names, in `ctx` (its store holds the state).
pub fn resume(request: &ResumeRequest, ctx: &mut Context) -> Result<Paused> {
    let (kind, state_key) = paused_run(request, ctx)?;
    match kind {
        TokenKind::Workflow => crate::workflow::resume::resume(&state_key, request, ctx),
        TokenKind::Pipeline => crate::resume::resume_pipeline(&state_key, request, ctx),
    }
}

/// The kind and resume-state key of the paused run `request` names: a
/// verified token, or an approval id's alias.
pub fn paused_run(request: &ResumeRequest, ctx: &Context) -> Result<(TokenKind, String)> {
    Ok(match &request.target {
        ResumeTarget::Token(t) => {
            let r = token::decode(&ctx.state, t)?;
            (r.kind, r.state_key)
        }
        ResumeTarget::ApprovalId(raw) => {
            let (_, key) = approval_id::lookup(&ctx.state, raw)?;
            (TokenKind::of_state_key(&key), key)
        }
    })
}
