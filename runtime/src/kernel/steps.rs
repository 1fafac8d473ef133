//! What a run hands its WebAssembly steps besides grants and limits: the
//! scope of their state, where their log lines go, and who is told what
//! each step cost.

use super::log::{self, LogSink};
use std::sync::Arc;
use std::time::Duration;

/// Where a run's wasm steps keep their state and send their logs. Lives in
/// [`crate::kernel::Context::sandbox`]; their ceilings are
/// [`crate::kernel::Limits::steps`].
#[derive(Clone)]
pub struct SandboxConfig {
    /// Scope of `state-get`/`state-set` (workflow name or run id); steps of
    /// different scopes never see each other's values.
    pub state_scope: String,
    /// Receives `host.log` lines and guest stderr.
    pub log: LogSink,
    /// Told what each WebAssembly step cost (time, fuel, limit hit); `None`:
    /// nobody is watching.
    pub observer: Option<StepObserver>,
}

impl Default for SandboxConfig {
    /// Scope `adhoc`, logs to the process's stderr.
    fn default() -> Self {
        SandboxConfig {
            state_scope: "adhoc".to_string(),
            log: log::to_stderr(),
            observer: None,
        }
    }
}

impl std::fmt::Debug for SandboxConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SandboxConfig")
            .field("state_scope", &self.state_scope)
            .finish_non_exhaustive()
    }
}

/// One finished `run` of a WebAssembly step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepReport<'a> {
    /// The step's name.
    pub step: &'a str,
    /// Wall time of instantiation and `run`.
    pub elapsed: Duration,
    /// Fuel burned (`None` when fuel is off, see `policy fuel = false`).
    pub fuel_used: Option<u64>,
    /// The sandbox limit the step hit, if it hit one: `fuel`, `deadline`,
    /// `memory`, `output` or `result`.
    pub breach: Option<&'static str>,
}

/// Receives a [`StepReport`] after every WebAssembly step of a run.
#[derive(Clone)]
pub struct StepObserver(Arc<dyn Fn(&StepReport<'_>) + Send + Sync>);

impl StepObserver {
    /// An observer calling `f` with each report.
    pub fn new(f: impl Fn(&StepReport<'_>) + Send + Sync + 'static) -> Self {
        StepObserver(Arc::new(f))
    }

    /// Hand it `report`.
    pub fn observe(&self, report: &StepReport<'_>) {
        (self.0)(report)
    }
}

impl std::fmt::Debug for StepObserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StepObserver")
    }
}
