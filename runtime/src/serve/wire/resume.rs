//! The body of the two resumes.

use super::fields::{present, wait};
use super::WireBody;
use crate::app::request::{Lenient, ResumeFields};
use crate::app::ResumeCall;
use crate::resume::Decider;
use crate::serve::ApiError;
use serde::Deserialize;

/// The body of `POST /v1/runs/{runId}/resume` and `POST /v1/resume`: the
/// tool contract's resume fields ([`ResumeFields`]: the run by `token` or
/// `approvalId`, `/v1/resume` only; one decision; limits for the rest of
/// the run), read by the same rules as at every door, and `wait`. Other
/// fields are ignored, as before; `approver` is refused, even `null` (a
/// decision's identity is who authenticated it). The limits' types are
/// read with the body, before the decision is.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct ResumeBody {
    /// Whether the body named an `approver` (refused).
    #[serde(default, deserialize_with = "present")]
    pub approver: bool,
    /// How long the request waits for the run to settle (ms).
    #[serde(default, deserialize_with = "wait")]
    pub wait: Option<u64>,
    /// The resume fields every door reads (`approver` is never among them
    /// here: see above).
    #[serde(flatten)]
    pub fields: ResumeFields,
}

impl WireBody for ResumeBody {
    const FIELDS: Option<&'static [&'static str]> = None;
    const TAKER: &'static str = "a resume";

    fn check(&self) -> Result<(), ApiError> {
        self.fields.limits().map(drop).map_err(bad_request)
    }
}

impl ResumeBody {
    /// A decision to approve or deny (the approval page's form).
    pub fn approve(approve: bool) -> Self {
        ResumeBody {
            fields: ResumeFields {
                approve: Some(Lenient::Is(approve)),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    /// Name the paused run by its gate's resume token, whatever the body
    /// named it by.
    pub fn target_token(&mut self, token: String) {
        self.fields.token = Some(Lenient::Is(token));
        self.fields.approval_id = None;
    }
}

impl TryFrom<ResumeBody> for ResumeCall {
    type Error = ApiError;

    /// The resume call of a body; its decider is the door's to set
    /// (`Decider::Unnamed` until then).
    fn try_from(body: ResumeBody) -> Result<Self, ApiError> {
        let mut call = ResumeCall::try_from(body.fields).map_err(bad_request)?;
        call.request.decider = Decider::Unnamed;
        Ok(call)
    }
}

fn bad_request(e: crate::error::Error) -> ApiError {
    ApiError::bad_request(e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resume::{Decision, ResumeTarget};
    use serde_json::{json, Value};

    #[test]
    fn a_resume_body_takes_one_decision() {
        let call = |v: Value| {
            let Value::Object(m) = v else { panic!() };
            ResumeCall::try_from(ResumeBody::from_map(m).unwrap()).map_err(|e| e.message)
        };
        let c = call(json!({"token": "t", "cancel": true, "approve": true})).unwrap();
        assert_eq!(c.request.decision, Decision::Cancel);
        let c = call(json!({"token": "t", "cancel": false, "response": {"a": 1}, "approve": true}))
            .unwrap();
        assert_eq!(c.request.decision, Decision::Respond(json!({"a": 1})));
        let c = call(json!({"approvalId": "a1", "response": null, "approve": false})).unwrap();
        assert_eq!(c.request.decision, Decision::Approve(false));
        assert_eq!(c.request.target, ResumeTarget::ApprovalId("a1".into()));
        assert_eq!(c.request.decider, Decider::Unnamed);
        assert_eq!(call(json!({"token": "t"})).unwrap_err(), "approve required");
        assert_eq!(
            call(json!({"token": 5, "approve": true})).unwrap_err(),
            "token or approvalId required"
        );
    }

    #[test]
    fn serve_s_differences_from_the_contract() {
        let body = |v: Value| {
            let Value::Object(m) = v else { panic!() };
            ResumeBody::from_map(m).map_err(|e| e.message)
        };
        // An approver is seen even when null; the contract reads none.
        let b = body(json!({"token": "t", "approve": true, "approver": null})).unwrap();
        assert!(b.approver && b.fields.approver.is_none());
        assert!(!body(json!({"token": "t"})).unwrap().approver);
        // The limits' types are read with the body, before the decision.
        assert_eq!(
            body(json!({"timeoutMs": "soon"})).unwrap_err(),
            "timeoutMs must be a number"
        );
        assert_eq!(
            body(json!({"wait": 1.5, "approve": true})).unwrap_err(),
            "wait must be a number of milliseconds"
        );
        let b = body(json!({"wait": 5, "token": "t", "approve": false})).unwrap();
        assert_eq!(b.wait, Some(5));
        assert_eq!(b.fields.token(), Some("t"));
    }
}
