//! The fixed wall clock and seeded random numbers a run's steps see, so a
//! replay (same seed, same clock) is identical.

use std::sync::Arc;
use std::time::Duration;
use wasmtime_wasi::HostWallClock;

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
pub(crate) fn seeded(seed: u64, purpose: &'static str) -> Cycle {
    Cycle {
        bytes: cycle_of(seed, purpose),
        at: 0,
    }
}

/// The bytes of one cycle, repeated for ever: the stream of wasmtime's
/// `Deterministic` over the same bytes (`next_u32` big-endian from the next
/// four bytes, `next_u64` two of those, high first, `fill_bytes` in order),
/// without a copy of the cycle per step: every step of a run shares the
/// run's cycle.
pub(crate) struct Cycle {
    bytes: Arc<[u8]>,
    at: usize,
}

impl Cycle {
    fn next_byte(&mut self) -> u8 {
        let b = self.bytes[self.at];
        self.at = (self.at + 1) % self.bytes.len();
        b
    }
}

impl rand_core::TryRng for Cycle {
    type Error = std::convert::Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
        let mut word = [0u8; 4];
        for b in &mut word {
            *b = self.next_byte();
        }
        Ok(u32::from_be_bytes(word))
    }

    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        let high = self.try_next_u32()?;
        let low = self.try_next_u32()?;
        Ok((u64::from(high) << 32) | u64::from(low))
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Self::Error> {
        let mut dst = dst;
        while !dst.is_empty() {
            let run = (self.bytes.len() - self.at).min(dst.len());
            let (head, rest) = dst.split_at_mut(run);
            head.copy_from_slice(&self.bytes[self.at..self.at + run]);
            self.at = (self.at + run) % self.bytes.len();
            dst = rest;
        }
        Ok(())
    }
}

/// The bytes of one cycle for (`seed`, `purpose`). Every step of a run uses
/// the run's seed (most runs the default, 0), so the last few cycles are
/// kept per thread rather than derived again with blake3 per step (8 KiB
/// per step, a few µs of a warm step), and shared, not copied.
fn cycle_of(seed: u64, purpose: &'static str) -> Arc<[u8]> {
    use std::cell::RefCell;
    const KEPT: usize = 4;
    /// A cycle and the seed and purpose it was derived from.
    type Kept = (u64, &'static str, Arc<[u8]>);
    thread_local! {
        static CYCLES: RefCell<Vec<Kept>> = const { RefCell::new(Vec::new()) };
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
        let bytes: Arc<[u8]> = bytes.into();
        if cycles.len() == KEPT {
            cycles.remove(0);
        }
        cycles.push((seed, purpose, bytes.clone()));
        bytes
    })
}

/// The `insecure-seed` value (HashMap seeds in Rust guests) for `seed`. The
/// last seed's value is kept per thread: every step of a run asks with the
/// run's seed, and deriving it (two blake3 compressions) was ~1 % of a warm
/// step.
pub(crate) fn insecure_seed(seed: u64) -> u128 {
    use std::cell::Cell;
    thread_local! {
        static LAST: Cell<Option<(u64, u128)>> = const { Cell::new(None) };
    }
    LAST.with(|last| match last.get() {
        Some((s, value)) if s == seed => value,
        _ => {
            let value = derive_insecure_seed(seed);
            last.set(Some((seed, value)));
            value
        }
    })
}

fn derive_insecure_seed(seed: u64) -> u128 {
    let hash = blake3::derive_key("lobster 2026 wasi insecure-seed", &seed.to_le_bytes());
    u128::from_le_bytes(hash[..16].try_into().unwrap_or([0; 16]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::Rng;
    use wasmtime_wasi::Deterministic;

    /// The shared cycle gives the very stream wasmtime's `Deterministic`
    /// gave over the same bytes (recorded runs replay the same), across the
    /// cycle's end, for every call `wasi:random` makes.
    #[test]
    fn the_shared_cycle_is_the_deterministic_stream() {
        for (seed, purpose) in [(0, "lobster 2026 wasi secure-random"), (7, "p")] {
            let mut ours = seeded(seed, purpose);
            let mut theirs = Deterministic::new(cycle_of(seed, purpose).to_vec());
            for round in 0..3000 {
                match round % 4 {
                    0 => assert_eq!(ours.next_u32(), theirs.next_u32()),
                    1 => assert_eq!(ours.next_u64(), theirs.next_u64()),
                    _ => {
                        let n = (round * 7) % 5000;
                        let (mut a, mut b) = (vec![0u8; n], vec![0u8; n]);
                        ours.fill_bytes(&mut a);
                        theirs.fill_bytes(&mut b);
                        assert_eq!(a, b, "round {round}");
                    }
                }
            }
        }
        // The kept insecure seed is the derived one, for each seed in turn.
        for seed in [0, 1, 0, u64::MAX] {
            assert_eq!(insecure_seed(seed), derive_insecure_seed(seed));
        }
        assert_ne!(insecure_seed(0), insecure_seed(1));
        // Steps of one run share the cycle rather than copy it.
        let (a, b) = (seeded(3, "q"), seeded(3, "q"));
        assert!(Arc::ptr_eq(&a.bytes, &b.bytes));
    }
}
