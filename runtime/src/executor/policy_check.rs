//! The operator policy over a resolved pipeline, before any stage runs:
//! each stage is asked of the run's [`crate::policy::Authority`] (a host
//! process for `exec`, a component's imports for wasm steps), then the
//! run-wide grants and limits ([`crate::policy::enforce::run_excesses`]) and
//! the pins of `lobster.lock` in the run's working directory. Every excess
//! is collected, so one refusal names all of them.

use crate::commands::Command;
use crate::dsl::Pipeline;
use crate::error::{Error, Result};
use crate::executor::Context;
use crate::policy::enforce::{run_excesses, short};
use crate::policy::lock::{LockFile, LOCK_FILE};
use crate::policy::Request;
use std::path::Path;

/// Check stages `from..` (already resolved to `commands`) against the
/// context's policy and `lobster.lock` in its working directory.
pub fn check_plan(
    pipeline: &Pipeline,
    from: usize,
    commands: &[&dyn Command],
    ctx: &Context,
) -> Result<()> {
    let excesses = policy_excesses(pipeline, from, commands, ctx);
    if !excesses.is_empty() {
        let source = ctx
            .policy()
            .source
            .as_ref()
            .map_or_else(String::new, |p| format!(" ({})", p.display()));
        return Err(
            Error::runtime(format!("policy refuses this run: {}", excesses.join("; "))).with_hint(
                format!(
                    "nothing ran; ask the operator to widen the policy{source} or change the run"
                ),
            ),
        );
    }
    check_pins(pipeline, from, commands, ctx.authority.workdir())
}

/// Every way the run exceeds its authority's policy, in pipeline order
/// then grants then limits.
pub fn policy_excesses(
    pipeline: &Pipeline,
    from: usize,
    commands: &[&dyn Command],
    ctx: &Context,
) -> Vec<String> {
    let mut out = Vec::new();
    let authority = &ctx.authority;
    for (offset, cmd) in commands.iter().enumerate() {
        let index = from + offset;
        let sig = cmd.signature();
        let name = pipeline
            .stages
            .get(index)
            .map_or(sig.name, |s| s.name.as_str());
        if sig.side_effects.contains(&"local_exec") {
            if let Err(r) = authority.judge(&Request::HostProcess) {
                out.push(format!(
                    "stage {} ({name}) runs host processes, which {r}",
                    index + 1
                ));
            }
        }
        if cmd.digest().is_some() {
            let imports = cmd.imports();
            if let Err(r) = authority.judge(&Request::Component { imports }) {
                out.push(format!("stage {} ({name}) {r}", index + 1));
            }
        }
    }
    out.extend(run_excesses(ctx));
    out
}

/// Refuse a wasm stage whose component does not match its pin in
/// `cwd/lobster.lock` (when that file exists).
pub fn check_pins(
    pipeline: &Pipeline,
    from: usize,
    commands: &[&dyn Command],
    cwd: &Path,
) -> Result<()> {
    let path = cwd.join(LOCK_FILE);
    if !path.is_file() {
        return Ok(());
    }
    let lock = LockFile::load(&path)?;
    let mut problems = Vec::new();
    for (offset, cmd) in commands.iter().enumerate() {
        let Some(digest) = cmd.digest() else { continue };
        let Some(stage) = pipeline.stages.get(from + offset) else {
            continue;
        };
        if let Some(pinned) = lock.pin(&stage.name) {
            if pinned != digest {
                problems.push(format!(
                    "step {} does not match its pin in {LOCK_FILE} (pinned blake3 {}, the component now is {})",
                    stage.name,
                    short(pinned),
                    short(digest)
                ));
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Error::runtime(problems.join("; "))
            .with_hint("nothing ran; review the new component, then run `lobster lock` to pin it"))
    }
}
