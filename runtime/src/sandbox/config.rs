//! [`SandboxConfig`]: per-run settings of wasm steps that are not grants.

use super::limits::StepLimits;
use super::log::{self, LogSink};

/// How a run's wasm steps are limited, where their state lives and where
/// their logs go. Lives in [`crate::executor::Context::sandbox`].
#[derive(Clone)]
pub struct SandboxConfig {
    /// Fuel, memory, per-step timeout and output caps.
    pub limits: StepLimits,
    /// Scope of `state-get`/`state-set` (workflow name or run id); steps of
    /// different scopes never see each other's values.
    pub state_scope: String,
    /// Receives `host.log` lines and guest stderr.
    pub log: LogSink,
    /// Told what each WebAssembly step cost (time, fuel, limit hit); `None`:
    /// nobody is watching.
    pub observer: Option<super::report::StepObserver>,
}

impl Default for SandboxConfig {
    /// Default limits, scope `adhoc`, logs to the process's stderr.
    fn default() -> Self {
        SandboxConfig {
            limits: StepLimits::default(),
            state_scope: "adhoc".to_string(),
            log: log::to_stderr(),
            observer: None,
        }
    }
}

impl std::fmt::Debug for SandboxConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SandboxConfig")
            .field("limits", &self.limits)
            .field("state_scope", &self.state_scope)
            .finish_non_exhaustive()
    }
}
