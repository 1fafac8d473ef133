//! The HTTP error of every JSON handler: `{"error":{"type","message"}}`
//! with its status, `Retry-After` for 429s and 503s, and
//! `WWW-Authenticate: Bearer` for 401s.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

/// An HTTP error: `{"error":{"type","message"}}` with a status (and
/// `Retry-After` for 429s).
#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    pub kind: &'static str,
    pub message: String,
    pub retry_after: Option<u64>,
}

impl ApiError {
    /// An error of this status and type.
    pub fn new(status: StatusCode, kind: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            kind,
            message: message.into(),
            retry_after: None,
        }
    }

    /// 400.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    /// 500 (the message is logged by nobody: it names no secret).
    pub fn internal(message: impl ToString) -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal_error",
            message.to_string(),
        )
    }

    /// 503: the state store failed (PostgreSQL down or unreachable); the
    /// message says which store and why. Nothing was started or decided.
    pub fn store(message: impl ToString) -> Self {
        ApiError {
            retry_after: Some(1),
            ..Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "store_unavailable",
                message.to_string(),
            )
        }
    }

    /// 404 for a run this tenant does not have.
    pub fn no_run(run_id: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no run {run_id} for this tenant"),
        )
    }

    /// 409: the gate was decided already.
    pub fn decided(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, "already_decided", message)
    }

    /// 429 for too many runs at once.
    pub fn too_many_runs(max: usize) -> Self {
        ApiError {
            retry_after: Some(super::tenant::RUNS_RETRY_AFTER.as_secs()),
            ..Self::new(
                StatusCode::TOO_MANY_REQUESTS,
                "too_many_runs",
                format!("this tenant already has {max} runs going on (max_concurrent_runs); retry later"),
            )
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = Json(json!({"error": {"type": self.kind, "message": self.message}}));
        let mut resp = (self.status, body).into_response();
        if let Some(s) = self.retry_after {
            if let Ok(v) = HeaderValue::from_str(&s.to_string()) {
                resp.headers_mut().insert(header::RETRY_AFTER, v);
            }
        }
        if self.status == StatusCode::UNAUTHORIZED {
            resp.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        resp
    }
}
