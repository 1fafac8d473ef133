//! The ceilings of one run ([`Limits`]) and of each WebAssembly step in it
//! ([`StepLimits`]); the policy lowers them, the sandbox enforces them.

use std::time::Duration;

/// Default fuel per step: roughly ten seconds of CPU-bound guest code.
pub const DEFAULT_FUEL: u64 = 10_000_000_000;
/// Default memory cap per step (all linear memories together).
pub const DEFAULT_MEMORY_BYTES: usize = 256 << 20;
/// Default cap on each of stdout, stderr and the result, when the run sets
/// no `max_output_bytes`.
pub const DEFAULT_OUTPUT_BYTES: usize = 512_000;
/// The largest memory cap the engine supports (a 32-bit linear memory's
/// whole range; also the pooling allocator's slot size).
pub const MAX_MEMORY_BYTES: usize = 4 << 30;
/// Table elements a step may grow its tables to.
pub const MAX_TABLE_ELEMENTS: usize = 1 << 20;
/// Host bytes one table element costs (a pointer), counted against the
/// memory limit: tables are memory the guest makes the host allocate.
pub const TABLE_ELEMENT_BYTES: usize = 8;
/// Core instances one step's store may create.
pub const MAX_INSTANCES: usize = 64;
/// Tables one step's store may create.
pub const MAX_TABLES: usize = 64;
/// Linear memories one step's store may create.
pub const MAX_MEMORIES: usize = 8;

/// Ceilings for each wasm step of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepLimits {
    /// Fuel (roughly: wasm instructions) per step.
    pub fuel: u64,
    /// Bytes of linear memory per step (capped at [`MAX_MEMORY_BYTES`]).
    pub memory_bytes: usize,
    /// Wall-clock limit per step, on top of the run's `--timeout-ms`.
    pub timeout: Option<Duration>,
    /// Cap on stdout, stderr and result bytes; `None` uses the run's
    /// `max_output_bytes`, else [`DEFAULT_OUTPUT_BYTES`].
    pub output_bytes: Option<usize>,
}

impl Default for StepLimits {
    fn default() -> Self {
        StepLimits {
            fuel: DEFAULT_FUEL,
            memory_bytes: DEFAULT_MEMORY_BYTES,
            timeout: None,
            output_bytes: None,
        }
    }
}

/// The limits that apply to one step execution, all resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EffectiveLimits {
    /// Fuel.
    pub fuel: u64,
    /// Memory cap in bytes.
    pub memory_bytes: usize,
    /// Deadline from the start of the step.
    pub timeout: Option<Duration>,
    /// Cap on each output stream and on the result.
    pub output_bytes: usize,
}

impl StepLimits {
    /// Combine with the run's limits: the shorter timeout wins; the output
    /// cap is this one's, else the run's, else the default.
    pub fn effective(&self, run: &Limits) -> EffectiveLimits {
        let timeout = match (self.timeout, run.timeout) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        EffectiveLimits {
            fuel: self.fuel,
            memory_bytes: self.memory_bytes.min(MAX_MEMORY_BYTES),
            timeout,
            output_bytes: self
                .output_bytes
                .or(run.max_output_bytes)
                .unwrap_or(DEFAULT_OUTPUT_BYTES),
        }
    }
}

/// Ceilings for one run.
#[derive(Debug, Clone, Default)]
pub struct Limits {
    /// Whole-run wall clock (`--timeout-ms`).
    pub timeout: Option<Duration>,
    /// Cap on captured child output and on what Lobster prints (`--max-stdout-bytes`).
    pub max_output_bytes: Option<usize>,
    /// Ceilings of each WebAssembly step.
    pub steps: StepLimits,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn effective_limits_combine_step_and_run() {
        let run = Limits {
            timeout: Some(Duration::from_millis(500)),
            max_output_bytes: Some(100),
            ..Limits::default()
        };
        let e = StepLimits::default().effective(&run);
        assert_eq!(e.timeout, Some(Duration::from_millis(500)));
        assert_eq!(e.output_bytes, 100);
        let e = StepLimits::default().effective(&Limits::default());
        assert_eq!(e.output_bytes, DEFAULT_OUTPUT_BYTES);
        assert_eq!(e.timeout, None);
        let step = StepLimits {
            timeout: Some(Duration::from_millis(50)),
            memory_bytes: usize::MAX,
            ..StepLimits::default()
        };
        let e = step.effective(&run);
        assert_eq!(e.timeout, Some(Duration::from_millis(50)));
        assert_eq!(e.memory_bytes, MAX_MEMORY_BYTES);
    }
}
