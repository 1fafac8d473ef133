//! [`StepEnv`]: what a step may see, resolved from a run's [`Context`].

use super::error::SandboxError;
use super::log::LogSink;
use crate::kernel::{
    grants::{Grants, ResolvedDir},
    Cancel, Context,
};
use crate::state::StateStore;

/// Everything a step execution needs from its run, with grants checked.
#[derive(Clone)]
pub struct StepEnv {
    /// Preopened directories (checked to lie inside the working directory).
    pub dirs: Vec<ResolvedDir>,
    /// Environment variables the step sees (only granted names).
    pub env: Vec<(String, String)>,
    /// Fixed wall clock, ms since the Unix epoch.
    pub wall_clock_ms: u64,
    /// Seed of the step's random numbers.
    pub random_seed: u64,
    /// Cancellation of the run (checked every epoch tick).
    pub cancel: Option<Cancel>,
    /// State store and scope for `state-get`/`state-set`.
    pub state: Option<(StateStore, String)>,
    /// Where log lines go.
    pub log: LogSink,
    /// Tools and models for a `lobster:step@0.2.0` step's `broker` import
    /// (`None`: every call is refused).
    pub broker: Option<std::sync::Arc<dyn super::broker_port::StepBroker>>,
    /// Fuel the step burned, filled in when its `run` ends.
    pub fuel: super::report::FuelMeter,
}

impl StepEnv {
    /// Nothing granted, no state, logs dropped: the closed default.
    pub fn closed() -> Self {
        StepEnv {
            dirs: Vec::new(),
            env: Vec::new(),
            wall_clock_ms: 0,
            random_seed: 0,
            cancel: None,
            state: None,
            log: super::log::discard(),
            broker: None,
            fuel: Default::default(),
        }
    }

    /// Resolve `grants` against the run's working directory and environment.
    /// Each directory and variable is judged by the run's authority here,
    /// where it is handed to the step (as at plan time), and directories
    /// resolve against the run's working directory, never a step's `cwd`.
    pub fn from_grants(grants: &Grants, ctx: &Context) -> Result<Self, SandboxError> {
        let authority = ctx.authority();
        authority
            .judge(&crate::policy::Request::HandOver { grants })
            .map_err(|r| SandboxError::Grant(format!("cannot hand the step its grants: {r}")))?;
        let dirs = grants.resolve_dirs(authority.workdir())?;
        let env = grants
            .env
            .iter()
            .filter_map(|name| ctx.env.get(name).map(|v| (name.clone(), v.clone())))
            .collect();
        Ok(StepEnv {
            dirs,
            env,
            wall_clock_ms: grants.wall_clock_ms,
            random_seed: grants.random_seed,
            cancel: Some(ctx.cancel.clone()),
            state: Some((ctx.state.clone(), ctx.sandbox.state_scope.clone())),
            log: ctx.sandbox.log.clone(),
            broker: None,
            fuel: Default::default(),
        })
    }

    /// The run's grants resolved against its context.
    pub fn from_context(ctx: &Context) -> Result<Self, SandboxError> {
        StepEnv::from_grants(&ctx.grants, ctx)
    }
}
