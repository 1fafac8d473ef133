//! `lobster run --dry-run` for workflow files: the validated plan on stderr
//! (steps, resolved commands with `${arg}` and `$x.approved` substituted,
//! sub-workflow and component digests, conditions, retries, gates).
//! Nothing runs.

use super::condition::Condition;
use super::model::{Action, Step};
use super::template::{self, Piece};
use crate::error::Result;
use crate::kernel::Context;
use crate::value::{js_to_string, Item};
use serde_json::Map;
use std::path::Path;

/// The plan text for the workflow at `path`.
pub fn plan(path: &Path, args_json: Option<&str>, ctx: &Context) -> Result<String> {
    let given = super::args::parse_args_json(args_json, "run --args-json")?;
    let (wf, mut files) = super::load_plan_under(path, Some(&ctx.registry), Some(ctx.authority()))?;
    crate::workflow::policy::check_workflow(&wf, ctx)?;
    // The same narrowing as a real run, so the same plan problems show.
    let narrowed = crate::workflow::policy::permissions_context(&wf, ctx);
    let ctx = narrowed.as_ref().unwrap_or(ctx);
    super::steps::wasm::prepare(&wf, ctx)?;
    super::add_components(&mut files, ctx);
    let args = super::args::resolve(&wf, &given)?;
    let digest_of = |p: &Path| {
        let real = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        files
            .iter()
            .find(|(f, _)| *f == real)
            .map(|(_, d)| format!("  (blake3 {})", &d[..16]))
            .unwrap_or_default()
    };
    // Placeholder results: gates approved, inputs pending.
    let mut approved: Map<String, Item> = Map::new();
    let n = wf.steps.len();
    let mut out = vec![
        format!(
            "[DRY RUN] Would execute {n} step{}:{}",
            if n == 1 { "" } else { "s" },
            ""
        ),
        format!(
            "  workflow: {}{}",
            wf.source.shown,
            digest_of(&wf.source.path)
        ),
    ];
    if let Some(p) = &wf.permissions {
        out.push(format!("  permissions: {}", p.summary()));
    }
    out.push(String::new());
    for (i, step) in wf.steps.iter().enumerate() {
        let skipped = matches!(&step.when, Some(c) if evaluable(c) && !eval(c, &approved));
        let tag = if skipped {
            "[skipped — condition: false]".to_string()
        } else if step.input.is_some() {
            "[input]".into()
        } else {
            format!("[{}]", step.action.kind())
        };
        out.push(format!("  {}. {}  {tag}", i + 1, step.id));
        let show = |s: &str| substitute(s, &args, &approved);
        let mut d: Vec<String> = Vec::new();
        match &step.action {
            Action::None => {}
            Action::Shell(c) => d.push(format!("run: {}", show(c))),
            Action::Pipeline(p) => d.push(format!("pipeline: {}", show(p))),
            Action::Wasm { uses, .. } => {
                let full = super::steps::compose::resolve_path(&wf.source.path, uses);
                d.push(format!("uses: {}{}", show(uses), digest_of(&full)));
            }
            Action::Workflow { path, args: wa, .. } => {
                let full = super::steps::compose::resolve_path(&wf.source.path, &show(path));
                d.push(format!("workflow: {}{}", show(path), digest_of(&full)));
                if !wa.is_empty() {
                    d.push(format!(
                        "args: {}",
                        wa.keys().cloned().collect::<Vec<_>>().join(", ")
                    ));
                }
            }
            Action::Parallel(p) => {
                d.push(format!("wait: {}", if p.wait_any { "any" } else { "all" }));
                if let Some(t) = p.timeout_ms {
                    d.push(format!("timeout: {t}ms"));
                }
                for b in &p.branches {
                    match &b.action {
                        Action::Pipeline(t) => {
                            d.push(format!("branch {}: [pipeline] {}", b.id, show(t)))
                        }
                        Action::Shell(t) => d.push(format!("branch {}: [shell] {}", b.id, show(t))),
                        _ => {}
                    }
                }
            }
            Action::ForEach(f) => {
                d.push(format!(
                    "for_each: {}  [output unknown at plan time]",
                    f.expr
                ));
                for s in &f.steps {
                    match &s.action {
                        Action::Pipeline(t) => {
                            d.push(format!("step {}: [pipeline] {}", s.id, show(t)))
                        }
                        Action::Shell(t) => d.push(format!("step {}: [shell] {}", s.id, show(t))),
                        _ => {}
                    }
                }
            }
        }
        if let Some(p) = &step.permissions {
            d.push(format!("permissions: {}", p.summary()));
        }
        if let Some(c) = &step.when {
            d.push(format!("when: {}", c.text()));
        }
        if let Some(Item::String(s)) = &step.stdin {
            let note = if template::exact_ref(s).is_some() {
                "[output unknown at plan time]"
            } else {
                "[contains step output refs — unknown at plan time]"
            };
            d.push(format!("stdin: {s}  {note}"));
        }
        if let Some(t) = step.timeout_ms {
            d.push(format!("timeout: {t}ms"));
        }
        if step.on_error != super::model::OnError::Stop {
            d.push(format!("on_error: {}", step.on_error.name()));
        }
        if step.retry.max > 1 {
            d.push(format!(
                "retry: up to {} attempts, {} backoff (base: {}ms{})",
                step.retry.max,
                if step.retry.exponential {
                    "exponential"
                } else {
                    "fixed"
                },
                step.retry.delay_ms,
                if step.retry.jitter { ", jitter" } else { "" }
            ));
        }
        if let Some(a) = &step.approval {
            d.push("[approval required]".into());
            d.push(format!(
                "prompt: {}",
                a.prompt
                    .as_deref()
                    .map_or_else(|| format!("Approve {}?", step.id), show)
            ));
            if let Some(r) = &a.required_approver {
                d.push(format!("required approver: {r}"));
            }
            if a.require_different_approver == Some(true) {
                d.push("approver must differ from initiator".into());
            }
            approved.insert(
                step.id.clone(),
                serde_json::json!({"id": step.id, "approved": true}),
            );
        }
        if let Some(inp) = &step.input {
            d.push("[input required]".into());
            d.push(format!("prompt: {}", inp.prompt));
            approved.insert(
                step.id.clone(),
                serde_json::json!({"id": step.id, "response": {"pending": true}}),
            );
        }
        if skipped {
            approved.insert(
                step.id.clone(),
                serde_json::json!({"id": step.id, "skipped": true}),
            );
        }
        out.extend(d.into_iter().map(|l| format!("     {l}")));
        let _: &Step = step;
    }
    out.push(String::new());
    Ok(out.join("\n"))
}

/// Conditions that only read gates (`approved`, `skipped`) are decided now.
fn evaluable(c: &Condition) -> bool {
    c.refs()
        .iter()
        .all(|(_, p)| p == "approved" || p == "skipped")
}

fn eval(c: &Condition, placeholders: &Map<String, Item>) -> bool {
    let args = Map::new();
    let scope = template::MapScope {
        args: &args,
        results: placeholders,
        extra: None,
    };
    c.eval(&scope).unwrap_or(true)
}

/// `${arg}` and `$x.approved` substituted; other refs stay visible.
fn substitute(s: &str, args: &Map<String, Item>, placeholders: &Map<String, Item>) -> String {
    template::pieces(s)
        .into_iter()
        .map(|p| match p {
            Piece::Lit(l) => l,
            Piece::Arg { name, raw } => args.get(&name).map_or(raw, |v| js_to_string(Some(v))),
            Piece::Ref { id, path, raw } if path == "approved" => {
                if placeholders
                    .get(&id)
                    .and_then(|r| r.get("approved"))
                    .is_some()
                {
                    "true".into()
                } else {
                    raw
                }
            }
            Piece::Ref { raw, .. } => raw,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn substitutes_args_and_approvals_only() {
        let args = json!({"n": 3}).as_object().unwrap().clone();
        let gates = json!({"g": {"id": "g", "approved": true}})
            .as_object()
            .unwrap()
            .clone();
        assert_eq!(
            substitute(
                "x ${n} ${m} $g.approved $g.stdout $h.approved $HOME",
                &args,
                &gates
            ),
            "x 3 ${m} true $g.stdout $h.approved $HOME"
        );
        let c = Condition::from_value(&json!("$g.approved && !$h.skipped")).unwrap();
        assert!(evaluable(&c));
        assert!(!eval(
            &Condition::from_value(&json!("!$g.approved")).unwrap(),
            &gates
        ));
        assert!(!evaluable(
            &Condition::from_value(&json!("$g.json == 1")).unwrap()
        ));
    }
}
