//! The run list page and one run's page (its timeline from its journal,
//! the gates and who decided them, whether the chain verifies).

use super::{cut, escape, shell};
use crate::journal::verify::verify_text;
use crate::state::journal::RunSummary;
use serde_json::Value;

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
/// names a workflow file for the page ([`crate::app::Catalog::shown_name`]).
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
                escape(crate::journal::decided_by(d)),
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
                if let Some(w) = e["within"].as_str() {
                    d.push_str(&format!(" in step {}", escape(w)));
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
                    escape(crate::journal::decided_by(e)),
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

    /// A decision without an approver's name shows who the door knew
    /// decided (a tenant's agent), and `(unnamed)` only when the journal
    /// says nothing.
    #[test]
    fn the_run_page_names_who_decided_without_an_approver() {
        let line = |seq: u64, event: &str| {
            format!("{{\"run\":\"r1\",\"seq\":{seq},\"prev\":\"x\",\"hash\":\"y\",\"event\":{event}}}\n")
        };
        let gate = r#"{"kind":"gate_opened","gate":"approval","step":"g","prompt":"ok?","preview_digest":"p","plan_digest":"d"}"#;
        let agent = line(0, gate)
            + &line(
                1,
                r#"{"kind":"decision","decision":"approve","decided_by":"tenant acme's agent","door":"serve"}"#,
            );
        let html = run_page("acme", "r1", None, &agent, |n| n.to_string());
        assert!(
            html.contains("by <b class=\"approver\">tenant acme&#39;s agent</b> via serve"),
            "{html}"
        );
        let old = line(0, gate)
            + &line(
                1,
                r#"{"kind":"decision","decision":"approve","door":"serve"}"#,
            );
        let html = run_page("acme", "r1", None, &old, |n| n.to_string());
        assert!(html.contains("(unnamed)"), "{html}");
    }
}
