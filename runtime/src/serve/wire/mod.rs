//! The typed bodies of the runs API: `POST /v1/runs` ([`CreateRun`]) and
//! the two resumes ([`ResumeBody`]), read by the [`JsonBody`] extractor and
//! converted with `TryFrom` into the one [`crate::app`] request. Every
//! refusal is a 400 that names the field and what it takes (axum's own JSON
//! rejections are not used): an empty body is `{}`, a body that is not JSON
//! or not an object is refused as such, an unknown field of `POST /v1/runs`
//! is refused with the list of fields it takes, then each field's type.
//!
//! A `workflowText` is kept in the tenant's root (and store) only where the
//! run starts ([`NewRun::materialise`]), once per run: a run queued for
//! another node is checked here and kept by the node that takes it.

use super::state::AppState;
use super::tenant::Tenant;
use super::{body_json, ApiError};
use crate::app::options::LimitArgs;
use crate::app::request::{Lenient, ResumeFields};
use crate::app::{ResumeCall, RunRequest, RunTarget};
use crate::kernel::Mode;
use crate::resume::Decider;
use axum::extract::{FromRequest, Request};
use serde::de::{DeserializeOwned, Deserializer, Error as _};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::sync::Arc;

/// A body the runs API takes: its fields and who takes it.
pub trait WireBody: DeserializeOwned {
    /// The only fields it takes (`None`: other fields are ignored).
    const FIELDS: Option<&'static [&'static str]>;
    /// Who takes it, for the unknown-field refusal (`POST /v1/runs`).
    const TAKER: &'static str;

    /// Read `body` (a JSON object): unknown fields first, then each
    /// field's type, each refusal a 400 naming the field.
    fn from_map(body: Map<String, Value>) -> Result<Self, ApiError> {
        if let Some(fields) = Self::FIELDS {
            if let Some(k) = body.keys().find(|k| !fields.contains(&k.as_str())) {
                return Err(ApiError::bad_request(format!(
                    "unknown field {k}: {} takes {}",
                    Self::TAKER,
                    fields.join(", ")
                )));
            }
        }
        // Errors of `from_value` carry no position: the message is ours.
        let body: Self = serde_json::from_value(Value::Object(body))
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
        body.check()?;
        Ok(body)
    }

    /// What the field readers cannot see alone, after them (none by default).
    fn check(&self) -> Result<(), ApiError> {
        Ok(())
    }
}

/// The extractor of a [`WireBody`]: 413 past `max_body_bytes`, 400 for a
/// body that is not a JSON object or whose fields are refused.
pub struct JsonBody<T>(pub T);

impl<T: WireBody> FromRequest<Arc<AppState>> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &Arc<AppState>) -> Result<Self, ApiError> {
        let bytes = axum::body::Bytes::from_request(req, state).await;
        T::from_map(body_json(bytes)?).map(JsonBody)
    }
}

/// The body of `POST /v1/runs`: one of `pipeline`, `workflow` (a catalog
/// name) and `workflowText`, with `args`, limits and `wait`. Serialised the
/// same way, it is the payload of a queued run (PostgreSQL).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateRun {
    /// Pipeline text.
    #[serde(
        default,
        deserialize_with = "pipeline",
        skip_serializing_if = "Option::is_none"
    )]
    pub pipeline: Option<String>,
    /// A workflow of the tenant's catalog, by name.
    #[serde(
        default,
        deserialize_with = "workflow",
        skip_serializing_if = "Option::is_none"
    )]
    pub workflow: Option<String>,
    /// A workflow document (`.lobster` text or JSON).
    #[serde(
        default,
        deserialize_with = "workflow_text",
        skip_serializing_if = "Option::is_none"
    )]
    pub workflow_text: Option<String>,
    /// The workflow's args.
    #[serde(
        default,
        deserialize_with = "args",
        skip_serializing_if = "Option::is_none"
    )]
    pub args: Option<Map<String, Value>>,
    /// The run's time limit (ms).
    #[serde(
        default,
        deserialize_with = "timeout_ms",
        skip_serializing_if = "Option::is_none"
    )]
    pub timeout_ms: Option<u64>,
    /// The cap of each step's stdout.
    #[serde(
        default,
        deserialize_with = "max_stdout_bytes",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_stdout_bytes: Option<u64>,
    /// How long the request waits for the run to settle (ms).
    #[serde(
        default,
        deserialize_with = "wait",
        skip_serializing_if = "Option::is_none"
    )]
    pub wait: Option<u64>,
}

impl WireBody for CreateRun {
    const FIELDS: Option<&'static [&'static str]> = Some(&[
        "pipeline",
        "workflow",
        "workflowText",
        "args",
        "timeoutMs",
        "maxStdoutBytes",
        "wait",
    ]);
    const TAKER: &'static str = "POST /v1/runs";
}

/// A checked `POST /v1/runs` body: the app's run request once its inline
/// document, if any, is kept ([`NewRun::materialise`]).
#[derive(Debug, Clone, PartialEq)]
pub struct NewRun {
    target: NewTarget,
    args: Option<Map<String, Value>>,
    limits: LimitArgs,
}

#[derive(Debug, Clone, PartialEq)]
enum NewTarget {
    Target(RunTarget),
    /// `workflowText`: kept as a file of the tenant's root where it runs.
    Text(String),
}

impl TryFrom<CreateRun> for NewRun {
    type Error = ApiError;

    fn try_from(body: CreateRun) -> Result<Self, ApiError> {
        let target = match (body.pipeline, body.workflow, body.workflow_text) {
            (Some(p), None, None) => NewTarget::Target(RunTarget::Pipeline(p)),
            (None, Some(w), None) => NewTarget::Target(RunTarget::Workflow(w)),
            (None, None, Some(doc)) => NewTarget::Text(doc),
            (None, None, None) => {
                return Err(ApiError::bad_request(
                    "give one of pipeline, workflow (a catalog name) or workflowText",
                ))
            }
            _ => {
                return Err(ApiError::bad_request(
                    "give only one of pipeline, workflow and workflowText",
                ))
            }
        };
        Ok(NewRun {
            target,
            args: body.args,
            limits: LimitArgs {
                timeout_ms: body.timeout_ms,
                max_stdout_bytes: body.max_stdout_bytes,
                policy: None,
            },
        })
    }
}

impl NewRun {
    /// The target rule's refusals (a file of the server) as a 400, before
    /// anything is kept, stored or started. An inline document is a file
    /// the gateway writes: nothing to refuse here.
    pub fn check(&self, tenant: &Tenant) -> Result<(), ApiError> {
        match &self.target {
            NewTarget::Target(t) => check(tenant, &self.request(t.clone())),
            NewTarget::Text(_) => Ok(()),
        }
    }

    /// The app's run request: a `workflowText` is kept in the tenant's root
    /// (and, on a shared store, in the store) first — call this once, where
    /// the run starts.
    pub fn materialise(self, tenant: &Tenant) -> Result<RunRequest, ApiError> {
        let target = match &self.target {
            NewTarget::Target(t) => t.clone(),
            NewTarget::Text(doc) => RunTarget::WorkflowPath(super::inline::keep(tenant, doc)?),
        };
        let request = self.request(target);
        check(tenant, &request)?;
        Ok(request)
    }

    fn request(&self, target: RunTarget) -> RunRequest {
        RunRequest {
            strict_args: matches!(target, RunTarget::Workflow(_)),
            target,
            args: self.args.clone(),
            args_json: None,
            cwd: None,
            limits: self.limits.clone(),
            mode: Mode::Tool,
        }
    }
}

fn check(tenant: &Tenant, request: &RunRequest) -> Result<(), ApiError> {
    crate::app::target::check_request(&tenant.settings, request)
        .map_err(|e| ApiError::bad_request(e.to_string()))
}

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

// Field readers: each refusal names its field.

fn text<'de, D: Deserializer<'de>>(d: D, key: &str) -> Result<Option<String>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        Value::String(s) if !s.trim().is_empty() => Ok(Some(s)),
        _ => Err(D::Error::custom(format!(
            "{key} must be a non-empty string"
        ))),
    }
}

fn pipeline<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    text(d, "pipeline")
}

fn workflow<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    text(d, "workflow")
}

fn workflow_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    text(d, "workflowText")
}

fn args<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Map<String, Value>>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        Value::Object(m) => Ok(Some(m)),
        _ => Err(D::Error::custom("args must be an object")),
    }
}

/// A count as the tool contract reads it: any finite number, negative as 0,
/// fractions cut.
fn count<'de, D: Deserializer<'de>>(d: D, key: &str) -> Result<Option<u64>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        v => match v.as_f64() {
            Some(f) if f.is_finite() => Ok(Some(f.max(0.0) as u64)),
            _ => Err(D::Error::custom(format!("{key} must be a number"))),
        },
    }
}

fn timeout_ms<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    count(d, "timeoutMs")
}

fn max_stdout_bytes<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    count(d, "maxStdoutBytes")
}

fn wait<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        v => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| D::Error::custom("wait must be a number of milliseconds")),
    }
}

fn present<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    serde::de::IgnoredAny::deserialize(d).map(|_| true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resume::{Decision, ResumeTarget};
    use serde_json::json;

    fn create(v: Value) -> Result<CreateRun, String> {
        let Value::Object(m) = v else { panic!() };
        CreateRun::from_map(m).map_err(|e| e.message)
    }

    #[test]
    fn a_queued_body_reads_back_as_it_was_given() {
        let body =
            create(json!({"workflow": "w", "args": {"n": 1, "s": "x"}, "timeoutMs": 5})).unwrap();
        let Value::Object(m) = serde_json::to_value(&body).unwrap() else {
            panic!()
        };
        assert_eq!(
            Value::Object(m.clone()),
            json!({"workflow": "w", "args": {"n": 1, "s": "x"}, "timeoutMs": 5})
        );
        assert_eq!(CreateRun::from_map(m).unwrap(), body);
    }

    #[test]
    fn counts_read_as_the_tool_contract_reads_them() {
        let b = create(json!({"pipeline": "p", "timeoutMs": -3, "maxStdoutBytes": 9.7})).unwrap();
        assert_eq!((b.timeout_ms, b.max_stdout_bytes), (Some(0), Some(9)));
        assert_eq!(
            create(json!({"pipeline": "p", "timeoutMs": null}))
                .unwrap()
                .timeout_ms,
            None
        );
    }

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
}
