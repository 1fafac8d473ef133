//! Who a request is: the tenant of its bearer token ([`authed`], and
//! [`Authed`], the same as a handler's argument), after the tenant's
//! per-minute budget. Tokens are compared as sha256 digests, in constant
//! time.

use super::state::AppState;
use super::tenant::{self, Tenant};
use super::ApiError;
use axum::http::{header, HeaderMap, StatusCode};
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// The tenant of a request's bearer token, after its per-minute budget.
pub fn authed(app: &AppState, headers: &HeaderMap) -> std::result::Result<Arc<Tenant>, ApiError> {
    let unauthorized = |m: &str| ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", m);
    let value = headers
        .get(header::AUTHORIZATION)
        .ok_or_else(|| unauthorized("missing Authorization: Bearer <tenant token>"))?;
    let token = value
        .to_str()
        .ok()
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| unauthorized("Authorization must be `Bearer <tenant token>`"))?;
    let tenant = app
        .tenant_for(token)
        .ok_or_else(|| unauthorized("unknown token"))?;
    if let Err(tenant::OverBudget::Rate(secs)) = tenant.admit_request() {
        app.metrics.limited(&tenant.name, "rate_limited");
        return Err(ApiError {
            retry_after: Some(secs),
            ..ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limited",
                "this tenant is over its requests_per_minute; retry after the Retry-After seconds",
            )
        });
    }
    Ok(tenant)
}

/// The extractor of a request's tenant: [`authed`] as a handler argument,
/// before the body is read (401 with `WWW-Authenticate: Bearer` without a
/// known tenant token, 429 past the tenant's `requests_per_minute`).
pub struct Authed(pub Arc<Tenant>);

impl axum::extract::FromRequestParts<Arc<AppState>> for Authed {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        app: &Arc<AppState>,
    ) -> std::result::Result<Self, ApiError> {
        authed(app, &parts.headers).map(Authed)
    }
}

/// sha256 of `bytes`.
pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// The tenant whose token is `token`. Every tenant's hash is compared, in
/// constant time, so the answer's timing does not tell which byte differed
/// or which tenant matched.
pub fn authenticate<'a>(tenants: &'a [Arc<Tenant>], token: &str) -> Option<&'a Arc<Tenant>> {
    let hash = sha256(token.as_bytes());
    let mut found = None;
    for t in tenants {
        if t.token_hash_is(&hash) {
            found = Some(t);
        }
    }
    found
}

/// Whether two digests are equal, compared in constant time.
pub(crate) fn ct_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let mut diff = 0u8;
    for (x, y) in a.iter().zip(b) {
        diff |= x ^ y;
    }
    std::hint::black_box(diff) == 0
}
