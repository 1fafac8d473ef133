//! What one sandboxed step cost: its wall time, the fuel it burned and the
//! limit it hit, handed to whoever watches runs (the gateway's `/metrics`).
//! The sandbox only reports; it never decides anything from a report.

use super::error::SandboxError;
pub use crate::kernel::{StepObserver, StepReport};
use std::sync::atomic::{AtomicU64, Ordering};
/// The journal's `step` event of a finished WebAssembly step: the report,
/// the component's digest, and its input and output digests (under the
/// run's digest rule, see [`crate::journal::DigestRule`]; the output's only
/// when it succeeded, `ok`).
pub fn journal_event(
    report: &StepReport<'_>,
    component: &str,
    input_digest: Option<String>,
    output_digest: Option<String>,
    ok: bool,
) -> crate::journal::Event {
    crate::journal::Event::Step(crate::journal::Step {
        id: report.step.to_string(),
        step_kind: "wasm".into(),
        name: report.step.to_string(),
        component: Some(component.to_string()),
        fuel: report.fuel_used,
        wall_ms: report.elapsed.as_millis() as u64,
        limit: report.breach.map(str::to_string),
        input_digest,
        output_digest: output_digest.filter(|_| ok),
        ok,
        replayable: true,
        ..crate::journal::Step::default()
    })
}

/// A WebAssembly step's input and output digests under digest rule 1: of
/// its input items and (when it succeeded) its output items, each printed
/// as one JSON array.
pub fn items_digests(
    input: &[crate::value::Item],
    output: Option<&[crate::value::Item]>,
) -> (Option<String>, Option<String>) {
    let items_digest = crate::journal::items_digest;
    (Some(items_digest(input)), output.map(items_digest))
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
