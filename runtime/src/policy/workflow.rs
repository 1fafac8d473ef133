//! The operator policy over a workflow file, before any of its steps runs:
//! under `untrusted`, host `run:`/`command:` steps and pipeline steps whose
//! stages run host processes (`exec`) are refused, in the file and in every
//! sub-workflow named by a literal path; grants and limits are checked as
//! for pipelines. Every excess is named, with `file:line:col`.

use super::enforce::run_excesses;
use crate::error::{Error, Result};
use crate::executor::Context;
use crate::workflow::model::{Action, Workflow};
use std::path::PathBuf;

/// Refuse the workflow `wf` when the context's policy forbids any part of it.
pub fn check_workflow(wf: &Workflow, ctx: &Context) -> Result<()> {
    let mut out = Vec::new();
    if ctx.policy.untrusted() {
        let mut seen = Vec::new();
        walk(wf, ctx, &mut seen, &mut out);
    }
    out.extend(run_excesses(&ctx.policy, ctx));
    if out.is_empty() {
        return Ok(());
    }
    Err(
        Error::runtime(format!("policy refuses this run: {}", out.join("; ")))
            .with_hint("nothing ran; ask the operator to widen the policy or change the workflow"),
    )
}

fn walk(wf: &Workflow, ctx: &Context, seen: &mut Vec<PathBuf>, out: &mut Vec<String>) {
    if seen.contains(&wf.source.path) {
        return;
    }
    seen.push(wf.source.path.clone());
    for step in &wf.steps {
        let at = format!("{}:{}:{}", wf.source.shown, step.pos.line, step.pos.col);
        let mut actions: Vec<(&str, &Action)> = vec![(&step.id, &step.action)];
        match &step.action {
            Action::Parallel(p) => {
                actions.extend(p.branches.iter().map(|b| (b.id.as_str(), &b.action)))
            }
            Action::ForEach(f) => {
                actions.extend(f.steps.iter().map(|b| (b.id.as_str(), &b.action)))
            }
            _ => {}
        }
        for (id, action) in actions {
            action_excesses(id, action, &at, wf, ctx, seen, out);
        }
    }
}

fn action_excesses(
    id: &str,
    action: &Action,
    at: &str,
    wf: &Workflow,
    ctx: &Context,
    seen: &mut Vec<PathBuf>,
    out: &mut Vec<String>,
) {
    match action {
        Action::Shell(_) => out.push(format!(
            "{at}: step {id} runs a host shell command, which the untrusted policy forbids"
        )),
        Action::Pipeline(text) => {
            // Templated text is checked again when it runs (executor::plan).
            let Ok(p) = crate::dsl::parse(text) else {
                return;
            };
            for (i, stage) in p.stages.iter().enumerate() {
                let exec = ctx
                    .registry
                    .get(&stage.name)
                    .is_some_and(|c| c.signature().side_effects.contains(&"local_exec"));
                if exec {
                    out.push(format!(
                        "{at}: step {id} stage {} ({}) runs host processes, which the untrusted policy forbids",
                        i + 1,
                        stage.name
                    ));
                }
            }
        }
        Action::Workflow { path, .. } if !path.contains('$') => {
            let full = crate::workflow::steps::compose::resolve_path(&wf.source.path, path);
            if let Ok(child) = crate::workflow::load_workflow(&full, Some(&ctx.registry)) {
                walk(&child, ctx, seen, out);
            }
        }
        _ => {}
    }
}
