//! Workflow files: a YAML/JSON list of steps (shell, pipeline, sub-workflow,
//! parallel, for_each, WebAssembly) with args, conditions, retries, error
//! policies and approval/input gates that pause the run durably.
//!
//! - [`load`] reads a file with positions; [`validate`] turns it into a
//!   [`model::Workflow`] (every problem as `<file>:<line>:<col>: <message>`);
//! - [`args`], [`template`], [`condition`]: inputs, substitution, `when`;
//! - [`run`] executes steps ([`steps`] has one file per action kind);
//! - [`gate`] builds approval/input requests; [`state`] saves a pause and
//!   [`resume`] continues it after re-verifying every file digest;
//! - [`graph`] and [`dry_run`] describe a workflow without running it.

pub mod args;
pub mod condition;
pub mod dry_run;
pub mod gate;
pub mod graph;
pub mod load;
pub mod model;
pub mod policy;
pub mod resume;
pub mod run;
pub mod schema;
pub mod state;
pub mod steps;
pub mod template;
pub mod validate;

use crate::error::{Error, Result};
use crate::kernel::{Context, Registry};
use crate::resume::Paused;
use model::{Action, Workflow};
use run::{FileDigests, Runner};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Load and validate one workflow file (no sub-workflows).
pub fn load_workflow(path: &Path, registry: Option<&Registry>) -> Result<Workflow> {
    let (source, doc) = load::load(path)?;
    validate::validate(source, &doc, registry)
}

/// Load `path` and every sub-workflow named by a literal `workflow:` path
/// (recursively), rejecting cycles. Returns the root and the digests of all
/// files involved (root first), including `uses:` components that exist.
pub fn load_plan(path: &Path, registry: Option<&Registry>) -> Result<(Arc<Workflow>, FileDigests)> {
    load_plan_under(path, registry, None)
}

/// [`load_plan`] for a run: every literal sub-workflow file is judged by
/// `authority` before it is read (see [`crate::policy::Request::WorkflowFile`]).
pub fn load_plan_under(
    path: &Path,
    registry: Option<&Registry>,
    authority: Option<&crate::kernel::Authority>,
) -> Result<(Arc<Workflow>, FileDigests)> {
    let root = Arc::new(load_workflow(path, registry)?);
    let mut files = vec![(root.source.path.clone(), root.source.digest.clone())];
    let mut stack = vec![root.source.path.clone()];
    collect_static(&root, &mut stack, &mut files, registry, authority)?;
    Ok((root, files))
}

fn collect_static(
    wf: &Workflow,
    stack: &mut Vec<PathBuf>,
    files: &mut FileDigests,
    registry: Option<&Registry>,
    authority: Option<&crate::kernel::Authority>,
) -> Result<()> {
    for step in &wf.steps {
        match &step.action {
            Action::Workflow { path, pos, .. } if !path.contains('$') => {
                let at = |msg: String| {
                    Error::parse(format!(
                        "{}:{}:{}: {msg}",
                        wf.source.shown, pos.line, pos.col
                    ))
                };
                let full = steps::compose::resolve_path(&wf.source.path, path);
                if !full.is_file() {
                    return Err(at(format!(
                        "Workflow step {} workflow file not found: {}",
                        step.id,
                        full.display()
                    )));
                }
                if let Some(a) = authority {
                    a.judge(&crate::policy::Request::WorkflowFile { path: &full })
                        .map_err(|r| {
                            Error::runtime(format!(
                                "policy refuses this run: {}:{}:{}: step {} workflow file {path} {r}",
                                wf.source.shown, pos.line, pos.col, step.id
                            ))
                        })?;
                }
                let real = std::fs::canonicalize(&full)?;
                if stack.contains(&real) {
                    return Err(at(format!(
                        "Workflow step {} creates a cycle: {} is already being executed",
                        step.id,
                        real.display()
                    )));
                }
                let child = load_workflow(&full, registry)?;
                if !files.iter().any(|(p, _)| p == &real) {
                    files.push((real.clone(), child.source.digest.clone()));
                }
                stack.push(real);
                collect_static(&child, stack, files, registry, authority)?;
                stack.pop();
            }
            Action::Wasm { uses, .. } => {
                let full = steps::compose::resolve_path(&wf.source.path, uses);
                if let Ok(bytes) = std::fs::read(&full) {
                    let real = std::fs::canonicalize(&full).unwrap_or(full);
                    if !files.iter().any(|(p, _)| p == &real) {
                        files.push((real, blake3::hash(&bytes).to_hex().to_string()));
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Extensions a workflow file may have (case-insensitive).
pub const WORKFLOW_EXTENSIONS: [&str; 4] = ["lobster", "yaml", "yml", "json"];

/// Whether `candidate` is an existing regular file with a workflow extension.
pub fn looks_like_workflow(candidate: &str) -> bool {
    let path = Path::new(candidate);
    has_workflow_extension(path) && path.is_file()
}

/// Whether the path ends in a workflow extension.
pub fn has_workflow_extension(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| WORKFLOW_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
}

/// Add the files of every WebAssembly step the run's registry resolved
/// (pipeline stages named in the workflow) with their digests.
pub fn add_components(files: &mut FileDigests, ctx: &Context) {
    let Some(steps) = crate::sandbox::resolver_of(&ctx.registry) else {
        return;
    };
    for (_, step) in steps.resolved() {
        let path = std::fs::canonicalize(step.path()).unwrap_or_else(|_| step.path().to_path_buf());
        if !files.iter().any(|(p, _)| *p == path) {
            files.push((path, step.digest().to_string()));
        }
    }
}

/// Run the workflow file at `path` with `--args-json` text.
pub fn run_file(path: &Path, args_json: Option<&str>, ctx: &Context) -> Result<Paused> {
    let given = args::parse_args_json(args_json, "run --args-json")?;
    let (wf, mut files) = load_plan_under(path, Some(&ctx.registry), Some(ctx.authority()))?;
    crate::workflow::policy::check_workflow(&wf, ctx)?;
    let narrowed = crate::workflow::policy::permissions_context(&wf, ctx);
    let ctx = narrowed.as_ref().unwrap_or(ctx);
    steps::wasm::prepare(&wf, ctx)?;
    add_components(&mut files, ctx);
    let resolved = args::resolve(&wf, &given)?;
    let mut runner = Runner::new(wf, resolved, ctx);
    runner.files = files;
    let stop = runner.run_from(0)?;
    state::finish(&runner, stop)
}
