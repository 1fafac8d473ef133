//! Approval and input gates of workflow steps.
//!
//! The request shown to the human is built from the workflow file (prompt,
//! items, preview, identity), never from the gated step's own output: the
//! reference let a step's JSON override the prompt (spec §4.1 item 3).

use super::model::{Approval, InputSpec, Step};
use super::run::{resolve_stdin, Runner};
use super::template::{render, Style};
use crate::error::{Error, Result};
use crate::kernel::Context;
use crate::value::{to_js_json_pretty, Item};

/// Preview length limit (characters).
const PREVIEW_CHARS: usize = 2000;

/// What an approval gate asks.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalGate {
    pub prompt: String,
    pub items: Vec<Item>,
    pub preview: Option<String>,
    pub initiated_by: Option<String>,
    pub required_approver: Option<String>,
    pub require_different_approver: bool,
}

/// What an input gate asks.
#[derive(Debug, Clone, PartialEq)]
pub struct InputGate {
    pub prompt: String,
    pub schema: Item,
    pub defaults: Option<Item>,
    pub subject: Option<Item>,
}

fn env_flag(v: Option<&String>) -> bool {
    v.is_some_and(|s| {
        matches!(
            s.trim().to_ascii_lowercase().as_str(),
            "1" | "true" | "yes" | "y"
        )
    })
}

fn non_empty(v: Option<&String>) -> Option<String> {
    v.map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

/// Build the approval request of `step` (after it ran).
pub fn approval_gate(runner: &Runner, step: &Step, cfg: &Approval) -> Result<ApprovalGate> {
    let scope = runner.scope();
    let result = runner.results.get(&step.id);
    let prompt = cfg
        .prompt
        .as_ref()
        .filter(|p| !p.trim().is_empty())
        .map(|p| render(p, &scope, Style::Raw, None).text)
        .unwrap_or_else(|| format!("Approve {}?", step.id));
    let json = result.and_then(|r| r.get("json"));
    let items = match (&cfg.items, json) {
        (Some(items), _) => items.clone(),
        (None, Some(Item::Array(a))) => a.clone(),
        (None, Some(j)) => vec![j.clone()],
        (None, None) => Vec::new(),
    };
    let preview = match &cfg.preview {
        Some(p) => Some(render(p, &scope, Style::Raw, None).text),
        None => {
            let stdout = result
                .and_then(|r| r.get("stdout"))
                .and_then(Item::as_str)
                .unwrap_or_default();
            let text = if !stdout.is_empty() {
                stdout.trim().to_string()
            } else {
                json.map(to_js_json_pretty).unwrap_or_default()
            };
            Some(text.chars().take(PREVIEW_CHARS).collect::<String>()).filter(|s| !s.is_empty())
        }
    };
    let env = &runner.ctx.env;
    Ok(ApprovalGate {
        prompt,
        items,
        preview,
        initiated_by: cfg
            .initiated_by
            .clone()
            .or_else(|| non_empty(env.get("LOBSTER_APPROVAL_INITIATED_BY"))),
        required_approver: cfg
            .required_approver
            .clone()
            .or_else(|| non_empty(env.get("LOBSTER_APPROVAL_REQUIRED_APPROVER"))),
        require_different_approver: cfg
            .require_different_approver
            .unwrap_or_else(|| env_flag(env.get("LOBSTER_APPROVAL_REQUIRE_DIFFERENT_APPROVER"))),
    })
}

/// Build the input request of `step`: the subject is its `stdin`, else the
/// last completed step's json, response or stdout, else `null`.
pub fn input_gate(runner: &Runner, step: &Step, cfg: &InputSpec) -> Result<InputGate> {
    let subject = match &step.stdin {
        Some(raw) => resolve_stdin(Some(raw), &runner.scope())?,
        None => runner
            .last
            .as_ref()
            .and_then(|id| runner.results.get(id))
            .and_then(|r| {
                r.get("json")
                    .or_else(|| r.get("response"))
                    .or_else(|| r.get("stdout"))
                    .cloned()
            }),
    };
    // The reference always prints the key: `"subject": null` when there is none.
    let subject = Some(subject.unwrap_or(Item::Null));
    Ok(InputGate {
        prompt: render(&cfg.prompt, &runner.scope(), Style::Raw, None).text,
        schema: cfg.schema.clone(),
        defaults: cfg.defaults.clone(),
        subject,
    })
}

/// Check who approves against the gate's identity rules. `approver` is
/// `--approver`, else `LOBSTER_APPROVAL_APPROVED_BY`.
pub fn check_identity(step_id: &str, gate: &Identity, approver: Option<&str>) -> Result<()> {
    let needs = gate.required_approver.is_some()
        || (gate.require_different_approver && gate.initiated_by.is_some());
    if !needs {
        return Ok(());
    }
    let Some(actual) = approver.map(str::trim).filter(|s| !s.is_empty()) else {
        return Err(Error::parse(format!(
            "Workflow step {step_id} approval requires approver identity; set LOBSTER_APPROVAL_APPROVED_BY"
        ))
        .with_hint("or pass --approver NAME to lobster resume"));
    };
    if let Some(req) = &gate.required_approver {
        if req != actual {
            return Err(Error::parse(format!(
                "Workflow step {step_id} approval requires approver '{req}', got '{actual}'"
            )));
        }
    }
    if gate.require_different_approver {
        if let Some(init) = &gate.initiated_by {
            if init == actual {
                return Err(Error::parse(format!(
                    "Workflow step {step_id} approval must be granted by someone other than '{init}'"
                )));
            }
        }
    }
    Ok(())
}

/// The identity part of an approval gate (kept in the resume state).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Identity {
    pub initiated_by: Option<String>,
    pub required_approver: Option<String>,
    pub require_different_approver: bool,
}

impl From<&ApprovalGate> for Identity {
    fn from(g: &ApprovalGate) -> Self {
        Identity {
            initiated_by: g.initiated_by.clone(),
            required_approver: g.required_approver.clone(),
            require_different_approver: g.require_different_approver,
        }
    }
}

/// Ask at the terminal (human mode with a TTY): `<prompt> [y/N] `.
pub fn ask_approval(step_id: &str, gate: &ApprovalGate, ctx: &Context) -> Result<()> {
    // Who answers at the terminal is named by `lobster`'s own environment
    // (the operator's), never by a workflow's or a calling step's `env:`.
    let approver = non_empty(std::env::var("LOBSTER_APPROVAL_APPROVED_BY").ok().as_ref());
    check_identity(step_id, &gate.into(), approver.as_deref())?;
    // The plan (the gate's preview) or the items, then the question.
    let shown =
        crate::commands::interactive::approval_preview(&gate.items, gate.preview.as_deref());
    let answer = ask_line(&format!("{shown}{} [y/N] ", gate.prompt), ctx)?;
    if matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
        Ok(())
    } else {
        Err(Error::runtime("Not approved"))
    }
}

/// Ask at the terminal: `<prompt>\nEnter JSON response: `, validated.
pub fn ask_input(step_id: &str, gate: &InputGate, ctx: &Context) -> Result<Item> {
    let line = ask_line(&format!("{}\nEnter JSON response: ", gate.prompt), ctx)?;
    let value: Item = serde_json::from_str(&line)
        .map_err(|_| Error::parse("Input response must be valid JSON"))?;
    validate_response(step_id, &gate.schema, &value)?;
    Ok(value)
}

/// `Workflow input step <id> response failed schema validation at <path>: <msg>`.
pub fn validate_response(step_id: &str, schema: &Item, value: &Item) -> Result<()> {
    crate::schema::validate_response(
        schema,
        value,
        &format!("Workflow input step {step_id} response"),
    )
}

/// Write `prompt` to stdout and read one line from the terminal.
fn ask_line(prompt: &str, ctx: &Context) -> Result<String> {
    use std::io::{BufRead, Write};
    let _ = ctx;
    let mut out = std::io::stdout();
    out.write_all(prompt.as_bytes())?;
    out.flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    Ok(line.trim_end_matches(['\n', '\r']).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_rules() {
        let g = Identity {
            initiated_by: Some("alice".into()),
            required_approver: None,
            require_different_approver: true,
        };
        assert!(check_identity("s", &g, Some("bob")).is_ok());
        let e = check_identity("s", &g, Some("alice")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Workflow step s approval must be granted by someone other than 'alice'"
        );
        assert_eq!(e.kind(), "parse_error");
        assert!(check_identity("s", &g, None)
            .unwrap_err()
            .to_string()
            .contains("requires approver identity"));
        let g = Identity {
            required_approver: Some("carol".into()),
            ..Identity::default()
        };
        assert_eq!(
            check_identity("s", &g, Some("bob"))
                .unwrap_err()
                .to_string(),
            "Workflow step s approval requires approver 'carol', got 'bob'"
        );
        assert!(check_identity("s", &Identity::default(), None).is_ok());
    }
}
