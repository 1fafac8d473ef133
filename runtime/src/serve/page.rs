//! The approval page: server-rendered HTML, no JavaScript. Everything that
//! came from a run (prompt, items, capabilities) is escaped.

use serde_json::Value;

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

fn shell(title: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<meta name=\"referrer\" content=\"no-referrer\">\
<title>{}</title>\
<style>body{{font-family:system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;line-height:1.4}}\
pre{{background:#f4f4f4;padding:.75rem;overflow:auto;max-height:24rem}}\
button{{font-size:1.1rem;padding:.5rem 1.5rem;margin-right:1rem}}</style>\
</head><body>\n{body}\n</body></html>\n",
        escape(title)
    )
}

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
    /// What runs after the gate, one line each.
    pub capabilities: &'a [String],
    pub expires_at: &'a str,
    /// The signed-in approver deciding (`None`: the link alone decides).
    pub approver: Option<&'a str>,
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
        body.push_str(&format!(
            "<h2>What is approved</h2>\n<pre id=\"preview\">{}</pre>\n",
            escape(p)
        ));
    }
    body.push_str("<h2>What runs after the gate</h2>\n");
    if gate.capabilities.is_empty() {
        body.push_str("<p>Nothing with host effects is declared after this gate.</p>\n");
    } else {
        body.push_str("<ul id=\"capabilities\">\n");
        for c in gate.capabilities {
            body.push_str(&format!("<li>{}</li>\n", escape(c)));
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

/// The sign-in form an approver fills before deciding (`failed`: why the
/// last attempt was not accepted).
pub fn sign_in(link: &str, tenant: &str, run_id: &str, failed: Option<&str>) -> String {
    let mut body = String::new();
    body.push_str("<h1>Sign in to decide</h1>\n");
    body.push_str(&format!(
        "<p>Tenant <b>{}</b> asks one of its approvers to decide run <code>{}</code>. \
Sign in with your own approver name and password (or approver token) — not the agent's token.</p>\n",
        escape(tenant),
        escape(run_id)
    ));
    if let Some(why) = failed {
        body.push_str(&format!("<p id=\"error\"><b>{}</b></p>\n", escape(why)));
    }
    body.push_str(&format!(
        "<form method=\"post\" action=\"/a/{}/sign-in\">\n\
<p><label>Name <input type=\"text\" name=\"name\" autocomplete=\"username\" required></label></p>\n\
<p><label>Password or token <input type=\"password\" name=\"secret\" autocomplete=\"current-password\" required></label></p>\n\
<button type=\"submit\" name=\"action\" value=\"sign-in\">Sign in</button>\n\
</form>",
        escape(link)
    ));
    shell("Sign in to decide", &body)
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

/// A page saying why a link cannot be used.
pub fn refused(title: &str, why: &str) -> String {
    shell(
        title,
        &format!("<h1>{}</h1>\n<p>{}</p>", escape(title), escape(why)),
    )
}

/// The gated items of an approval request as pretty JSON (cut at 4000 characters).
pub fn preview_of(gate: &Value) -> Option<String> {
    let items = gate
        .get("items")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())?;
    let mut s = serde_json::to_string_pretty(items).unwrap_or_default();
    if s.chars().count() > 4000 {
        s = s.chars().take(4000).collect::<String>() + " …";
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

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
                capabilities: &caps,
                expires_at: "soon",
                approver: Some("<al>"),
            },
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
        assert!(decided(false, "r", None).contains("<h1>Denied</h1>"));
    }
}
