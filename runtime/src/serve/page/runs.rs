//! The run list page and one run's page (its timeline from its journal,
//! the gates and who decided them, whether the chain verifies).

use super::{cut, escape, shell};
use crate::journal::shown::shown_records;
use crate::journal::verify::verify_text;
use crate::journal::Event;
use crate::state::journal::RunSummary;

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
    let records = shown_records(text);
    // The gates and who decided them.
    let mut gates = String::new();
    for (i, r) in records.iter().enumerate() {
        let Some(Event::GateOpened(g)) = &r.event else {
            continue;
        };
        let decided = records[i + 1..]
            .iter()
            .filter_map(|r| r.event.as_ref())
            .take_while(|e| !matches!(e, Event::GateOpened(_)))
            .find_map(|e| match e {
                Event::Decision(d) => Some(d),
                _ => None,
            });
        let who = match decided {
            Some(d) => format!(
                "<b>{}</b> by <b class=\"approver\">{}</b> via {}",
                escape(&d.decision),
                escape(d.who()),
                escape(&d.door),
            ),
            None => "not decided yet".into(),
        };
        gates.push_str(&format!(
            "<li>{} at step <b>{}</b>: “{}” — {}; plan {}</li>\n",
            escape(&g.gate),
            escape(&g.step),
            escape(&cut(&g.prompt, 300)),
            who,
            digest(Some(&g.plan_digest)),
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
        let row = match &r.event {
            Some(e) => row_of(e, &shown),
            None => Row {
                detail: "an event this version does not read".into(),
                ..Row::default()
            },
        };
        body.push_str(&format!(
            "<tr class=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            escape(&r.kind),
            r.seq,
            escape(&r.kind),
            escape(row.step),
            digest(row.component),
            digest(row.input),
            digest(row.output),
            row.fuel.map(|f| f.to_string()).unwrap_or_default(),
            escape(&row.time),
            row.detail,
        ));
    }
    body.push_str("</tbody></table>\n");
    shell(&format!("Run {id}"), &body)
}

/// One timeline row's cells but its place and kind (`detail` is HTML).
#[derive(Default)]
struct Row<'a> {
    step: &'a str,
    component: Option<&'a str>,
    input: Option<&'a str>,
    output: Option<&'a str>,
    fuel: Option<u64>,
    time: String,
    detail: String,
}

/// The timeline row of `event`; `shown` names a workflow file.
fn row_of<'a>(event: &'a Event, shown: &impl Fn(&str) -> String) -> Row<'a> {
    match event {
        Event::RunStarted(s) => Row {
            time: s.at.clone(),
            detail: format!(
                "{} {} (trust {}, policy {})",
                escape(&s.request.kind),
                escape(&cut(
                    &match &s.request.file {
                        Some(f) => shown(f),
                        None => s.request.text.clone(),
                    },
                    120
                )),
                escape(&s.trust),
                digest(Some(&s.policy_digest)),
            ),
            ..Row::default()
        },
        Event::Step(s) => {
            let mut d = escape(&s.step_kind);
            if !s.name.is_empty() && s.name != s.id {
                d.push_str(&format!(" {}", escape(&s.name)));
            }
            if let Some(w) = &s.within {
                d.push_str(&format!(" in step {}", escape(w)));
            }
            if let Some(c) = s.exit_code {
                d.push_str(&format!(", exit {c}"));
            }
            if let Some(l) = &s.limit {
                d.push_str(&format!(", hit the {} limit", escape(l)));
            }
            if !s.ok {
                d.push_str(", <b>failed</b>");
            }
            Row {
                step: &s.id,
                component: s.component.as_deref(),
                input: s.input_digest.as_deref(),
                output: s.output_digest.as_deref(),
                fuel: s.fuel,
                time: format!("{} ms", s.wall_ms),
                detail: d,
            }
        }
        Event::GateOpened(g) => Row {
            step: &g.step,
            detail: format!(
                "{} gate: “{}”",
                escape(&g.gate),
                escape(&cut(&g.prompt, 120))
            ),
            ..Row::default()
        },
        Event::Decision(d) => Row {
            detail: format!(
                "{} by <b>{}</b> via {}",
                escape(&d.decision),
                escape(d.who()),
                escape(&d.door)
            ),
            ..Row::default()
        },
        Event::CallIntent(c) => Row {
            detail: format!(
                "{} {} request {}",
                escape(&c.target),
                escape(&c.name),
                digest(Some(&c.request_digest))
            ),
            ..Row::default()
        },
        Event::CallAnswer(a) => Row {
            detail: format!(
                "answer to {}{}",
                digest(Some(&a.request_digest)),
                if a.replayed { " (replayed)" } else { "" }
            ),
            ..Row::default()
        },
        Event::Error(e) => Row {
            step: &e.step,
            detail: escape(&cut(&e.message, 300)),
            ..Row::default()
        },
        Event::RunEnded(e) => Row {
            time: format!("{} ms", e.wall_ms),
            detail: format!(
                "{}, output {}",
                escape(&e.status),
                digest(e.output_digest.as_deref())
            ),
            ..Row::default()
        },
        Event::RunResumed(r) => Row {
            time: r.at.clone(),
            detail: format!("via {}", escape(&r.door)),
            ..Row::default()
        },
        Event::Capped(_) => Row {
            detail: "journal capped: later events omitted".into(),
            ..Row::default()
        },
    }
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
