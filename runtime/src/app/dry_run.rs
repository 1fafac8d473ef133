//! `--dry-run`: the plan of a run request, printed instead of running it.
//! A pipeline's is the reference's (`[DRY RUN] Pipeline (n stages):` and one
//! line per stage with its arguments); a workflow's is the workflow
//! layer's.

use super::{Prepared, Work};
use crate::error::{Error, Result};
use crate::kernel::Context;

/// The dry-run plan of `prepared` (a run request, not a resume).
pub fn plan(prepared: &Prepared) -> Result<String> {
    match &prepared.work {
        Work::Pipeline(text) => pipeline(text, &prepared.ctx),
        Work::Workflow { path, args_json } => {
            crate::workflow::dry_run::plan(path, args_json.as_deref(), &prepared.ctx)
        }
        Work::Resume(_) => Err(Error::runtime("a resume has no dry run")),
    }
}

/// The reference's dry-run plan (to stderr): `[DRY RUN] Pipeline (n stages):`
/// and one line per stage with its arguments.
pub fn pipeline(text: &str, ctx: &Context) -> Result<String> {
    let pipeline = crate::dsl::parse(text)?;
    crate::executor::plan(&pipeline, 0, ctx)?;
    let n = pipeline.stages.len();
    let mut lines = vec![format!(
        "[DRY RUN] Pipeline ({n} stage{}):",
        if n == 1 { "" } else { "s" }
    )];
    for (i, stage) in pipeline.stages.iter().enumerate() {
        let mut parts: Vec<String> = stage.args.positional.clone();
        parts.extend(
            stage
                .args
                .flags
                .iter()
                .map(|(k, v)| format!("{k}={}", v.as_str())),
        );
        let args = if parts.is_empty() {
            String::new()
        } else {
            format!("  args: {}", parts.join(", "))
        };
        lines.push(format!("  {}. {}{args}", i + 1, stage.name));
    }
    lines.push(String::new());
    Ok(lines.join("\n"))
}
