//! What one sandboxed step cost: its wall time, the fuel it burned and the
//! limit it hit, handed to whoever watches runs (the gateway's `/metrics`).
//! The sandbox only reports; it never decides anything from a report.

use super::error::SandboxError;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

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

/// The limit `e` reports hitting, named as in [`StepReport::breach`].
pub fn breach_kind(e: &SandboxError) -> Option<&'static str> {
    match e {
        SandboxError::OutOfFuel { .. } => Some("fuel"),
        SandboxError::Timeout { .. } => Some("deadline"),
        SandboxError::MemoryLimit { .. } => Some("memory"),
        SandboxError::OutputLimit { .. } => Some("output"),
        SandboxError::ResultTooLarge { .. } => Some("result"),
        _ => None,
    }
}

/// Fuel a store burned, filled in when the step's store is done
/// (`u64::MAX`: not known).
#[derive(Debug)]
pub struct FuelMeter(AtomicU64);

impl Default for FuelMeter {
    fn default() -> Self {
        FuelMeter(AtomicU64::new(u64::MAX))
    }
}

impl Clone for FuelMeter {
    /// A fresh meter: each step execution measures its own fuel.
    fn clone(&self) -> Self {
        FuelMeter::default()
    }
}

impl FuelMeter {
    /// Record `used`.
    pub fn set(&self, used: u64) {
        self.0.store(used, Ordering::Relaxed);
    }

    /// What was recorded, if anything.
    pub fn get(&self) -> Option<u64> {
        match self.0.load(Ordering::Relaxed) {
            u64::MAX => None,
            n => Some(n),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn breaches_are_named_by_limit() {
        let step = || "s".to_string();
        assert_eq!(
            breach_kind(&SandboxError::OutOfFuel {
                step: step(),
                limit: 1
            }),
            Some("fuel")
        );
        assert_eq!(
            breach_kind(&SandboxError::Timeout {
                step: step(),
                limit_ms: 1
            }),
            Some("deadline")
        );
        assert_eq!(
            breach_kind(&SandboxError::MemoryLimit {
                step: step(),
                limit: 1
            }),
            Some("memory")
        );
        assert_eq!(breach_kind(&SandboxError::Cancelled { step: step() }), None);
        let m = FuelMeter::default();
        assert_eq!(m.get(), None);
        m.set(42);
        assert_eq!(m.get(), Some(42));
        assert_eq!(m.clone().get(), None);
    }
}
