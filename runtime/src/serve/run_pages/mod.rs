//! Run pages for a tenant's humans, server-rendered without JavaScript:
//! `/r/{link}` is the tenant's run list (newest first) or one run's page
//! (its timeline: each step's component, input and output digests, fuel
//! and time; the gates and who decided them; whether the chain verifies).
//!
//! A view link is `base64url(tenant.scope.expiry).tag` with `tag` blake3
//! keyed with the server's link key over [`DOMAIN`] and the payload (so an
//! approval link never passes for a view link, nor the reverse); `scope` is
//! a run id or `-` (the list); it lasts `approval_link_ttl`. The link names
//! what to show, not who may see it: a page is shown only to one of the
//! link's tenant's approvers, signed in (their session cookie; the form at
//! `/r/{link}/sign-in`), or to a request with the tenant's own token —
//! never to the link alone, nor to anything of another tenant. The approval
//! page links its run's page and `GET /v1/runs` answers the list's
//! (`pageUrl`). Workflows are named by their catalog name or their path
//! beneath the tenant's workdir, never by a path on the server.

use super::approvals::{check_sign_in, html, see_other, signed_in};
use super::link::{now_secs, LinkError, LinkKey};
use super::offload::offload;
use super::page::{cut, escape, refused, shell, sign_in_to_read};
use super::state::AppState;
use super::tenant::Tenant;
use super::ApiError;
use crate::journal::verify::verify_text;
use crate::state::journal::{RunFilter, RunSummary};
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde_json::Value;
use std::sync::Arc;

/// The view links' key domain.
const DOMAIN: &[u8] = b"lobster serve run page v1\0";

/// Runs the list page shows.
const LIST_ROWS: usize = 100;

/// What a verified view link shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct View {
    pub tenant: String,
    /// The run, or `None` for the tenant's run list.
    pub run: Option<String>,
    /// Unix seconds.
    pub expires: u64,
}

/// A view link (the path's last segment) for `tenant`'s run `run` (or its
/// list), valid until `expires` (Unix seconds).
pub fn issue(key: &LinkKey, tenant: &str, run: Option<&str>, expires: u64) -> String {
    let payload = format!("{tenant}.{}.{expires}", run.unwrap_or("-"));
    format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(&payload),
        key.keyed(DOMAIN, &payload)
    )
}

/// Verify view link `raw`: its tag, then its expiry.
pub fn verify(key: &LinkKey, raw: &str) -> Result<View, LinkError> {
    let (b64, tag) = raw.split_once('.').ok_or(LinkError::Unknown)?;
    let payload = URL_SAFE_NO_PAD
        .decode(b64)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or(LinkError::Unknown)?;
    let expected =
        blake3::Hash::from_hex(key.keyed(DOMAIN, &payload)).map_err(|_| LinkError::Unknown)?;
    let given = blake3::Hash::from_hex(tag).map_err(|_| LinkError::Unknown)?;
    // blake3::Hash compares in constant time.
    if expected != given {
        return Err(LinkError::Unknown);
    }
    let mut parts = payload.rsplitn(3, '.');
    let (Some(exp), Some(scope), Some(tenant)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(LinkError::Unknown);
    };
    let expires: u64 = exp.parse().map_err(|_| LinkError::Unknown)?;
    if now_secs() > expires {
        return Err(LinkError::Expired);
    }
    Ok(View {
        tenant: tenant.to_string(),
        run: (scope != "-").then(|| scope.to_string()),
        expires,
    })
}

/// The full URL of a view link for `tenant`'s run `run` (or its list),
/// valid for `approval_link_ttl`.
pub fn url(app: &AppState, tenant: &str, run: Option<&str>) -> String {
    let expires = now_secs() + app.config.approval_link_ttl.as_secs();
    format!(
        "{}/r/{}",
        app.public_url,
        issue(&app.link_key, tenant, run, expires)
    )
}

/// How a run's workflow is shown to the tenant: its catalog name, or its
/// path beneath the tenant's workdir (a `workflowText` run's file), else
/// the file's name alone — never a path on the server. A pipeline's text
/// is shown as it is.
pub fn shown_name(tenant: &Tenant, name: &str) -> String {
    let path = std::path::Path::new(name);
    if !path.is_absolute() {
        // A tenant's journal names a catalog file relative to its catalog
        // directory (`app::journal`; catalog files lie directly in it), a
        // workflowText run's beneath the workdir.
        let catalog = (!tenant.workdir().join(path).is_file())
            .then(|| {
                tenant
                    .settings
                    .catalog
                    .entries
                    .iter()
                    .find(|e| e.file.file_name() == Some(path.as_os_str()))
            })
            .flatten();
        return catalog.map_or_else(|| name.to_string(), |e| e.name.clone());
    }
    let real = path.canonicalize().ok();
    let same = |f: &std::path::Path| f == path || (real.is_some() && f.canonicalize().ok() == real);
    if let Some(e) = tenant
        .settings
        .catalog
        .entries
        .iter()
        .find(|e| same(&e.file))
    {
        return e.name.clone();
    }
    let within = |p: &std::path::Path| {
        p.strip_prefix(tenant.workdir())
            .ok()
            .filter(|r| !r.as_os_str().is_empty())
            .map(|r| r.to_string_lossy().into_owned())
    };
    if let Some(r) = within(path).or_else(|| real.as_deref().and_then(within)) {
        return r;
    }
    path.file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Whether this request may read `tenant`'s run pages: the tenant's own
/// token as a bearer, or one of its approvers signed in (a session of this
/// tenant). Nothing of another tenant counts, nor the link alone.
fn may_read(app: &AppState, tenant: &Tenant, headers: &HeaderMap) -> bool {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty());
    if bearer.is_some_and(|t| tenant.is_own_token(t)) {
        return true;
    }
    signed_in(app, tenant, headers).is_some()
}

/// The view link `raw` and its tenant, or the page saying why not.
fn open(app: &AppState, raw: &str) -> Result<(View, Arc<Tenant>), Box<Response>> {
    let unknown = || {
        Box::new(html(
            StatusCode::NOT_FOUND,
            refused("Unknown link", "This link is not valid. Ask for a new one."),
        ))
    };
    let view = match verify(&app.link_key, raw) {
        Ok(v) => v,
        Err(LinkError::Expired) => {
            return Err(Box::new(html(
                StatusCode::GONE,
                refused(
                    "This link cannot be used",
                    "This link has expired. Ask for a new one.",
                ),
            )))
        }
        Err(_) => return Err(unknown()),
    };
    let tenant = app.tenant_named(&view.tenant).ok_or_else(unknown)?;
    Ok((view, tenant))
}

/// The answer to a request that may not read `tenant`'s pages: the
/// sign-in form where the tenant has approvers, else a refusal.
fn not_for_you(raw: &str, tenant: &Tenant) -> Response {
    if tenant.approvers.is_empty() {
        return html(
            StatusCode::FORBIDDEN,
            refused(
                "Not available",
                "This tenant has no approvers: its run pages are read with its token only.",
            ),
        );
    }
    html(
        StatusCode::UNAUTHORIZED,
        sign_in_to_read(raw, &tenant.name, None),
    )
}

/// `POST /r/{link}/sign-in` with `name` and `secret`: one of the link's
/// tenant's approvers signs in (the same session as on the approval page),
/// then back to the page.
pub async fn sign_in(
    State(app): State<Arc<AppState>>,
    Path(raw): Path<String>,
    body: Result<axum::body::Bytes, axum::extract::rejection::BytesRejection>,
) -> Response {
    let body = match body {
        Ok(b) => b,
        Err(e) => return html(e.status(), refused("Request refused", &e.body_text())),
    };
    let tenant = match open(&app, &raw) {
        Ok((_, t)) => t,
        Err(r) => return *r,
    };
    if tenant.approvers.is_empty() {
        return not_for_you(&raw, &tenant);
    }
    match check_sign_in(&app, &tenant, &body).await {
        Ok(cookies) => see_other(format!("/r/{raw}"), cookies),
        Err((status, why)) => html(status, sign_in_to_read(&raw, &tenant.name, Some(why))),
    }
}

/// `GET /r/{link}`: the page, for the tenant's signed-in approvers or its
/// token; the sign-in form otherwise.
pub async fn show(
    State(app): State<Arc<AppState>>,
    Path(raw): Path<String>,
    headers: HeaderMap,
) -> Response {
    let (view, tenant) = match open(&app, &raw) {
        Ok(o) => o,
        Err(r) => return *r,
    };
    if !may_read(&app, &tenant, &headers) {
        return not_for_you(&raw, &tenant);
    }
    let store = tenant.store.clone();
    match view.run.clone() {
        None => {
            let filter = RunFilter {
                limit: Some(LIST_ROWS),
                ..Default::default()
            };
            let t = tenant.clone();
            let read = offload(move || {
                let mut runs = store.journal_runs(&filter).map_err(ApiError::store)?;
                for r in &mut runs {
                    r.name = shown_name(&t, &r.name);
                }
                Ok(runs)
            });
            let runs = match read.await {
                Ok(r) => r,
                Err(e) => return html(e.status, refused("Not available", &e.message)),
            };
            let href = |id: &str| {
                format!(
                    "{}/r/{}",
                    app.public_url,
                    issue(&app.link_key, &view.tenant, Some(id), view.expires)
                )
            };
            html(StatusCode::OK, list_page(&view.tenant, &runs, href))
        }
        Some(id) => {
            let read = {
                let id = id.clone();
                offload(move || {
                    let summary = store.journal_summary(&id).map_err(ApiError::store)?;
                    let text = store.journal_text(&id).map_err(ApiError::store)?;
                    Ok((summary, text))
                })
                .await
            };
            match read {
                Ok((summary, Some(text))) => html(
                    StatusCode::OK,
                    run_page(&view.tenant, &id, summary.as_ref(), &text, |n| {
                        shown_name(&tenant, n)
                    }),
                ),
                Ok((_, None)) => html(
                    StatusCode::NOT_FOUND,
                    refused(
                        "No such run",
                        "This run has no journal (it may have been pruned).",
                    ),
                ),
                Err(e) => html(e.status, refused("Not available", &e.message)),
            }
        }
    }
}

fn duration(s: &RunSummary) -> String {
    let ms = |t: &str| {
        chrono::DateTime::parse_from_rfc3339(t)
            .ok()
            .map(|d| d.timestamp_millis())
    };
    match (ms(&s.started_at), s.ended_at.as_deref().and_then(ms)) {
        (Some(a), Some(b)) if b >= a => format!("{} ms", b - a),
        _ => "–".into(),
    }
}

/// The run list page: `href` gives each run's page.
pub fn list_page(tenant: &str, runs: &[RunSummary], href: impl Fn(&str) -> String) -> String {
    let mut body = format!(
        "<h1>Runs</h1>\n<p>Tenant <b>{}</b>, newest first ({} shown).</p>\n",
        escape(tenant),
        runs.len()
    );
    body.push_str(
        "<table id=\"runs\">\n<thead><tr><th>Run</th><th>Workflow</th><th>Status</th>\
<th>Started</th><th>Duration</th><th>Gate</th></tr></thead>\n<tbody>\n",
    );
    for s in runs {
        body.push_str(&format!(
            "<tr><td><a href=\"{}\"><code>{}</code></a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            escape(&href(&s.run_id)),
            escape(&s.run_id),
            escape(&cut(&s.name, 80)),
            escape(&s.status),
            escape(&s.started_at),
            escape(&duration(s)),
            escape(s.gate.as_deref().unwrap_or("")),
        ));
    }
    body.push_str("</tbody></table>\n");
    shell("Runs", &body)
}

/// A digest as shown: its first 12 digits, the whole in the title.
fn digest(d: Option<&str>) -> String {
    match d.filter(|d| !d.is_empty()) {
        Some(d) => format!(
            "<code title=\"{}\">{}</code>",
            escape(d),
            escape(&d.chars().take(12).collect::<String>())
        ),
        None => String::new(),
    }
}

/// One run's page from its journal `text` (the store's lines); `shown`
/// names a workflow file for the page ([`shown_name`]).
pub fn run_page(
    tenant: &str,
    id: &str,
    summary: Option<&RunSummary>,
    text: &str,
    shown: impl Fn(&str) -> String,
) -> String {
    let verdict = verify_text(text, Some(id));
    let mut body = format!(
        "<h1>Run <code>{}</code></h1>\n<p>Tenant <b>{}</b>.",
        escape(id),
        escape(tenant)
    );
    if let Some(s) = summary {
        body.push_str(&format!(
            " Workflow <b id=\"workflow\">{}</b> via {}: <b id=\"status\">{}</b>, started {}, {}.",
            escape(&cut(&shown(&s.name), 200)),
            escape(&s.door),
            escape(&s.status),
            escape(&s.started_at),
            escape(&duration(s)),
        ));
    }
    body.push_str("</p>\n");
    match &verdict.problem {
        None => body.push_str(&format!(
            "<p id=\"chain\">Journal: {} events, the chain verifies.</p>\n",
            verdict.events
        )),
        Some(p) => body.push_str(&format!(
            "<p id=\"chain\"><b>Journal: DOES NOT VERIFY</b>: {}</p>\n",
            escape(&p.message)
        )),
    }
    let records: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .collect();
    // The gates and who decided them.
    let mut gates = String::new();
    for (i, r) in records.iter().enumerate() {
        let e = &r["event"];
        if e["kind"] != "gate_opened" {
            continue;
        }
        let decided = records[i + 1..]
            .iter()
            .map(|r| &r["event"])
            .take_while(|e| e["kind"] != "gate_opened")
            .find(|e| e["kind"] == "decision");
        let who = match decided {
            Some(d) => format!(
                "<b>{}</b> by <b class=\"approver\">{}</b> via {}",
                escape(d["decision"].as_str().unwrap_or("")),
                escape(d["approver"].as_str().unwrap_or("(unnamed)")),
                escape(d["door"].as_str().unwrap_or("")),
            ),
            None => "not decided yet".into(),
        };
        gates.push_str(&format!(
            "<li>{} at step <b>{}</b>: “{}” — {}; plan {}</li>\n",
            escape(e["gate"].as_str().unwrap_or("")),
            escape(e["step"].as_str().unwrap_or("")),
            escape(&cut(e["prompt"].as_str().unwrap_or(""), 300)),
            who,
            digest(e["plan_digest"].as_str()),
        ));
    }
    if !gates.is_empty() {
        body.push_str(&format!(
            "<h2>Gates</h2>\n<ul id=\"gates\">\n{gates}</ul>\n"
        ));
    }
    body.push_str(
        "<h2>Timeline</h2>\n<table id=\"timeline\">\n<thead><tr><th>#</th><th>Event</th><th>Step</th>\
<th>Component</th><th>Input</th><th>Output</th><th>Fuel</th><th>Time</th><th>Detail</th></tr></thead>\n<tbody>\n",
    );
    for r in &records {
        let e = &r["event"];
        let s = |k: &str| e[k].as_str().unwrap_or("");
        let kind = s("kind");
        let (step, detail) = match kind {
            "run_started" => (
                String::new(),
                format!(
                    "{} {} (trust {}, policy {})",
                    escape(e["request"]["kind"].as_str().unwrap_or("")),
                    escape(&cut(
                        &match e["request"]["file"].as_str() {
                            Some(f) => shown(f),
                            None => e["request"]["text"].as_str().unwrap_or("").to_string(),
                        },
                        120
                    )),
                    escape(s("trust")),
                    digest(e["policy_digest"].as_str()),
                ),
            ),
            "step" => {
                let mut d = escape(s("step_kind"));
                if !s("name").is_empty() && s("name") != s("id") {
                    d.push_str(&format!(" {}", escape(s("name"))));
                }
                if let Some(c) = e["exit_code"].as_i64() {
                    d.push_str(&format!(", exit {c}"));
                }
                if let Some(l) = e["limit"].as_str() {
                    d.push_str(&format!(", hit the {} limit", escape(l)));
                }
                if e["ok"] == false {
                    d.push_str(", <b>failed</b>");
                }
                (s("id").to_string(), d)
            }
            "gate_opened" => (
                s("step").to_string(),
                format!(
                    "{} gate: “{}”",
                    escape(s("gate")),
                    escape(&cut(s("prompt"), 120))
                ),
            ),
            "decision" => (
                String::new(),
                format!(
                    "{} by <b>{}</b> via {}",
                    escape(s("decision")),
                    escape(e["approver"].as_str().unwrap_or("(unnamed)")),
                    escape(s("door"))
                ),
            ),
            "call_intent" => (
                String::new(),
                format!(
                    "{} {} request {}",
                    escape(s("target")),
                    escape(s("name")),
                    digest(e["request_digest"].as_str())
                ),
            ),
            "call_answer" => (
                String::new(),
                format!(
                    "answer to {}{}",
                    digest(e["request_digest"].as_str()),
                    if e["replayed"] == true {
                        " (replayed)"
                    } else {
                        ""
                    }
                ),
            ),
            "error" => (s("step").to_string(), escape(&cut(s("message"), 300))),
            "run_ended" => (
                String::new(),
                format!(
                    "{}, output {}",
                    escape(s("status")),
                    digest(e["output_digest"].as_str())
                ),
            ),
            "run_resumed" => (String::new(), format!("via {}", escape(s("door")))),
            "capped" => (String::new(), "journal capped: later events omitted".into()),
            other => (String::new(), escape(other)),
        };
        let time = e["wall_ms"]
            .as_u64()
            .map(|ms| format!("{ms} ms"))
            .or_else(|| e["at"].as_str().map(escape))
            .unwrap_or_default();
        body.push_str(&format!(
            "<tr class=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            escape(kind),
            r["seq"].as_u64().unwrap_or(0),
            escape(kind),
            escape(&step),
            digest(e["component"].as_str()),
            digest(e["input_digest"].as_str()),
            digest(e["output_digest"].as_str().filter(|_| kind == "step")),
            e["fuel"].as_u64().map(|f| f.to_string()).unwrap_or_default(),
            time,
            detail,
        ));
    }
    body.push_str("</tbody></table>\n");
    shell(&format!("Run {id}"), &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn view_links_verify_expire_and_are_not_approval_links() {
        let dir = tempfile::tempdir().unwrap();
        let key = LinkKey::load_or_create(&crate::state::StateStore::new(dir.path())).unwrap();
        let exp = now_secs() + 60;
        let run = issue(&key, "acme", Some("r1"), exp);
        assert_eq!(
            verify(&key, &run),
            Ok(View {
                tenant: "acme".into(),
                run: Some("r1".into()),
                expires: exp
            })
        );
        assert_eq!(
            verify(&key, &issue(&key, "acme", None, exp)).unwrap().run,
            None
        );
        // Another tenant's name under the same tag: unknown.
        let (_, tag) = run.split_once('.').unwrap();
        let forged = URL_SAFE_NO_PAD.encode(format!("beta.r1.{exp}"));
        assert_eq!(
            verify(&key, &format!("{forged}.{tag}")),
            Err(LinkError::Unknown)
        );
        assert_eq!(
            verify(&key, &issue(&key, "acme", Some("r1"), now_secs() - 1)),
            Err(LinkError::Expired)
        );
        // An approval link is not a view link, nor the reverse.
        let approval = key.issue("acme", "r1", "0a1b2c3d", 60);
        assert_eq!(verify(&key, &approval), Err(LinkError::Unknown));
        assert_eq!(key.verify(&run), Err(LinkError::Unknown));
    }

    #[test]
    fn the_run_page_escapes_what_the_run_wrote() {
        let line = |seq: u64, event: &str| {
            format!("{{\"run\":\"r1\",\"seq\":{seq},\"prev\":\"x\",\"hash\":\"y\",\"event\":{event}}}\n")
        };
        let text = line(
            0,
            r#"{"kind":"step","id":"<s>","step_kind":"wasm","component":"abc","fuel":7,"wall_ms":3,"ok":true}"#,
        ) + &line(
            1,
            r#"{"kind":"gate_opened","gate":"approve","step":"g","prompt":"<script>x</script>","preview_digest":"p","plan_digest":"d"}"#,
        ) + &line(
            2,
            r#"{"kind":"decision","decision":"approve","approver":"<ann>","door":"serve"}"#,
        );
        let html = run_page("acme", "r1", None, &text, |n| n.to_string());
        assert!(!html.contains("<script>x"), "{html}");
        assert!(html.contains("&lt;script&gt;x"));
        assert!(html.contains("&lt;ann&gt;") && html.contains("&lt;s&gt;"));
        assert!(html.contains("DOES NOT VERIFY"), "{html}");
        assert!(html.contains("<td>7</td>"));
    }
}
