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
//! not the default: its up-front reservation costs ~3 ms per process, more
//! than it saves for the few steps one Lobster process runs.

use super::bindings::Step;
use super::error::SandboxError;
use super::host::HostState;
use super::limits::MAX_MEMORY_BYTES;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::Thread;
use std::time::Duration;
use wasmtime::component::{HasSelf, Linker};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

/// How often the epoch advances while a step runs (deadline granularity).
pub const EPOCH_TICK: Duration = Duration::from_millis(1);
/// Maximum wasm stack per step.
pub const MAX_WASM_STACK: usize = 1 << 20;
/// Steps that may run at the same time in one process with the pooling
/// allocator (its pool size).
pub const MAX_CONCURRENT_INSTANCES: u32 = 64;
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
    /// [`Allocation::Reserved`].
    pub fn from_env() -> Result<Self, SandboxError> {
        match std::env::var("LOBSTER_WASM_ALLOCATOR").ok().as_deref() {
            Some("reserved") => Ok(Allocation::Reserved),
            Some("compact") => Ok(Allocation::Compact),
            Some("pooling") => Ok(Allocation::Pooling),
            None | Some("") if address_space_limited() => Ok(Allocation::Compact),
            None | Some("") => Ok(Allocation::Reserved),
            Some(other) => Err(SandboxError::Engine(format!(
                "LOBSTER_WASM_ALLOCATOR must be reserved, compact or pooling, got {other:?}"
            ))),
        }
    }
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
    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(MAX_CONCURRENT_INSTANCES)
        .total_core_instances(MAX_CONCURRENT_INSTANCES * 8)
        .total_memories(MAX_CONCURRENT_INSTANCES * 2)
        .total_tables(MAX_CONCURRENT_INSTANCES * 8)
        .max_core_instances_per_component(32)
        .max_memories_per_component(4)
        .max_tables_per_component(16)
        .max_memory_size(MAX_MEMORY_BYTES)
        .linear_memory_keep_resident(1 << 20)
        .table_keep_resident(1 << 16);
    config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    config
}

/// The parts of our configuration that change compiled code, as text (the
/// allocation is hashed next to it).
const CONFIG_TEXT: &str = "lobster-sandbox v1; component-model; fuel; epoch; stack=1MiB";

impl SandboxEngine {
    fn new() -> Result<Self, SandboxError> {
        let allocation = Allocation::from_env()?;
        let engine =
            Engine::new(&config(allocation)).map_err(|e| SandboxError::Engine(e.to_string()))?;
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
        Ok(SandboxEngine {
            allocation,
            engine,
            linker,
            fingerprint,
            ticker,
        })
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
