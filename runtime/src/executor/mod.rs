//! Drives a parsed pipeline to an outcome: resolve and validate every stage
//! first, then run them in order with items streaming between them.
//!
//! The executor never prints; the CLI turns an [`Outcome`] into output.

mod flags;
mod plan;
pub mod policy_check;
mod run;

pub use crate::kernel::{Cancel, CancelReason, Context, Limits, Mode};
pub use flags::check_flags;
pub use plan::{check_pipeline, plan, resolve_stages, suggest, suggest_flag};
pub use run::{run_pipeline, Outcome};

use crate::kernel::{ContextBuilder, Registry};
use crate::sandbox::{ArtifactCache, StepPath, StepResolver};
use crate::state::StateStore;
use std::sync::Arc;

/// The built-in commands and the WebAssembly steps on `path`, with compiled
/// artefacts cached in `state`'s directory. Every component is admitted
/// before it compiles, and `oci://` names are fetched, by a
/// [`crate::registry::Admitter`] under `policy` in `run_dir` (the run's
/// policy and working directory, where its `lobster.lock` is).
pub fn registry(
    path: StepPath,
    state: &StateStore,
    policy: Arc<crate::kernel::Policy>,
    run_dir: std::path::PathBuf,
) -> Arc<Registry> {
    let authority = crate::kernel::Authority::shared(policy, run_dir);
    let admission = crate::registry::Admitter::new(Arc::new(authority), state.dir());
    let steps = StepResolver::new(path, ArtifactCache::in_state_dir(state.dir()))
        .with_admission(Arc::new(admission));
    Arc::new(crate::commands::builtin().with_steps(steps))
}

/// A context over the current process: its directory and environment,
/// the built-in commands, and wasm steps on `LOBSTER_STEP_PATH` then
/// `./steps` (artefacts cached under `<state dir>/cache/wasm`); nothing is
/// granted, the policy is the default one.
pub fn process_context(mode: Mode, state: StateStore) -> ContextBuilder {
    let cwd = std::env::current_dir().unwrap_or_else(|_| std::path::PathBuf::from("."));
    let registry = registry(
        StepPath::from_env(&cwd, &[]),
        &state,
        Arc::default(),
        cwd.clone(),
    );
    crate::kernel::Context::builder(mode, state)
        .run_dir(cwd)
        .registry(registry)
}

/// `ctx` made to run where and as a paused run did: in its working
/// directory (`cwd`, when it still exists), with its grants (clock and seed
/// included) and its step path (`step_dirs`; empty: `ctx`'s). A new
/// context: its authority is made from these.
pub fn resumed_context(
    ctx: &crate::kernel::Context,
    cwd: Option<&str>,
    grants: &crate::kernel::Grants,
    step_dirs: &[String],
) -> crate::kernel::Context {
    let mut builder = ctx.rebuild().grants(grants.clone());
    let dir = cwd.map(std::path::PathBuf::from).filter(|p| p.is_dir());
    if let Some(dir) = &dir {
        builder = builder.run_dir(dir.clone());
    }
    // The steps are admitted under the run's policy in the resumed run's
    // directory (its lobster.lock).
    let path = if step_dirs.is_empty() {
        crate::sandbox::resolver_of(&ctx.registry).map(|r| r.path().clone())
    } else {
        Some(StepPath::new(
            step_dirs.iter().map(std::path::PathBuf::from).collect(),
        ))
    };
    if let Some(path) = path.filter(|_| dir.is_some() || !step_dirs.is_empty()) {
        let run_dir = builder.current_run_dir();
        builder = builder.registry(registry(
            path,
            &ctx.state,
            ctx.authority().shared_policy(),
            run_dir,
        ));
    }
    builder.build()
}
