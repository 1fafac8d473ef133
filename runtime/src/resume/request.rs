//! What `lobster resume` (or a `call` with `action: resume`) asks for.

use crate::value::Item;

/// Which paused run.
#[derive(Debug, Clone, PartialEq)]
pub enum ResumeTarget {
    /// The full `resumeToken`.
    Token(String),
    /// The short `approvalId`.
    ApprovalId(String),
}

/// What to do with it.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Answer an approval gate.
    Approve(bool),
    /// Answer an input gate.
    Respond(Item),
    /// Drop the paused run.
    Cancel,
}

/// A complete resume request.
#[derive(Debug, Clone, PartialEq)]
pub struct ResumeRequest {
    pub target: ResumeTarget,
    pub decision: Decision,
    /// Who approves (`--approver NAME`); workflow gates with identity rules
    /// check it (else `LOBSTER_APPROVAL_APPROVED_BY`).
    pub approver: Option<String>,
}
