//! A gate's decision in the run's journal: the resumed run continues the
//! paused run's chain (from the head its resume state carries) with
//! `run_resumed` and `decision` (who decided, through which door).

use super::request::{Decider, Decision};
use crate::error::{Error, Result};
use crate::executor::Context;
use crate::journal::{self, Event, Head, RunResumed};

/// Record `decision` of the gate at `step` by `decider` (the approver's
/// name `approver`, if it has one) in the journal `head` points into
/// (nothing when the paused run kept none, or journals are off).
pub fn record_decision(
    ctx: &Context,
    head: Option<&Head>,
    decision: &Decision,
    decider: &Decider,
    approver: Option<&str>,
    step: &str,
) -> Result<()> {
    let Some(head) = head else {
        return Ok(());
    };
    if ctx.journal.door().is_empty() {
        return Ok(());
    }
    let resumed = RunResumed {
        at: journal::now_rfc3339(),
        door: String::new(),
        gate: step.to_string(),
    };
    let fail = |e: Error| Error::runtime(format!("cannot continue the run's journal: {e}"));
    ctx.journal
        .continue_at(&ctx.state, head, resumed)
        .map_err(fail)?;
    let (decision, response_digest) = match decision {
        Decision::Approve(true) => ("approve", None),
        Decision::Approve(false) => ("deny", None),
        Decision::Cancel => ("cancel", None),
        Decision::Respond(r) => (
            "input",
            Some(journal::digest(crate::value::to_js_json(r).as_bytes())),
        ),
    };
    ctx.journal
        .append(Event::Decision(journal::Decision {
            decision: decision.into(),
            approver: approver.map(str::to_string),
            decided_by: Some(decider.describe()),
            door: ctx.journal.door().to_string(),
            response_digest,
        }))
        .map_err(fail)
}
