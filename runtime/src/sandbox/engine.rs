//! The one wasmtime [`Engine`] of the process, created on first use (never
//! at start-up): component model, fuel, epoch interruption, and a linker
//! with WASI 0.2 and the `lobster:step/host` functions. An epoch ticker
//! thread runs only while steps run.
//!
//! Memories are allocated per instance ([`Allocation`]). By default each
//! linear memory sits in its own 4 GiB reservation with guard pages, so
//! compiled code needs no bounds checks; under a finite address-space limit
//! (`ulimit -v`) the engine reserves nothing beyond what memories use and
//! checks bounds instead. wasmtime's pooling allocator is available, but
//! not the default for one-shot processes: its up-front reservation costs
//! ~3 ms per process, more than it saves for the few steps one Lobster
//! process runs. A long-running process (`lobster serve`) asks for it with
//! [`prefer_pooling`]; there every step waits for one of the pool's
//! [`MAX_CONCURRENT_INSTANCES`] slots ([`SandboxEngine::instance_slot`])
//! instead of failing when the pool is full.

use super::bindings::Step;
use super::error::SandboxError;
use super::host::HostState;
use crate::kernel::limits::{MAX_INSTANCES, MAX_MEMORIES, MAX_MEMORY_BYTES, MAX_TABLES};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::thread::Thread;
use std::time::{Duration, Instant};
use wasmtime::component::{HasSelf, Linker};
use wasmtime::{Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

/// How often the epoch advances while a step runs (deadline granularity).
pub const EPOCH_TICK: Duration = Duration::from_millis(1);
/// Maximum wasm stack per step.
pub const MAX_WASM_STACK: usize = 1 << 20;
/// Steps that may run at the same time in one process with the pooling
/// allocator (its pool size); more wait for a slot.
pub const MAX_CONCURRENT_INSTANCES: u32 = 64;
/// Bytes of a freed pool slot's linear memory kept resident (zeroed in
/// place) for the next step; see `config`. At most this much memory stays
/// committed per pool slot between steps.
pub const KEEP_RESIDENT: usize = 1 << 20;
/// Major version of wasmtime the cache keys include.
pub const WASMTIME_MAJOR: &str = "48";

/// How the engine gives instances their memories and tables; chosen once
/// per process (`LOBSTER_WASM_ALLOCATOR`, else by the address-space limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allocation {
    /// Per instance; every linear memory in a 4 GiB reservation with guard
    /// pages, no bounds checks. The default.
    Reserved,
    /// Per instance; no reservation beyond a memory's size, explicit
    /// bounds checks (slower code). The default under a finite `ulimit -v`.
    Compact,
    /// wasmtime's pooling allocator: instance slots reserved up front.
    Pooling,
}

impl Allocation {
    /// The name `LOBSTER_WASM_ALLOCATOR` uses.
    pub fn name(self) -> &'static str {
        match self {
            Allocation::Reserved => "reserved",
            Allocation::Compact => "compact",
            Allocation::Pooling => "pooling",
        }
    }

    /// `LOBSTER_WASM_ALLOCATOR` if set, else [`Allocation::Compact`] when the
    /// process has a finite address-space limit, else
    /// [`Allocation::Pooling`] when the process asked for it
    /// ([`prefer_pooling`]), else [`Allocation::Reserved`].
    pub fn from_env() -> Result<Self, SandboxError> {
        let var = std::env::var("LOBSTER_WASM_ALLOCATOR").ok();
        Self::choose(
            var.as_deref(),
            address_space_limited(),
            POOLING_PREFERRED.load(Ordering::SeqCst),
        )
    }

    /// [`Allocation::from_env`] given the variable's value, whether the
    /// address space is limited and whether pooling was preferred.
    fn choose(var: Option<&str>, limited: bool, pooling: bool) -> Result<Self, SandboxError> {
        match var {
            Some("reserved") => Ok(Allocation::Reserved),
            Some("compact") => Ok(Allocation::Compact),
            Some("pooling") => Ok(Allocation::Pooling),
            None | Some("") if limited => Ok(Allocation::Compact),
            None | Some("") if pooling => Ok(Allocation::Pooling),
            None | Some("") => Ok(Allocation::Reserved),
            Some(other) => Err(SandboxError::Engine(format!(
                "LOBSTER_WASM_ALLOCATOR must be reserved, compact or pooling, got {other:?}"
            ))),
        }
    }
}

static POOLING_PREFERRED: AtomicBool = AtomicBool::new(false);

/// Make [`Allocation::Pooling`] the default of this process (a long-running
/// server: the pool's set-up is paid once, and each step then reuses a
/// warm slot instead of mapping and unmapping a 4 GiB reservation).
/// `LOBSTER_WASM_ALLOCATOR` and a finite `ulimit -v` still decide first.
/// Must be called before the engine starts; returns whether it took effect.
pub fn prefer_pooling() -> bool {
    if engine_started() {
        return engine().is_ok_and(|e| e.allocation() == Allocation::Pooling);
    }
    POOLING_PREFERRED.store(true, Ordering::SeqCst);
    true
}

/// Whether `RLIMIT_AS` (`ulimit -v`) is finite.
fn address_space_limited() -> bool {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one `rlimit` through a valid pointer.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) } == 0;
    ok && limit.rlim_cur != libc::RLIM_INFINITY
}

/// The process-wide engine and its linker.
pub struct SandboxEngine {
    allocation: Allocation,
    engine: Engine,
    linker: Linker<HostState>,
    fingerprint: String,
    ticker: Ticker,
    slots: Option<Arc<Slots>>,
}

static ENGINE: OnceLock<Result<SandboxEngine, String>> = OnceLock::new();

/// The engine, created on the first call.
pub fn engine() -> Result<&'static SandboxEngine, SandboxError> {
    ENGINE
        .get_or_init(|| {
            SandboxEngine::new().map_err(|e| match e {
                SandboxError::Engine(message) => message,
                other => other.to_string(),
            })
        })
        .as_ref()
        .map_err(|e| SandboxError::Engine(e.clone()))
}

static FUEL_OFF: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Run steps without fuel metering (epoch deadline only): a trusted
/// policy's `fuel = false`. Fuel costs an interpreter ~50 % CPU (measured:
/// runtime/benches/polyglot.sh). Must be called before the engine starts;
/// returns whether it took effect. Compiled code differs, so the cache key
/// (fingerprint) does too.
pub fn disable_fuel() -> bool {
    if engine_started() {
        return !fuel_enabled();
    }
    FUEL_OFF.store(true, Ordering::SeqCst);
    true
}

/// Whether steps are metered with fuel (the default).
pub fn fuel_enabled() -> bool {
    !FUEL_OFF.load(Ordering::SeqCst)
}

/// Whether the engine was created yet (it is not, until a wasm step is
/// resolved or run).
pub fn engine_started() -> bool {
    ENGINE.get().is_some()
}

fn config(allocation: Allocation) -> Config {
    let mut config = Config::new();
    config
        .wasm_component_model(true)
        .consume_fuel(fuel_enabled())
        .epoch_interruption(true)
        .max_wasm_stack(MAX_WASM_STACK)
        .parallel_compilation(true);
    match allocation {
        // wasmtime's defaults: a 4 GiB reservation and guard per memory.
        Allocation::Reserved => return config,
        Allocation::Compact => {
            config
                .memory_reservation(0)
                .memory_guard_size(0)
                .memory_reservation_for_growth(1 << 20);
            return config;
        }
        Allocation::Pooling => {}
    }
    // Per component, what a store allows under every allocation (so no
    // component that runs per instance fails in the pool), and enough of
    // each for MAX_CONCURRENT_INSTANCES such components at once: with
    // `instance_slot` gating instantiation, the pool is never exhausted.
    // The slots are address space (reserved, not committed).
    let n = MAX_CONCURRENT_INSTANCES;
    let (instances, memories, tables) =
        (MAX_INSTANCES as u32, MAX_MEMORIES as u32, MAX_TABLES as u32);
    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(n)
        .total_core_instances(n * instances)
        .total_memories(n * memories)
        .total_tables(n * tables)
        .max_core_instances_per_component(instances)
        .max_memories_per_component(memories)
        .max_tables_per_component(tables)
        .max_memory_size(MAX_MEMORY_BYTES)
        // A freed slot's dirty pages, up to KEEP_RESIDENT bytes of them,
        // are found with Linux's PAGEMAP_SCAN (6.7+) and zeroed in place
        // with memset; only the rest is given back with madvise. The next
        // step in the slot (the pool prefers the slot its component used
        // last) then takes no page fault on its working set. Without the
        // scan (before Linux 6.7) a slot's first bytes are zeroed whether
        // used or not, so fewer are kept.
        .pagemap_scan(Enabled::Auto)
        .linear_memory_keep_resident(if PoolingAllocationConfig::is_pagemap_scan_available() {
            KEEP_RESIDENT
        } else {
            // Measured on the serve benchmark without the scan (5 Rust steps
            // per run): 1 MiB made memset 12 % of the server's CPU; 64 KiB
            // served ~10 % more runs/s than 1 MiB, and slightly more than 0.
            64 << 10
        })
        .table_keep_resident(1 << 16);
    // Give freed memory back to the kernel in batches of 16 slots (one
    // madvise and TLB shootdown per batch instead of per slot). A module's
    // data segments are mapped into its slot copy-on-write from a memory
    // image (wasmtime's default): the step copies only the pages it
    // writes, the first time they are written in that slot, and the reset
    // above copies those pages back from the image in place, so the next
    // step in the slot takes no page fault either. (Before the dirty pages
    // were found with PAGEMAP_SCAN, the reset gave them back with madvise
    // and every step faulted them in again, so images were off and every
    // instantiation copied all data segments; runtime/benches/RESULTS.md.)
    pool.decommit_batch_size(16);
    config.memory_init_cow(true);
    config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    config
}

/// The parts of our configuration that change compiled code, as text (the
/// allocation is hashed next to it).
const CONFIG_TEXT: &str = "lobster-sandbox v1; component-model; fuel; epoch; stack=1MiB";

impl SandboxEngine {
    fn new() -> Result<Self, SandboxError> {
        let mut allocation = Allocation::from_env()?;
        let mut engine = Engine::new(&config(allocation));
        let asked = std::env::var("LOBSTER_WASM_ALLOCATOR").is_ok_and(|v| !v.is_empty());
        if engine.is_err() && allocation == Allocation::Pooling && !asked {
            // Only preferred (`prefer_pooling`), not asked for: a host whose
            // address space cannot hold the pool's reservation (a 39-bit
            // arm64 kernel) runs steps per instance rather than not at all.
            allocation = Allocation::Reserved;
            engine = Engine::new(&config(allocation));
        }
        let engine = engine.map_err(|e| SandboxError::Engine(e.to_string()))?;
        let mut linker: Linker<HostState> = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)
            .map_err(|e| SandboxError::Engine(e.to_string()))?;
        Step::add_to_linker::<HostState, HasSelf<HostState>>(&mut linker, |s| s)
            .map_err(|e| SandboxError::Engine(e.to_string()))?;
        // lobster:step@0.2.0 (host again, plus broker) beside 0.1.0.
        super::bindings::v02::Step::add_to_linker::<HostState, HasSelf<HostState>>(
            &mut linker,
            |s| s,
        )
        .map_err(|e| SandboxError::Engine(e.to_string()))?;
        super::sleep::add_bounded_sleep(&mut linker)
            .map_err(|e| SandboxError::Engine(e.to_string()))?;
        let fingerprint = fingerprint(&engine, allocation);
        let ticker = Ticker::start(engine.clone());
        let slots =
            (allocation == Allocation::Pooling).then(|| Slots::new(MAX_CONCURRENT_INSTANCES));
        Ok(SandboxEngine {
            allocation,
            engine,
            linker,
            fingerprint,
            ticker,
            slots,
        })
    }

    /// Under [`Allocation::Pooling`], one of the pool's
    /// [`MAX_CONCURRENT_INSTANCES`] slots for one step execution (held until
    /// its store is dropped), waiting while all are taken: until one is
    /// free, `deadline` passes ([`SlotWait::Deadline`]) or `cancelled`
    /// says so ([`SlotWait::Cancelled`]). `None` for the other allocations,
    /// which have no pool.
    pub(crate) fn instance_slot(
        &self,
        deadline: Option<Instant>,
        cancelled: impl Fn() -> bool,
    ) -> Result<Option<SlotGuard>, SlotWait> {
        match &self.slots {
            Some(slots) => slots.acquire(deadline, cancelled).map(Some),
            None => Ok(None),
        }
    }

    /// How instances get their memories.
    pub fn allocation(&self) -> Allocation {
        self.allocation
    }

    /// The wasmtime engine.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    pub(crate) fn linker(&self) -> &Linker<HostState> {
        &self.linker
    }

    /// Hex digest of wasmtime's version, the compile target and our
    /// configuration; part of every compiled-artefact cache key.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// Keep the epoch advancing until the guard drops.
    pub(crate) fn ticking(&self) -> TickGuard<'_> {
        self.ticker.enter()
    }
}

/// How often a step waiting for a pool slot looks at its cancellation.
const SLOT_POLL: Duration = Duration::from_millis(10);

/// The pooling allocator's slots in use (see [`SandboxEngine::instance_slot`]).
struct Slots {
    used: Mutex<u32>,
    freed: Condvar,
    max: u32,
}

impl Slots {
    fn new(max: u32) -> Arc<Slots> {
        Arc::new(Slots {
            used: Mutex::new(0),
            freed: Condvar::new(),
            max,
        })
    }

    fn acquire(
        self: &Arc<Self>,
        deadline: Option<Instant>,
        cancelled: impl Fn() -> bool,
    ) -> Result<SlotGuard, SlotWait> {
        let mut used = self.used.lock().unwrap_or_else(|p| p.into_inner());
        while *used >= self.max {
            if cancelled() {
                return Err(SlotWait::Cancelled);
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                return Err(SlotWait::Deadline);
            }
            // Wake at least every 10 ms to notice a cancellation.
            let wait = deadline
                .map_or(SLOT_POLL, |d| d.saturating_duration_since(now))
                .min(SLOT_POLL);
            used = self
                .freed
                .wait_timeout(used, wait)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        *used += 1;
        Ok(SlotGuard(self.clone()))
    }
}

/// One pool slot, given back when dropped.
pub(crate) struct SlotGuard(Arc<Slots>);

impl Drop for SlotGuard {
    fn drop(&mut self) {
        let mut used = self.0.used.lock().unwrap_or_else(|p| p.into_inner());
        *used = used.saturating_sub(1);
        self.0.freed.notify_one();
    }
}

/// Why a step stopped waiting for a pool slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SlotWait {
    /// Its deadline passed first.
    Deadline,
    /// Its run was cancelled first.
    Cancelled,
}

/// A `Hasher` that feeds blake3, so the fingerprint is stable across runs.
struct Blake3Hasher(blake3::Hasher);

impl Hasher for Blake3Hasher {
    fn finish(&self) -> u64 {
        let h = self.0.finalize();
        u64::from_le_bytes(h.as_bytes()[..8].try_into().unwrap_or([0; 8]))
    }

    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
}

fn fingerprint(engine: &Engine, allocation: Allocation) -> String {
    let mut h = Blake3Hasher(blake3::Hasher::new());
    CONFIG_TEXT.hash(&mut h);
    if !fuel_enabled() {
        "no-fuel".hash(&mut h);
    }
    allocation.name().hash(&mut h);
    if allocation == Allocation::Pooling {
        // The pool's memory initialisation changed (copy-on-write images
        // again, reset in place): artefacts of earlier pooling engines are
        // not reused.
        "pool: cow, reset in place".hash(&mut h);
    }
    WASMTIME_MAJOR.hash(&mut h);
    engine.precompile_compatibility_hash().hash(&mut h);
    h.0.finalize().to_hex()[..32].to_string()
}

/// Advances the engine's epoch every [`EPOCH_TICK`] while at least one step
/// runs; parked otherwise.
struct Ticker {
    active: Arc<AtomicUsize>,
    thread: Option<Thread>,
}

/// While alive, the ticker keeps ticking.
pub(crate) struct TickGuard<'a>(&'a Ticker);

impl Drop for TickGuard<'_> {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Ticker {
    fn start(engine: Engine) -> Ticker {
        let active = Arc::new(AtomicUsize::new(0));
        let seen = active.clone();
        let handle = std::thread::Builder::new()
            .name("lobster-epoch".into())
            .spawn(move || loop {
                if seen.load(Ordering::SeqCst) == 0 {
                    std::thread::park();
                } else {
                    std::thread::sleep(EPOCH_TICK);
                    engine.increment_epoch();
                }
            })
            .ok();
        Ticker {
            active,
            thread: handle.map(|h| h.thread().clone()),
        }
    }

    fn enter(&self) -> TickGuard<'_> {
        self.active.fetch_add(1, Ordering::SeqCst);
        if let Some(t) = &self.thread {
            t.unpark();
        }
        TickGuard(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serve_prefers_pooling_unless_told_otherwise() {
        use Allocation::*;
        assert_eq!(Allocation::choose(None, false, false).unwrap(), Reserved);
        assert_eq!(Allocation::choose(None, false, true).unwrap(), Pooling);
        assert_eq!(Allocation::choose(Some(""), false, true).unwrap(), Pooling);
        // A finite `ulimit -v` and the variable still decide first.
        assert_eq!(Allocation::choose(None, true, true).unwrap(), Compact);
        assert_eq!(
            Allocation::choose(Some("reserved"), false, true).unwrap(),
            Reserved
        );
        assert!(Allocation::choose(Some("mmap"), false, true).is_err());
    }

    #[test]
    fn a_full_pool_waits_until_a_slot_is_free_its_deadline_or_its_cancellation() {
        let slots = Slots::new(1);
        let first = slots.acquire(None, || false).unwrap();
        let soon = Instant::now() + Duration::from_millis(30);
        assert_eq!(
            slots.acquire(Some(soon), || false).err(),
            Some(SlotWait::Deadline)
        );
        assert!(Instant::now() >= soon);
        assert_eq!(
            slots.acquire(None, || true).err(),
            Some(SlotWait::Cancelled)
        );
        // Given back from another thread: the waiter gets it.
        let giver = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            drop(first);
        });
        let later = Instant::now() + Duration::from_secs(10);
        let second = slots.acquire(Some(later), || false);
        assert!(second.is_ok());
        giver.join().unwrap();
        assert_eq!(*slots.used.lock().unwrap(), 1);
        drop(second);
        assert_eq!(*slots.used.lock().unwrap(), 0);
    }
}
