//! A fresh `Store` per step execution: WASI context from the step's
//! environment, memory limiter, fuel, and an epoch deadline that also
//! watches the run's cancellation.

use super::determinism::{insecure_seed, seeded, FixedClock};
use super::engine::{SandboxEngine, SlotWait};
use super::env::StepEnv;
use super::error::SandboxError;
use super::host::{HostState, ScopedState};
use super::limits::MemoryLimiter;
use super::output::CappedPipe;
use super::sleep::StepMonotonic;
use crate::kernel::{Access, EffectiveLimits};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::{Store, UpdateDeadline};
use wasmtime_wasi::p2::pipe::MemoryInputPipe;
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

/// Why the epoch callback stopped a guest.
pub(crate) const STOP_NONE: u8 = 0;
pub(crate) const STOP_DEADLINE: u8 = 1;
pub(crate) const STOP_CANCELLED: u8 = 2;

/// The error the epoch callback traps with.
#[derive(Debug, thiserror::Error)]
#[error("interrupted")]
pub(crate) struct Interrupted;

/// A store ready for one call, plus what classification needs afterwards.
pub(crate) struct StepStore {
    pub(crate) store: Store<HostState>,
    pub(crate) stop: Arc<AtomicU8>,
    /// The pool slot the store's instances use (pooling allocator only);
    /// declared after `store` so it is given back after the store is dropped.
    _slot: Option<super::engine::SlotGuard>,
}

/// Build the store for `step` with `argv` and `stdin`.
pub(crate) fn new_store(
    engine: &SandboxEngine,
    step: &str,
    limits: &EffectiveLimits,
    env: &StepEnv,
    argv: &[String],
    stdin: Vec<u8>,
) -> Result<StepStore, SandboxError> {
    let deadline = limits.timeout.map(|t| Instant::now() + t);
    let slot = engine
        .instance_slot(deadline, || {
            env.cancel.as_ref().is_some_and(|c| c.is_cancelled())
        })
        .map_err(|why| match why {
            SlotWait::Deadline => SandboxError::Timeout {
                step: step.to_string(),
                limit_ms: limits.timeout.map_or(0, |t| t.as_millis() as u64),
            },
            SlotWait::Cancelled => SandboxError::Cancelled {
                step: step.to_string(),
            },
        })?;
    let monotonic = StepMonotonic(Instant::now());
    let stdout = CappedPipe::new(limits.output_bytes);
    let stderr = CappedPipe::new(limits.output_bytes);
    let mut wasi = WasiCtxBuilder::new();
    wasi.stdin(MemoryInputPipe::new(stdin))
        .stdout(stdout.clone())
        .stderr(stderr.clone())
        .args(argv)
        .allow_blocking_current_thread(true)
        // wasi:sockets is linked (componentize-py components import it)
        // but refuses every use: no TCP or UDP socket can be created, no
        // name is looked up, and no address passes the check. This is
        // what lets the import check accept the import (sandbox/inspect.rs).
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false)
        .socket_addr_check(|_, _| Box::pin(async { false }))
        .wall_clock(FixedClock(Duration::from_millis(env.wall_clock_ms)))
        .monotonic_clock(monotonic)
        .secure_random(seeded(env.random_seed, "lobster 2026 wasi secure-random"))
        .insecure_random(seeded(env.random_seed, "lobster 2026 wasi insecure-random"))
        .insecure_random_seed(insecure_seed(env.random_seed));
    for (k, v) in &env.env {
        wasi.env(k, v);
    }
    for dir in &env.dirs {
        let perms = match dir.access {
            Access::Read => FsPerms::ReadOnly,
            Access::ReadWrite => FsPerms::ReadWrite,
        };
        wasi.preopened_dir(dir.open_path(), &dir.guest, perms)
            .map_err(|e| SandboxError::Grant(format!("cannot open {}: {e}", dir.host.display())))?;
    }
    let step_name: Arc<str> = Arc::from(step);
    let state = env.state.as_ref().map(|(store, scope)| ScopedState {
        store: store.clone(),
        scope: scope.clone(),
        step: step.to_string(),
    });
    let data = HostState {
        wasi: wasi.build(),
        table: wasmtime::component::ResourceTable::new(),
        limiter: MemoryLimiter::new(limits.memory_bytes),
        step: step_name,
        stdout,
        stderr,
        state,
        log: env.log.clone(),
        output_cap: limits.output_bytes,
        deadline,
        cancel: env.cancel.clone(),
        monotonic,
        state_written: 0,
        broker: env.broker.clone(),
    };
    let mut store = Store::new(engine.engine(), data);
    store.limiter(|s| &mut s.limiter);
    if super::engine::fuel_enabled() {
        store
            .set_fuel(limits.fuel)
            .map_err(|e| SandboxError::Engine(e.to_string()))?;
    }
    let stop = Arc::new(AtomicU8::new(STOP_NONE));
    let cancel = env.cancel.clone();
    let flag = stop.clone();
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(move |_| {
        if cancel.as_ref().is_some_and(|c| c.is_cancelled()) {
            flag.store(STOP_CANCELLED, Ordering::SeqCst);
            return Err(wasmtime::Error::new(Interrupted));
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            flag.store(STOP_DEADLINE, Ordering::SeqCst);
            return Err(wasmtime::Error::new(Interrupted));
        }
        Ok(UpdateDeadline::Continue(1))
    });
    Ok(StepStore {
        store,
        stop,
        _slot: slot,
    })
}
