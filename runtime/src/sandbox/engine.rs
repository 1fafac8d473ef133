//! The one wasmtime [`Engine`] of the process, created on first use (never
//! at start-up): component model, fuel, epoch interruption, the pooling
//! allocator, and a linker with WASI 0.2 and the `lobster:step/host`
//! functions. An epoch ticker thread runs only while steps run.
//!
//! The pooling allocator reserves its address space up front (tens of GiB,
//! virtual only). Where that is refused — a strict `ulimit -v`, or
//! `LOBSTER_WASM_ALLOCATOR=on-demand` — the engine allocates per instance
//! instead, with explicit bounds checks and no large reservations: slower
//! to instantiate, same limits.

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
/// Steps that may run at the same time in one process (pool size).
pub const MAX_CONCURRENT_INSTANCES: u32 = 64;
/// Major version of wasmtime the cache keys include.
pub const WASMTIME_MAJOR: &str = "48";

/// How the engine gives instances their memories and tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allocation {
    /// The pooling allocator (the default): fast instantiation.
    Pooling,
    /// Per-instance allocation without large reservations (the fallback).
    OnDemand,
}

impl Allocation {
    /// The name `lobster doctor` and `LOBSTER_WASM_ALLOCATOR` use.
    pub fn name(self) -> &'static str {
        match self {
            Allocation::Pooling => "pooling",
            Allocation::OnDemand => "on-demand",
        }
    }
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

/// Whether the engine was created yet (it is not, until a wasm step is
/// resolved or run).
pub fn engine_started() -> bool {
    ENGINE.get().is_some()
}

fn config(allocation: Allocation) -> Config {
    let mut config = Config::new();
    config
        .wasm_component_model(true)
        .consume_fuel(true)
        .epoch_interruption(true)
        .max_wasm_stack(MAX_WASM_STACK)
        .parallel_compilation(true);
    if allocation == Allocation::OnDemand {
        // No virtual reservations beyond what a memory uses: bounds checks
        // instead of guard pages, so `ulimit -v` only has to cover real use.
        config
            .memory_reservation(0)
            .memory_guard_size(0)
            .memory_reservation_for_growth(1 << 20);
        return config;
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

/// The engine with the pooling allocator, or on-demand allocation when the
/// pool cannot be reserved or `LOBSTER_WASM_ALLOCATOR=on-demand` asks.
fn create_engine() -> Result<(Engine, Allocation), SandboxError> {
    let forced = std::env::var("LOBSTER_WASM_ALLOCATOR").ok();
    let pooled_error = match forced.as_deref() {
        Some("on-demand") => None,
        None | Some("") | Some("pooling") => match Engine::new(&config(Allocation::Pooling)) {
            Ok(engine) => return Ok((engine, Allocation::Pooling)),
            Err(e) => Some(e.to_string()),
        },
        Some(other) => {
            return Err(SandboxError::Engine(format!(
                "LOBSTER_WASM_ALLOCATOR must be pooling or on-demand, got {other:?}"
            )))
        }
    };
    Engine::new(&config(Allocation::OnDemand))
        .map(|engine| (engine, Allocation::OnDemand))
        .map_err(|e| {
            SandboxError::Engine(match pooled_error {
                Some(p) => format!("{p}; and without the pooling allocator: {e}"),
                None => e.to_string(),
            })
        })
}

/// The parts of our configuration that change compiled code, as text.
const CONFIG_TEXT: &str = "lobster-sandbox v1; component-model; fuel; epoch; stack=1MiB";

impl SandboxEngine {
    fn new() -> Result<Self, SandboxError> {
        let (engine, allocation) = create_engine()?;
        let mut linker: Linker<HostState> = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)
            .map_err(|e| SandboxError::Engine(e.to_string()))?;
        Step::add_to_linker::<HostState, HasSelf<HostState>>(&mut linker, |s| s)
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

    /// How instances are allocated (pooling unless that was refused).
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
