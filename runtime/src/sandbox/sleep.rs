//! Bounded sleeping. WASI's `subscribe-duration`/`subscribe-instant` would
//! block the host thread for as long as the guest asks, where epoch
//! interruption cannot reach it; these replacements wake up at the step's
//! deadline or when the run is cancelled, so the guest returns to wasm code
//! and the epoch check stops it with the right error.

use super::host::HostState;
use crate::kernel::Cancel;
use std::time::{Duration, Instant};
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::p2::{subscribe, DynPollable, Pollable};
use wasmtime_wasi::HostMonotonicClock;

/// The WASI monotonic-clock interface wasmtime-wasi 48 links.
const MONOTONIC_CLOCK: &str = "wasi:clocks/monotonic-clock@0.2.12";
/// How often a sleeping guest checks for cancellation.
const CANCEL_POLL: Duration = Duration::from_millis(10);

/// The step's monotonic clock: nanoseconds since the store was created.
#[derive(Clone, Copy)]
pub(crate) struct StepMonotonic(pub Instant);

impl HostMonotonicClock for StepMonotonic {
    fn resolution(&self) -> u64 {
        1
    }

    fn now(&self) -> u64 {
        self.0.elapsed().as_nanos() as u64
    }
}

/// A sleep that also ends at the step's deadline or on cancellation.
struct GuardedSleep {
    until: Option<tokio::time::Instant>,
    deadline: Option<tokio::time::Instant>,
    cancel: Option<Cancel>,
}

#[wasmtime_wasi::async_trait]
impl Pollable for GuardedSleep {
    async fn ready(&mut self) {
        loop {
            let now = tokio::time::Instant::now();
            let stop = match (self.until, self.deadline) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            if stop.is_some_and(|t| now >= t)
                || self.cancel.as_ref().is_some_and(Cancel::is_cancelled)
            {
                return;
            }
            let next = now + CANCEL_POLL;
            tokio::time::sleep_until(stop.map_or(next, |t| t.min(next))).await;
        }
    }
}

fn sleep_for(state: &mut HostState, nanos: u64) -> wasmtime::Result<Resource<DynPollable>> {
    let until = tokio::time::Instant::now().checked_add(Duration::from_nanos(nanos));
    let sleep = GuardedSleep {
        until,
        deadline: state.deadline.map(tokio::time::Instant::from_std),
        cancel: state.cancel.clone(),
    };
    let resource = state.table.push(sleep)?;
    subscribe(&mut state.table, resource)
}

/// Replace the monotonic clock's `subscribe-*` functions in `linker`.
pub(crate) fn add_bounded_sleep(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let mut clock = linker.instance(MONOTONIC_CLOCK)?;
    clock.func_wrap("subscribe-duration", |mut store, (nanos,): (u64,)| {
        Ok((sleep_for(store.data_mut(), nanos)?,))
    })?;
    clock.func_wrap("subscribe-instant", |mut store, (when,): (u64,)| {
        let state: &mut HostState = store.data_mut();
        let now = state.monotonic.now();
        Ok((sleep_for(state, when.saturating_sub(now))?,))
    })?;
    linker.allow_shadowing(false);
    Ok(())
}
