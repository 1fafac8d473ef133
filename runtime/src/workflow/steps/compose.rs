//! `workflow:` steps: run another workflow file as one step. Paths are
//! relative to the calling file; a file already being executed is a cycle.

use crate::error::{Error, Result};
use crate::kernel::Context;
use crate::value::{to_js_json, Item};
use crate::workflow::model::Step;
use crate::workflow::run::{derive, Runner, Stop};
use crate::workflow::template::{render, Style};
use serde_json::{json, Map};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Resolve a `workflow:` path against the calling file's directory.
pub fn resolve_path(parent: &Path, path: &str) -> PathBuf {
    let base = parent.parent().unwrap_or(Path::new("/"));
    base.join(path)
}

/// Run the sub-workflow of `step`.
pub fn run(
    runner: &mut Runner,
    step: &Step,
    path: &str,
    args: &Map<String, Item>,
    env: BTreeMap<String, String>,
    cwd: PathBuf,
    ctx: &Context,
) -> Result<Item> {
    let scope = runner.scope();
    let rendered = render(path, &scope, Style::Raw, None).text;
    let full = resolve_path(&runner.wf.source.path, &rendered);
    // The authority opens the file now, as the run really loads it (beneath
    // the run's roots when confined, read from that handle): a templated
    // path, a step's output or a file rewritten by an earlier step is
    // walked by the same rules as the top file. Toward a tenant the path
    // is named as written, and missing or outside get one answer.
    let authority = ctx.authority();
    let tenant = authority.confinement().tenant;
    let named = || {
        if tenant {
            rendered.clone()
        } else {
            full.display().to_string()
        }
    };
    let child = crate::workflow::open_sub_workflow(&full, Some(&ctx.registry), authority, |r| {
        Error::runtime(format!(
            "Workflow step {} workflow file {} {r}",
            step.id,
            named()
        ))
    })?
    .ok_or_else(|| {
        Error::runtime(format!(
            "Workflow step {} workflow file not found: {}",
            step.id,
            full.display()
        ))
    })?;
    let real = child.source.path.clone();
    if runner.stack.contains(&real) {
        return Err(Error::runtime(format!(
            "Workflow step {} creates a cycle: {} is already being executed",
            step.id,
            authority.shown(&real)
        )));
    }
    let child = Arc::new(child);
    crate::workflow::policy::check_sub_workflow(&child, ctx).map_err(|e| {
        e.context(&format!(
            "Workflow step {} sub-workflow {rendered}: ",
            step.id
        ))
    })?;
    let mut given = Map::new();
    for (k, v) in args {
        given.insert(
            k.clone(),
            match v {
                Item::String(s) => Item::String(render(s, &scope, Style::Raw, None).text),
                other => other.clone(),
            },
        );
    }
    let child_args = crate::workflow::args::resolve(&child, &given)?;
    // The sub-workflow's own `permissions:` narrow what it gets further
    // (against the run's directory, where the grants are relative to).
    let narrowed = crate::workflow::policy::permissions_context(&child, ctx);
    let sub_ctx = derive(narrowed.as_ref().unwrap_or(ctx), Some(env), Some(cwd), None);
    let mut sub = Runner::new(child.clone(), child_args, &sub_ctx);
    sub.stack = runner.stack.clone();
    sub.stack.push(real.clone());
    let stop = sub.run_from(0);
    runner.files.extend(sub.files.iter().cloned());
    let kind = match stop? {
        Stop::Done => None,
        Stop::Approval { .. } => Some("approval"),
        Stop::Input { .. } | Stop::PipelineInput { .. } => Some("input"),
    };
    if let Some(kind) = kind {
        return Err(Error::runtime(format!(
            "Workflow step {} sub-workflow halted for {kind}. Sub-workflow approval/input gates are not supported in composition.",
            step.id
        )));
    }
    let out = sub.output();
    let json = if out.len() == 1 {
        out[0].clone()
    } else {
        Item::Array(out)
    };
    let stdout = match &json {
        Item::String(s) => s.clone(),
        other => to_js_json(other),
    };
    Ok(json!({"id": step.id, "stdout": stdout, "json": json}))
}
