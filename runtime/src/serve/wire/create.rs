//! The body of `POST /v1/runs` and the checked run it becomes.

use super::fields::{args, max_stdout_bytes, pipeline, timeout_ms, wait, workflow, workflow_text};
use super::WireBody;
use crate::app::options::LimitArgs;
use crate::app::{RunRequest, RunTarget};
use crate::kernel::Mode;
use crate::serve::tenant::Tenant;
use crate::serve::ApiError;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

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
            NewTarget::Text(doc) => {
                RunTarget::WorkflowPath(crate::serve::inline::keep(tenant, doc)?)
            }
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

#[cfg(test)]
mod tests {
    use super::*;
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
}
