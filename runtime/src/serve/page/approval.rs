//! The approval page (the gate, what runs after it, the Approve and Deny
//! buttons) and the page after a decision.

use super::{cut, escape, shell};
use serde_json::Value;

/// What the page shows about a gate.
pub struct Gate<'a> {
    pub tenant: &'a str,
    pub run_id: &'a str,
    /// The workflow's name; `None` for a pipeline.
    pub workflow: Option<&'a str>,
    /// The gate's step (a pipeline: `stage N: …`); `None` when unknown.
    pub step: Option<&'a str>,
    pub prompt: &'a str,
    /// The gated items as JSON text.
    pub preview: Option<&'a str>,
    /// The gated items themselves (a table when they are all objects).
    pub items: &'a [Value],
    /// What runs after the gate, one line each (`stage N (name): what`).
    pub capabilities: &'a [String],
    pub expires_at: &'a str,
    /// The signed-in approver deciding (`None`: the link alone decides).
    pub approver: Option<&'a str>,
    /// A link to the run's page.
    pub run_page: Option<&'a str>,
}

/// Most rows and columns an items table shows.
const TABLE_ROWS: usize = 200;
const TABLE_COLUMNS: usize = 12;
/// Longest cell text shown.
const CELL_CHARS: usize = 200;

/// `items` as an HTML table when they are all JSON objects (columns: their
/// keys in first-seen order), else `None`.
pub fn items_table(rows: &[Value]) -> Option<String> {
    if rows.is_empty() {
        return None;
    }
    let mut columns: Vec<&str> = Vec::new();
    for row in rows {
        for key in row.as_object()?.keys() {
            if !columns.contains(&key.as_str()) && columns.len() < TABLE_COLUMNS {
                columns.push(key);
            }
        }
    }
    let mut out = String::from("<table id=\"items\">\n<thead><tr>");
    for c in &columns {
        out.push_str(&format!("<th>{}</th>", escape(c)));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in rows.iter().take(TABLE_ROWS) {
        out.push_str("<tr>");
        for c in &columns {
            let cell = match row.get(*c) {
                None => String::new(),
                Some(Value::String(s)) => s.clone(),
                Some(v) => v.to_string(),
            };
            out.push_str(&format!("<td>{}</td>", escape(&cut(&cell, CELL_CHARS))));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table>\n");
    if rows.len() > TABLE_ROWS {
        out.push_str(&format!(
            "<p>{} more items are in the raw JSON below.</p>\n",
            rows.len() - TABLE_ROWS
        ));
    }
    Some(out)
}

/// The capability lines grouped by the step they name, in order: a
/// pipeline's `stage N (name): what` under `stage N (name)`, a workflow's
/// `step ID: what` and `step ID (stage): what` under `step ID` (the latter
/// as `stage: what`).
pub fn by_step(lines: &[String]) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for line in lines {
        let (step, what) = match line.split_once(": ") {
            Some((label, what)) if label.starts_with("step ") => match label.split_once(" (") {
                Some((step, stage)) => (
                    step.to_string(),
                    format!("{}: {what}", stage.trim_end_matches(')')),
                ),
                None => (label.to_string(), what.to_string()),
            },
            Some((label, what)) if label.starts_with("stage ") => {
                (label.to_string(), what.to_string())
            }
            _ => (String::new(), line.clone()),
        };
        match out.last_mut() {
            Some((last, whats)) if *last == step => whats.push(what),
            _ => out.push((step, vec![what])),
        }
    }
    out
}

/// The page with the Approve and Deny buttons for `link`.
pub fn approval(link: &str, gate: &Gate) -> String {
    let mut body = String::new();
    body.push_str("<h1>Approval needed</h1>\n");
    let what = match gate.workflow {
        Some(w) => format!("Workflow <b id=\"workflow\">{}</b>", escape(w)),
        None => "A pipeline".to_string(),
    };
    let step = gate
        .step
        .map(|s| format!(", waiting at step <b id=\"step\">{}</b>", escape(s)))
        .unwrap_or_default();
    body.push_str(&format!("<p>{what}{step}.</p>\n"));
    body.push_str(&format!(
        "<p>Tenant <b>{}</b>, run <code>{}</code>.</p>\n",
        escape(gate.tenant),
        escape(gate.run_id)
    ));
    if let Some(href) = gate.run_page {
        body.push_str(&format!(
            "<p><a id=\"run-page\" href=\"{}\">The run so far</a> (its steps, digests and time).</p>\n",
            escape(href)
        ));
    }
    body.push_str(&format!(
        "<h2>Prompt</h2>\n<p id=\"prompt\">{}</p>\n",
        escape(gate.prompt)
    ));
    if let Some(a) = gate.approver {
        body.push_str(&format!(
            "<p>Signed in as <b id=\"approver\">{}</b>; your name is recorded with the decision.</p>\n",
            escape(a)
        ));
    }
    if let Some(p) = gate.preview {
        body.push_str("<h2>What is approved</h2>\n");
        match items_table(gate.items) {
            Some(table) => {
                body.push_str(&table);
                body.push_str(&format!(
                    "<details><summary>Raw JSON</summary><pre id=\"preview\">{}</pre></details>\n",
                    escape(p)
                ));
            }
            None => body.push_str(&format!("<pre id=\"preview\">{}</pre>\n", escape(p))),
        }
    }
    body.push_str("<h2>What runs after the gate</h2>\n");
    if gate.capabilities.is_empty() {
        body.push_str("<p>Nothing with host effects is declared after this gate.</p>\n");
    } else {
        body.push_str("<ul id=\"capabilities\">\n");
        for (step, whats) in by_step(gate.capabilities) {
            if step.is_empty() {
                for w in whats {
                    body.push_str(&format!("<li>{}</li>\n", escape(&w)));
                }
                continue;
            }
            body.push_str(&format!("<li><b>{}</b><ul>", escape(&step)));
            for w in whats {
                body.push_str(&format!("<li>{}</li>", escape(&w)));
            }
            body.push_str("</ul></li>\n");
        }
        body.push_str("</ul>\n");
    }
    body.push_str(&format!(
        "<form method=\"post\" action=\"/a/{}\">\n\
<button type=\"submit\" name=\"decision\" value=\"approve\">Approve</button>\n\
<button type=\"submit\" name=\"decision\" value=\"deny\">Deny</button>\n\
</form>\n<p><small>This link works once and expires at {} (UTC).</small></p>",
        escape(link),
        escape(gate.expires_at)
    ));
    shell("Approval needed", &body)
}

/// The page after a decision: `<h1>Approved</h1>` or `<h1>Denied</h1>`, then
/// how the run went on.
pub fn decided(approved: bool, run_id: &str, status: Option<&str>) -> String {
    let word = if approved { "Approved" } else { "Denied" };
    let after = match status {
        Some(s) => format!("The run is now <b id=\"status\">{}</b>.", escape(s)),
        None => "The run is still going on.".to_string(),
    };
    shell(
        word,
        &format!(
            "<h1>{word}</h1>\n<p>Run <code>{}</code>. {after}</p>\n<p>You can close this page.</p>",
            escape(run_id)
        ),
    )
}

/// What a gate's page and list entry show as its preview: the gate's own
/// (the plan) when it has one, else its items ([`preview_of`]).
pub fn gate_preview(gate: &crate::state::AskedApproval) -> Option<String> {
    gate.preview
        .clone()
        .filter(|p| !p.is_empty())
        .or_else(|| preview_of(&gate.items))
}

/// The gated items of an approval request as pretty JSON (cut at 4000 characters).
pub fn preview_of(items: &[Value]) -> Option<String> {
    if items.is_empty() {
        return None;
    }
    let mut s = serde_json::to_string_pretty(items).unwrap_or_default();
    if s.chars().count() > 4000 {
        s = s.chars().take(4000).collect::<String>() + " …";
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serve::page::sign_in;

    #[test]
    fn everything_from_the_run_is_escaped() {
        let caps = vec!["<img src=x onerror=alert(1)>".to_string()];
        let html = approval(
            "abc.def",
            &Gate {
                tenant: "acme",
                run_id: "r",
                workflow: Some("<i>wf</i>"),
                step: Some("<b>gate</b>"),
                prompt: "<script>alert('x')</script>",
                preview: Some("[\"</pre><b>\"]"),
                items: &[],
                capabilities: &caps,
                expires_at: "soon",
                approver: Some("<al>"),
                run_page: Some("/r/\"><script>"),
            },
        );
        assert!(
            html.contains("href=\"/r/&quot;&gt;&lt;script&gt;\""),
            "{html}"
        );
        assert!(!html.contains("<script>alert"), "{html}");
        assert!(html.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"));
        assert!(html.contains("&lt;/pre&gt;&lt;b&gt;"));
        assert!(!html.contains("<img"));
        assert!(html.contains(
            "Workflow <b id=\"workflow\">&lt;i&gt;wf&lt;/i&gt;</b>, waiting at step <b id=\"step\">&lt;b&gt;gate&lt;/b&gt;</b>."
        ));
        assert!(html.contains("<form method=\"post\" action=\"/a/abc.def\">"));
        assert!(html.contains(
            "<button type=\"submit\" name=\"decision\" value=\"approve\">Approve</button>"
        ));
        assert!(
            html.contains("<button type=\"submit\" name=\"decision\" value=\"deny\">Deny</button>")
        );
        assert!(html.contains("Signed in as <b id=\"approver\">&lt;al&gt;</b>"));
        let s = sign_in("l.t", "<t>", "r", Some("<no>"));
        assert!(
            s.contains("<form method=\"post\" action=\"/a/l.t/sign-in\">"),
            "{s}"
        );
        assert!(s.contains("&lt;t&gt;") && s.contains("&lt;no&gt;") && !s.contains("<script"));
        assert!(decided(true, "r", Some("ok")).contains("<h1>Approved</h1>"));
        let items = [
            serde_json::json!({"to": "<b>a</b>", "n": 1}),
            serde_json::json!({"to": "b", "extra": [1]}),
        ];
        let table = items_table(&items).unwrap();
        assert!(
            table.contains("<th>to</th><th>n</th><th>extra</th>"),
            "{table}"
        );
        assert!(
            table.contains("<td>&lt;b&gt;a&lt;/b&gt;</td><td>1</td><td></td>"),
            "{table}"
        );
        assert!(table.contains("<td>[1]</td>"), "{table}");
        assert!(items_table(&[serde_json::json!({"a": 1}), serde_json::json!(2)]).is_none());
        assert!(items_table(&[]).is_none());
        let caps = vec![
            "stage 3 (send): runs host processes".to_string(),
            "stage 3 (send): write access to /mail".to_string(),
            "stage 4 (x): calls a model".to_string(),
        ];
        let grouped = by_step(&caps);
        assert_eq!(grouped.len(), 2);
        assert_eq!(grouped[0].0, "stage 3 (send)");
        assert_eq!(
            grouped[0].1,
            ["runs host processes", "write access to /mail"]
        );
        let caps = vec![
            "step send: runs a host shell command".to_string(),
            "step send (exec): runs host processes".to_string(),
            "step log: within its permissions: none".to_string(),
        ];
        let grouped = by_step(&caps);
        assert_eq!(grouped[0].0, "step send");
        assert_eq!(
            grouped[0].1,
            ["runs a host shell command", "exec: runs host processes"]
        );
        assert_eq!(
            grouped[1],
            (
                "step log".to_string(),
                vec!["within its permissions: none".to_string()]
            )
        );
        assert!(decided(false, "r", None).contains("<h1>Denied</h1>"));
    }
}
