//! Per-step ceilings and the memory limiter that enforces one of them.

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
    pub fn effective(&self, run: &crate::executor::Limits) -> EffectiveLimits {
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

/// Caps the total linear memory of one store and remembers a breach, so
/// the error can name the limit instead of a generic trap.
pub(crate) struct MemoryLimiter {
    cap: usize,
    used: usize,
    pub(crate) breached: bool,
}

impl MemoryLimiter {
    pub(crate) fn new(cap: usize) -> Self {
        MemoryLimiter {
            cap,
            used: 0,
            breached: false,
        }
    }
}

/// The error a refused `memory.grow` traps with (found again by flag).
#[derive(Debug, thiserror::Error)]
#[error("memory limit of {0} bytes reached")]
pub(crate) struct MemoryLimitHit(pub usize);

impl wasmtime::ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let after = self.used + desired.saturating_sub(current);
        if after > self.cap {
            self.breached = true;
            return Err(wasmtime::Error::new(MemoryLimitHit(self.cap)));
        }
        self.used = after;
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }

    fn instances(&self) -> usize {
        64
    }

    fn tables(&self) -> usize {
        64
    }

    fn memories(&self) -> usize {
        8
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::Limits;

    #[test]
    fn effective_limits_combine_step_and_run() {
        let run = Limits {
            timeout: Some(Duration::from_millis(500)),
            max_output_bytes: Some(100),
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

    #[test]
    fn limiter_counts_all_memories() {
        use wasmtime::ResourceLimiter;
        let mut l = MemoryLimiter::new(100);
        assert!(l.memory_growing(0, 60, None).unwrap());
        assert!(l.memory_growing(0, 40, None).unwrap());
        assert!(l.memory_growing(40, 41, None).is_err());
        assert!(l.breached);
    }
}
