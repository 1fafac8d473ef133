//! The fixed wall clock and seeded random numbers a run's steps see, so a
//! replay (same seed, same clock) is identical.

use std::time::Duration;
use wasmtime_wasi::{Deterministic, HostWallClock};

/// A wall clock that always reads the same instant.
pub(crate) struct FixedClock(pub Duration);

impl HostWallClock for FixedClock {
    fn resolution(&self) -> Duration {
        Duration::from_millis(1)
    }

    fn now(&self) -> Duration {
        self.0
    }
}

/// Bytes in one cycle of the seeded generators (the stream repeats after it).
const CYCLE: usize = 4096;

/// A deterministic generator for `wasi:random` derived from `seed` and a
/// purpose label (so secure and insecure streams differ).
pub(crate) fn seeded(seed: u64, purpose: &'static str) -> Deterministic {
    Deterministic::new(cycle_of(seed, purpose))
}

/// The bytes of one cycle for (`seed`, `purpose`). Every step of a run uses
/// the run's seed (most runs the default, 0), so the last few cycles are
/// kept per thread rather than derived again with blake3 per step (8 KiB
/// per step, a few µs of a warm step).
fn cycle_of(seed: u64, purpose: &'static str) -> Vec<u8> {
    use std::cell::RefCell;
    const KEPT: usize = 4;
    thread_local! {
        static CYCLES: RefCell<Vec<(u64, &'static str, Vec<u8>)>> =
            const { RefCell::new(Vec::new()) };
    }
    CYCLES.with(|cycles| {
        let mut cycles = cycles.borrow_mut();
        if let Some((_, _, bytes)) = cycles.iter().find(|(s, p, _)| *s == seed && *p == purpose) {
            return bytes.clone();
        }
        let mut hasher = blake3::Hasher::new_derive_key(purpose);
        hasher.update(&seed.to_le_bytes());
        let mut bytes = vec![0u8; CYCLE];
        hasher.finalize_xof().fill(&mut bytes);
        if cycles.len() == KEPT {
            cycles.remove(0);
        }
        cycles.push((seed, purpose, bytes.clone()));
        bytes
    })
}

/// The `insecure-seed` value (HashMap seeds in Rust guests) for `seed`.
pub(crate) fn insecure_seed(seed: u64) -> u128 {
    let hash = blake3::derive_key("lobster 2026 wasi insecure-seed", &seed.to_le_bytes());
    u128::from_le_bytes(hash[..16].try_into().unwrap_or([0; 16]))
}
