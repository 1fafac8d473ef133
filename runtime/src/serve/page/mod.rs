//! The pages humans read: server-rendered HTML, no JavaScript. Everything
//! that came from a run (prompt, items, capabilities, its journal) is
//! escaped.
//!
//! The rooms: this file (escaping, the frame, and the HTTP answer every
//! page carries, with its security headers), [`mod@approval`] (the gate page
//! and the page after a decision), [`mod@sign_in`] (the sign-in forms) and
//! [`runs`] (the run list and a run's page).

use axum::http::{header, StatusCode};
use axum::response::{Html, IntoResponse, Response};

pub mod approval;
pub mod runs;
pub mod sign_in;

pub use approval::{approval, by_step, decided, gate_preview, items_table, preview_of, Gate};
pub use runs::{list_page, run_page};
pub use sign_in::{sign_in, sign_in_to_read};

/// HTML-escape `s` (text and attribute values).
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// A whole page: `title` and `body` (already HTML) in this server's frame.
pub fn shell(title: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<meta name=\"referrer\" content=\"no-referrer\">\
<title>{}</title>\
<style>body{{font-family:system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;line-height:1.4}}\
pre{{background:#f4f4f4;padding:.75rem;overflow:auto;max-height:24rem}}\
table{{border-collapse:collapse;margin:.5rem 0;font-size:.9rem}}\
th,td{{border:1px solid #ccc;padding:.25rem .5rem;text-align:left;vertical-align:top}}\
th{{background:#f4f4f4}}\
button{{font-size:1.1rem;padding:.5rem 1.5rem;margin-right:1rem}}</style>\
</head><body>\n{body}\n</body></html>\n",
        escape(title)
    )
}

/// `s` cut at `max` characters (with `…`).
pub fn cut(s: &str, max: usize) -> String {
    if s.chars().count() > max {
        s.chars().take(max).collect::<String>() + "…"
    } else {
        s.to_string()
    }
}

/// A page saying why a link cannot be used.
pub fn refused(title: &str, why: &str) -> String {
    shell(
        title,
        &format!("<h1>{}</h1>\n<p>{}</p>", escape(title), escape(why)),
    )
}

/// The approval pages' Content-Security-Policy: nothing loads, no script
/// runs, forms post only to this server, and no other site may frame the
/// page (a framed Approve button could be clicked by a decoy).
pub const PAGE_CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// A page with the security headers every approval page carries.
pub fn html(status: StatusCode, body: String) -> Response {
    (
        status,
        [
            (header::CACHE_CONTROL, "no-store"),
            (header::CONTENT_SECURITY_POLICY, PAGE_CSP),
            (header::X_FRAME_OPTIONS, "DENY"),
            (header::REFERRER_POLICY, "no-referrer"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        Html(body),
    )
        .into_response()
}

/// 303 to `location` (a path on this server), setting `cookies`.
pub(super) fn see_other(location: String, cookies: Vec<header::HeaderValue>) -> Response {
    let mut resp = (
        StatusCode::SEE_OTHER,
        [
            (header::LOCATION, location),
            (header::CACHE_CONTROL, "no-store".to_string()),
        ],
    )
        .into_response();
    for c in cookies {
        resp.headers_mut().append(header::SET_COOKIE, c);
    }
    resp
}
