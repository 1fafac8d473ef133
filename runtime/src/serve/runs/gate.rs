//! Deciding a paused run's gate from serve's doors: finding the paused run
//! by token or approval id, the tenant's approver rule, and the one gate
//! function ([`crate::app::gate::take`]) before the resume starts.

use super::handlers::{answer, settle};
use super::launch::{slot, start_attached, Attach, Launch};
use super::registry::{hand_out, load_record, pending};
use super::settle::{Settled, SettledRx};
use crate::app::{self, Request, ResumeCall};
use crate::resume::{Decider, Decision};
use crate::serve::offload::offload;
use crate::serve::state::AppState;
use crate::serve::tenant::Tenant;
use crate::serve::wire::ResumeBody;
use crate::serve::{ApiError, Log};
use crate::state::{PendingEntry, RunRecord, RunStatus};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// The resume token of a paused run's record.
pub fn gate_token(rec: &RunRecord) -> Option<String> {
    rec.gate_token().map(String::from)
}

/// The status of a run paused at a gate, or the 409 for any other record.
fn paused_status(rec: &RunRecord) -> Result<&RunStatus, ApiError> {
    if !rec.status.is_paused() {
        return Err(ApiError::decided(format!(
            "run {} is {}: its gate was already decided (or it has none)",
            rec.run_id, rec.status
        )));
    }
    Ok(&rec.status)
}

/// The tenant's paused run whose gate has resume token `token` or approval
/// id `approval`.
pub fn find_paused(
    tenant: &Tenant,
    token: Option<&str>,
    approval: Option<&str>,
) -> Result<Option<RunRecord>, ApiError> {
    for entry in pending(tenant)? {
        let id = entry.run_id.as_str();
        let matches = match (token, approval) {
            (None, Some(a)) => entry.approval_id.as_deref() == Some(a),
            (Some(_), _) => true,
            (None, None) => false,
        };
        if !matches {
            continue;
        }
        let Some(rec) = load_record(tenant, id)? else {
            continue;
        };
        if token.is_none() || gate_token(&rec).as_deref() == token {
            return Ok(Some(rec));
        }
    }
    Ok(None)
}

/// Decide the gate of the paused run `rec` through the one gate function
/// ([`crate::app::gate::take`]): `call`'s decision checked against the gate
/// and `rule`, then the gate taken once, on this node or another. The
/// winner takes the run off the pending list.
fn take_gate(
    tenant: &Tenant,
    run_id: &str,
    call: &ResumeCall,
    rule: app::gate::Rule,
    log: &Log,
) -> Result<app::gate::Taken, ApiError> {
    let taken =
        app::gate::take(&tenant.store, &call.request, rule).map_err(|r| refusal(run_id, r))?;
    if let Err(e) = tenant.store.remove(&PendingEntry::key(run_id)) {
        log(&format!(
            "lobster serve: cannot take {run_id} off the pending list: {e}"
        ));
    }
    Ok(taken)
}

/// A refused decision as the HTTP answer: 400 for a decision that does not
/// fit the gate, 403 for a decider the tenant does not allow, 409 for a gate
/// decided already.
pub fn refusal(run_id: &str, refused: app::gate::Refused) -> ApiError {
    use app::gate::Refused;
    match refused {
        Refused::Invalid(e) => ApiError::bad_request(e.to_string()),
        Refused::Forbidden(e) => {
            ApiError::new(StatusCode::FORBIDDEN, "approval_required", e.to_string())
        }
        Refused::Taken(_) if run_id.is_empty() => ApiError::decided(
            "no paused run of this tenant has that token or approvalId: it was already decided, or it never existed",
        ),
        Refused::Taken(_) => ApiError::decided(format!("run {run_id}: its gate was already decided")),
        Refused::Store(e) => ApiError::store(e.to_string()),
    }
}

/// Decide the gate of the paused run `rec` with the decision of `body`
/// (`approve`, `response`, `cancel`, limits) as `decider` — who the door
/// authenticated (the tenant's token, a signed-in approver) — through
/// `door` ([`crate::serve::doors`]). A body's `approver` is refused:
/// nothing a request says names who decided.
pub async fn decide(
    app: &Arc<AppState>,
    tenant: &Arc<Tenant>,
    rec: &RunRecord,
    body: ResumeBody,
    wait: Duration,
    decider: Decider,
    door: &'static str,
) -> Result<Response, ApiError> {
    let (run_id, settled) = decide_settled(app, tenant, rec, body, wait, decider, door).await?;
    answer(&run_id, settled)
}

/// [`decide`] for a door that shows the outcome itself (the approval
/// page): the resumed run's id and how it settled within `wait` (`None`:
/// still running); a resume refused before its gate was spent is the same
/// error [`decide`] answers with (the gate is still open).
pub async fn decide_settled(
    app: &Arc<AppState>,
    tenant: &Arc<Tenant>,
    rec: &RunRecord,
    mut body: ResumeBody,
    wait: Duration,
    decider: Decider,
    door: &'static str,
) -> Result<(String, Option<Settled>), ApiError> {
    paused_status(rec)?;
    if body.approver {
        return Err(ApiError::bad_request(
            "approver is not accepted here: a decision's identity is who authenticated it (the tenant's token, or an approver signed in on the approval page)",
        ));
    }
    // The gate of the record, whatever the body named it by.
    body.target_token(
        gate_token(rec).ok_or_else(|| ApiError::internal("the run record has no resume token"))?,
    );
    let mut call = ResumeCall::try_from(body)?;
    call.request.decider = decider;
    let (a, t, r) = (app.clone(), tenant.clone(), rec.clone());
    let attach = Attach {
        door: Some(door),
        ..Attach::default()
    };
    let (run_id, rx) = offload(move || decide_call(&a, &t, &r, call, attach)).await?;
    let settled = settle(rx, wait).await;
    // PostgreSQL: its `running` record is stored already (by `start`).
    if settled.is_none() && tenant.store.is_files() {
        hand_out(app, tenant, &run_id);
    }
    if let Some(Settled::Refused(envelope)) = &settled {
        return Err(still_open(envelope));
    }
    Ok((run_id, settled))
}

/// The error of a resume refused before its gate was spent: the refusal's
/// message, and that the gate is still open.
pub(super) fn still_open(envelope: &Value) -> ApiError {
    let message = crate::state::error_message(envelope).unwrap_or("the decision was refused");
    ApiError::bad_request(format!("{message} (the gate is still open)"))
}

/// The tenant's approver rule, which [`crate::app::gate::take`] asks for
/// every serve door: whether `request`'s decider may make its decision at
/// `gate` (of the paused run `rec`, when the gateway lists it). Approving an
/// approval gate takes a signed-in approver of the tenant, the tenant's
/// agent where `self_approve = true`, or an elicited answer where
/// `elicitation_is_human = true` ([`may_approve`]); denying, cancelling and
/// answering an input gate take any decider of the tenant. A refusal of a
/// listed gate carries a fresh approval link to forward to a human.
pub fn may_decide(
    app: &AppState,
    tenant: &Tenant,
    rec: Option<&RunRecord>,
    gate: &app::gate::Gate,
    request: &crate::resume::ResumeRequest,
) -> crate::error::Result<()> {
    let approving = gate.approval && request.decision == Decision::Approve(true);
    if !approving || may_approve(tenant, &request.decider) {
        return Ok(());
    }
    Err(crate::error::Error::parse(match rec {
        Some(rec) => {
            let link = crate::serve::approvals::link_for(app, tenant, rec);
            format!(
                "this tenant's token cannot approve its own runs (self_approve = false): send a human approver this approval link (also in GET /v1/approvals as approveUrl): {link} — they sign in and decide; you may still deny or cancel"
            )
        }
        None => "approve: true is refused: this tenant's token cannot approve (self_approve = false), and this gate is not among the tenant's listed ones".to_string(),
    }))
}

/// Whether `decider` may say yes at an approval gate of `tenant`.
pub fn may_approve(tenant: &Tenant, decider: &Decider) -> bool {
    match decider {
        Decider::Approver { tenant: t, .. } => *t == tenant.name,
        Decider::TenantAgent(t) => *t == tenant.name && tenant.self_approve,
        Decider::Elicited => tenant.elicitation_is_human,
        Decider::Operator(_) | Decider::OperatorAgent(_) | Decider::Unnamed => false,
    }
}

/// Start the resume `call` of the paused run `rec` (its gate token is the
/// call's target), exactly once over every node and door: the run's id and
/// the receiver of its settled record. Every serve door comes through here:
/// the decision is checked against the gate and the tenant's rule
/// ([`may_decide`]) by the one gate function before the gate is taken.
pub fn decide_call(
    app: &Arc<AppState>,
    tenant: &Arc<Tenant>,
    rec: &RunRecord,
    call: ResumeCall,
    attach: Attach,
) -> Result<(String, SettledRx), ApiError> {
    paused_status(rec)?;
    let run_id = rec.run_id.clone();
    let token =
        gate_token(rec).ok_or_else(|| ApiError::internal("the run record has no resume token"))?;
    let slot = slot(app, tenant)?;
    // A workflowText run paused on another node: its document, from the store.
    crate::serve::inline::materialise(&tenant.store, tenant.workdir(), &run_id, &token)?;
    // Exactly once on every node and door: the one gate function checks the
    // decision, then the tenant's rule, then takes the gate by the paused
    // run's key (the store's claim of the resume state is the second lock).
    let rule = |gate: &app::gate::Gate, request: &crate::resume::ResumeRequest| {
        may_decide(app, tenant, Some(rec), gate, request)
    };
    let taken = take_gate(tenant, &run_id, &call, &rule, &app.log)?;
    let launch = Launch {
        slot,
        run_id: run_id.clone(),
        job: Request::Resume(call),
        created_at: rec.created_at.clone(),
        stored: false,
        paused: Some(rec.clone()),
        gate: Some(taken.clone()),
    };
    let rx = start_attached(app, tenant, launch, attach).inspect_err(|_| {
        // Not started (the store failed): give the gate back, so it can be
        // decided once the store is back (best effort; the resume state
        // itself was never claimed).
        app::gate::release(&tenant.store, &taken);
        if let Some(entry) = rec.pending_entry() {
            let _ = tenant
                .store
                .set(&PendingEntry::key(&run_id), &entry.to_value());
        }
    })?;
    Ok((run_id, rx))
}
