//! An approver's sign-in, shared by the approval pages and the run pages:
//! who is signed in on a request (their session cookie) and the check of
//! the sign-in form (name and password or token; never the tenant's own
//! token), with the form's decoding: [`SignInForm`], read from the body as
//! a handler's argument.

use super::approver;
use super::page::{html, refused};
use super::state::AppState;
use super::tenant::Tenant;
use axum::extract::{FromRequest, Request};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use std::sync::Arc;

/// The approver signed in on this request for `tenant` (their session
/// cookie), if any. Nothing else — no bearer token, no form field — names
/// an approver.
pub fn signed_in(app: &AppState, tenant: &Tenant, headers: &HeaderMap) -> Option<String> {
    let cookies = headers.get(header::COOKIE)?.to_str().ok()?;
    let value = approver::cookie_value(cookies, approver::COOKIE)?;
    app.session_key
        .verify(value, &tenant.name, &tenant.approvers)
        .map(|s| s.name)
}

/// An approver's sign-in form (`name`, `secret`; a missing field is
/// empty), the extractor of the sign-in handlers' body (`POST
/// /a/{link}/sign-in`, `POST /r/{link}/sign-in`). A body axum refuses (past
/// `max_body_bytes`, or unreadable) is answered with the refusal page, with
/// its status, before the handler runs.
pub struct SignInForm {
    name: String,
    secret: String,
}

impl SignInForm {
    /// The fields of an `application/x-www-form-urlencoded` `body`.
    pub fn parse(body: &[u8]) -> SignInForm {
        let form = form_urlencoded(body);
        let field = |k: &str| {
            form.iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        };
        SignInForm {
            name: field("name"),
            secret: field("secret"),
        }
    }
}

impl FromRequest<Arc<AppState>> for SignInForm {
    type Rejection = Response;

    async fn from_request(req: Request, app: &Arc<AppState>) -> Result<Self, Response> {
        match axum::body::Bytes::from_request(req, app).await {
            Ok(body) => Ok(SignInForm::parse(&body)),
            Err(e) => Err(html(e.status(), refused("Request refused", &e.body_text()))),
        }
    }
}

/// Check an approver's sign-in `form` for `tenant`: the session cookies
/// to set, or the status and why not. The approval page and the run pages
/// sign in through it. The tenant's own token is refused: the agent is not
/// an approver.
pub async fn check_sign_in(
    app: &Arc<AppState>,
    tenant: &Arc<Tenant>,
    form: SignInForm,
) -> Result<Vec<header::HeaderValue>, (StatusCode, &'static str)> {
    let SignInForm { name, secret } = form;
    if !tenant.admit_sign_in() {
        return Err((
            StatusCode::TOO_MANY_REQUESTS,
            "Too many sign-in attempts for this tenant; wait a minute and try again.",
        ));
    }
    if tenant.is_own_token(&secret) {
        (app.log)(&format!(
            "lobster serve: tenant {}: the agent's token was refused at an approver sign-in",
            tenant.name
        ));
        return Err((
            StatusCode::FORBIDDEN,
            "That is the tenant's agent token. An approver signs in with a credential of their own.",
        ));
    }
    // A password check is deliberately slow: off the async threads.
    let t = tenant.clone();
    let who = tokio::task::spawn_blocking(move || {
        approver::sign_in(&t.approvers, &name, &secret).cloned()
    })
    .await
    .ok()
    .flatten();
    let Some(who) = who else {
        return Err((
            StatusCode::UNAUTHORIZED,
            "That name and password (or token) are not an approver's of this tenant.",
        ));
    };
    let ttl = app.config.approval_link_ttl;
    let cookie = app.session_key.issue(&tenant.name, &who, ttl);
    let secure = if app.public_url.starts_with("https://") {
        "; Secure"
    } else {
        ""
    };
    // One session, sent back to the approval pages and the run pages.
    Ok(["/a/", "/r/"]
        .iter()
        .filter_map(|path| {
            header::HeaderValue::from_str(&format!(
                "{}={cookie}; Path={path}; HttpOnly; SameSite=Strict; Max-Age={}{secure}",
                approver::COOKIE,
                ttl.as_secs()
            ))
            .ok()
        })
        .collect())
}

/// `application/x-www-form-urlencoded` pairs.
pub fn form_urlencoded(body: &[u8]) -> Vec<(String, String)> {
    let text = String::from_utf8_lossy(body);
    text.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

fn percent_decode(s: &str) -> String {
    let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                match (
                    bytes.get(i + 1).and_then(|b| hex(*b)),
                    bytes.get(i + 2).and_then(|b| hex(*b)),
                ) {
                    (Some(h), Some(l)) => {
                        out.push(h * 16 + l);
                        i += 2;
                    }
                    _ => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_fields_decode() {
        assert_eq!(
            form_urlencoded(b"decision=approve&x=a+b%21"),
            vec![
                ("decision".to_string(), "approve".to_string()),
                ("x".to_string(), "a b!".to_string())
            ]
        );
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
    }

    #[test]
    fn a_sign_in_form_reads_its_two_fields_and_leaves_a_missing_one_empty() {
        let f = SignInForm::parse(b"secret=p%26ss+w&name=ann&name=bob");
        assert_eq!((f.name.as_str(), f.secret.as_str()), ("ann", "p&ss w"));
        let f = SignInForm::parse(b"name=ann");
        assert_eq!((f.name.as_str(), f.secret.as_str()), ("ann", ""));
    }
}
