//! The operator policy over a resolved pipeline, before any stage runs:
//! each stage is asked of the run's [`crate::kernel::Authority`] (a host
//! process for `exec`, a component's imports for wasm steps), then the
//! run-wide grants and limits ([`crate::policy::enforce::run_excesses`]) and
//! the pins of `lobster.lock` in the run's working directory. Every excess
//! is collected, so one refusal names all of them.

use crate::dsl::Pipeline;
use crate::error::{Error, Result};
use crate::executor::Context;
use crate::kernel::{Command, Request};
use crate::policy::enforce::{run_excesses, short};
use crate::policy::lock::{LockFile, LOCK_FILE};
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
    check_pins(pipeline, from, commands, ctx.authority().workdir())
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
    let authority = ctx.authority();
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
    out.extend(run_excesses(ctx.authority(), &ctx.grants, &ctx.limits));
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

#[cfg(test)]
mod tests {
    #[test]
    fn use_sites_ask_the_authority_again() {
        use crate::kernel::{Context, Grants, Mode, Policy};
        use crate::sandbox::StepEnv;
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("secrets")).unwrap();
        std::fs::create_dir_all(tmp.path().join("mail")).unwrap();
        let store = crate::state::StateStore::new(tmp.path().join("state"));
        let policy = Policy::parse(
            "trust = \"untrusted\"\nroots = [\"mail\"]\nenv = [\"LANG\"]\n",
            std::path::Path::new("p.toml"),
        )
        .unwrap();
        let under = |grants: Grants| {
            Context::builder(Mode::Tool, store.clone())
                .run_dir(tmp.path().to_path_buf())
                .policy(policy.clone())
                .grants(grants)
                .build()
        };
        let ctx = under(Grants::default());
        // A host process that slipped past the plan is refused at spawn.
        let e = crate::process::Invocation::shell("touch pwned")
            .run(&ctx)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("was about to start, which the untrusted policy forbids"),
            "{e}"
        );
        assert!(!tmp.path().join("pwned").exists());
        // Grants handed to a step are judged where they are handed over.
        let ctx = under(Grants::builder().allow_read("secrets").build().unwrap());
        let e = StepEnv::from_grants(&ctx.grants, &ctx).err().unwrap();
        assert!(e.to_string().contains("outside the allowed roots"), "{e}");
        let mail = Grants::builder().allow_read("mail").build().unwrap();
        let ctx = under(mail.clone());
        assert!(StepEnv::from_grants(&mail, &ctx).is_ok());
        // Nothing beyond the run's grants, whoever builds the step's set.
        let wider = Grants::builder().allow_write("mail").build().unwrap();
        let e = StepEnv::from_grants(&wider, &ctx).err().unwrap();
        assert!(
            e.to_string().contains("more than the run was granted"),
            "{e}"
        );
        let env = Grants::builder().allow_env("LANG").build().unwrap();
        let e = StepEnv::from_grants(&env, &ctx).err().unwrap();
        assert!(e.to_string().contains("variable LANG is more than"), "{e}");
    }
}
