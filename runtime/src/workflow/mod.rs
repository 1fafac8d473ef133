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

/// [`load_plan`] for a run: every literal sub-workflow file is opened as
/// `authority` lets the run read it (beneath its roots when confined; see
/// [`crate::kernel::root`]) and read from that handle.
pub fn load_plan_under(
    path: &Path,
    registry: Option<&Registry>,
    authority: Option<&crate::kernel::Authority>,
) -> Result<(Arc<Workflow>, FileDigests)> {
    plan_read(read_root(path, authority)?, registry, authority)
}

/// Read a run's top workflow file at `path` (not yet validated): its text
/// is what the run's journal records, and [`plan_read`] plans from exactly
/// those bytes.
pub fn read_root(path: &Path, authority: Option<&crate::kernel::Authority>) -> Result<load::Read> {
    match authority {
        // A tenant's top file (its catalog's or its inline text, chosen by
        // the server) is named relative to its root in every message.
        Some(a) if a.confinement().tenant => {
            let file = std::fs::File::open(path).map_err(|e| {
                Error::runtime(format!("cannot read workflow file {}: {e}", a.shown(path)))
            })?;
            let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
            load::read_opened(&real, a.shown(&real), file)
        }
        _ => load::read(path),
    }
}

/// [`load_plan_under`] of a top file read already ([`read_root`]).
pub fn plan_read(
    read: load::Read,
    registry: Option<&Registry>,
    authority: Option<&crate::kernel::Authority>,
) -> Result<(Arc<Workflow>, FileDigests)> {
    let (source, doc) = read.parsed()?;
    let root = validate::validate_shared(source, &doc, registry)?;
    let mut files = vec![(root.source.path.clone(), root.source.digest.clone())];
    let mut stack = vec![root.source.path.clone()];
    collect_static(&root, &mut stack, &mut files, registry, authority)?;
    Ok((root, files))
}

/// Open the sub-workflow at `full` (written `written`) as `authority`
/// lets the run read it, and validate it. `refused` words a refusal (the
/// reason completes "workflow file {written} …"); a missing file is
/// `Ok(None)` for the operator (the caller says "not found" its way) and a
/// refusal like any other toward a tenant (no existence oracle).
pub fn open_sub_workflow(
    full: &Path,
    registry: Option<&Registry>,
    authority: &crate::kernel::Authority,
    refused: impl FnOnce(crate::kernel::Refusal) -> Error,
) -> Result<Option<Workflow>> {
    use crate::kernel::root::Refused;
    let tenant = authority.confinement().tenant;
    let opened = match authority.open_file(full) {
        Ok(o) => o,
        Err(Refused::Missing) if !tenant => return Ok(None),
        Err(why) => return Err(refused(authority.file_refusal(full, &why))),
    };
    let shown = if tenant {
        authority.shown(&opened.path)
    } else {
        load::shown_of(full)
    };
    let (source, doc) = load::load_opened(&opened.path, shown, opened.file)?;
    Ok(Some(validate::validate(source, &doc, registry)?))
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
                let not_found = || {
                    at(format!(
                        "Workflow step {} workflow file not found: {}",
                        step.id,
                        full.display()
                    ))
                };
                let child = match authority {
                    Some(a) => open_sub_workflow(&full, registry, a, |r| {
                        Error::runtime(format!(
                            "policy refuses this run: {}:{}:{}: step {} workflow file {path} {r}",
                            wf.source.shown, pos.line, pos.col, step.id
                        ))
                    })?
                    .ok_or_else(not_found)?,
                    None if !full.is_file() => return Err(not_found()),
                    None => load_workflow(&full, registry)?,
                };
                let real = child.source.path.clone();
                if stack.contains(&real) {
                    return Err(at(format!(
                        "Workflow step {} creates a cycle: {} is already being executed",
                        step.id,
                        authority.map_or_else(|| real.display().to_string(), |a| a.shown(&real))
                    )));
                }
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
    for (_, pin) in steps.resolved() {
        let path = std::fs::canonicalize(&pin.path).unwrap_or_else(|_| pin.path.clone());
        if !files.iter().any(|(p, _)| *p == path) {
            files.push((path, pin.digest().to_string()));
        }
    }
}

/// Run the workflow file at `path` with `--args-json` text.
pub fn run_file(path: &Path, args_json: Option<&str>, ctx: &Context) -> Result<Paused> {
    run_read(read_root(path, Some(ctx.authority())), args_json, ctx)
}

/// [`run_file`] of a top file read already ([`read_root`]; its args are
/// checked before an error reading it is returned).
pub fn run_read(
    read: Result<load::Read>,
    args_json: Option<&str>,
    ctx: &Context,
) -> Result<Paused> {
    let given = args::parse_args_json(args_json, "run --args-json")?;
    let read = read?;
    let (wf, mut files) = plan_read(read, Some(&ctx.registry), Some(ctx.authority()))?;
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
