//! The request log: one line per request on the server's log (stderr),
//!
//! ```text
//! lobster serve: POST /v1/runs 200 12.4ms tenant=community run=6b0eddd7e8ff64b3784012c7d8a8aa4e
//! ```
//!
//! — method, path, status, time to the response head, tenant and run (`-`
//! when there is none). Never a body, a query string, a bearer token or an
//! approval link: the path of a link is shown as `/a/<link>`, the tenant is
//! found from the token (without spending its request budget) or from the
//! verified link, and a run id comes from the path, the link or the
//! [`RunId`] a handler attaches to its response.

use super::state::AppState;
use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::Response;
use std::sync::Arc;
use std::time::Instant;

/// The run a response is about, attached by the handler that knows it
/// (`POST /v1/runs` hands out a new id); the log line names it.
#[derive(Debug, Clone)]
pub struct RunId(pub String);

/// The middleware: time the request, then log one line.
pub async fn log_requests(
    State(app): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let seen = Seen::of(&app, &request);
    let response = next.run(request).await;
    let run = response
        .extensions()
        .get::<RunId>()
        .map(|r| r.0.clone())
        .or(seen.run)
        .unwrap_or_else(|| "-".into());
    (app.log)(&format!(
        "lobster serve: {method} {} {} {:.1}ms tenant={} run={run}",
        seen.path,
        response.status().as_u16(),
        started.elapsed().as_secs_f64() * 1000.0,
        seen.tenant.as_deref().unwrap_or("-"),
    ));
    response
}

/// What the request itself says, before it is handled.
struct Seen {
    /// The path as logged (a link replaced by `<link>`).
    path: String,
    tenant: Option<String>,
    run: Option<String>,
}

impl Seen {
    fn of(app: &AppState, request: &Request) -> Seen {
        let path = request.uri().path();
        let bearer = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim)
            .filter(|t| !t.is_empty());
        let mut seen = Seen {
            path: shown_path(path),
            tenant: bearer
                .and_then(|t| app.tenant_for(t))
                .map(|t| t.name.clone()),
            run: None,
        };
        if let Some(rest) = path.strip_prefix("/a/") {
            // `/a/{link}` and `/a/{link}/sign-in` name the same run.
            let link = rest.split('/').next().unwrap_or_default();
            if let Ok(l) = app.link_key.verify(link) {
                seen.tenant = Some(l.tenant);
                seen.run = Some(l.run_id);
            }
        } else if let Some(rest) = path.strip_prefix("/v1/runs/") {
            let id = rest.split('/').next().unwrap_or_default();
            if super::runs::valid_run_id(id) {
                seen.run = Some(id.to_string());
            }
        }
        seen
    }
}

/// The path for the log: an approval link is a credential, so `/a/<link>`;
/// anything else, cut at 200 characters (the URI is already
/// percent-encoded, so it holds no control characters or spaces).
fn shown_path(path: &str) -> String {
    if let Some(rest) = path.strip_prefix("/a/") {
        return match rest.split_once('/') {
            Some((_, "sign-in")) => "/a/<link>/sign-in".into(),
            _ => "/a/<link>".into(),
        };
    }
    match path.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &path[..i]),
        None => path.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::shown_path;

    #[test]
    fn links_never_reach_the_log() {
        assert_eq!(shown_path("/a/Y29tbXVuaXR5.c06cd210"), "/a/<link>");
        assert_eq!(
            shown_path("/a/Y29tbXVuaXR5.c06cd210/sign-in"),
            "/a/<link>/sign-in"
        );
        assert_eq!(shown_path("/a/Y29tbXVuaXR5.c06cd210/x"), "/a/<link>");
        assert_eq!(shown_path("/v1/runs"), "/v1/runs");
        assert_eq!(
            shown_path(&format!("/{}", "x".repeat(300))).chars().count(),
            201
        );
    }
}
