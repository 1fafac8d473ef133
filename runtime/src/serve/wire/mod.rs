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
//!
//! The rooms: this file (the extractor and [`WireBody`]), [`CreateRun`]
//! and [`NewRun`] (`create.rs`), [`ResumeBody`] (`resume.rs`), the field
//! readers (`fields.rs`).

use super::state::AppState;
use super::ApiError;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use std::sync::Arc;

mod create;
mod fields;
mod resume;

pub use create::{CreateRun, NewRun};
pub use resume::ResumeBody;

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

/// A JSON object body (an empty body is `{}`); 413 past `max_body_bytes`.
pub fn body_json(
    body: std::result::Result<axum::body::Bytes, axum::extract::rejection::BytesRejection>,
) -> std::result::Result<Map<String, Value>, ApiError> {
    let bytes = body.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                "the request body is larger than max_body_bytes",
            )
        } else {
            ApiError::bad_request(e.body_text())
        }
    })?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(ApiError::bad_request("the body must be a JSON object")),
        Err(e) => Err(ApiError::bad_request(format!(
            "the body is not valid JSON: {e}"
        ))),
    }
}
