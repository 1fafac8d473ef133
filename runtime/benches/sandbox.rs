//! Sandbox costs (build the guests first: tests/build-guests.sh):
//! - `step/noop/<allocation>`: one warm step as `lobster serve` runs it — a
//!   store with the step's limits and grants, instantiate (`InstancePre`),
//!   call `run` of a no-op step, read its output — with the compiled
//!   component in memory. The allocation is serve's (the pooling
//!   allocator) unless `LOBSTER_WASM_ALLOCATOR` says otherwise (issue 27
//!   target: ≤ 10 µs median under pooling);
//! - `step/noop-10-items/<allocation>`: the same with ten small items in and out;
//! - what a user would use instead, in the same run:
//!   `baseline/wasmtime-pooling`: the same component under bare wasmtime as
//!   its documentation shows it (pooling allocator, `InstancePre`, a store
//!   with an empty WASI context, fuel and an epoch deadline, no output caps,
//!   no grants, no report), and `baseline/spawn-true`: starting a process
//!   per step (`/bin/true`, which does nothing);
//! - `load/cached`: read a component, blake3 it, validate and deserialize its
//!   compiled artefact from the on-disk cache (target ≤ 1 ms).

use criterion::{criterion_group, criterion_main, Criterion};
use lobster::sandbox::{self, ArtifactCache, EffectiveLimits, StepEnv};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn guest(name: &str) -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/guests/target/wasm32-wasip2/release")
        .join(name);
    if p.is_file() {
        Some(p)
    } else {
        eprintln!(
            "!!!!!!!!!! SKIPPED: {} missing; run tests/build-guests.sh !!!!!!!!!!",
            p.display()
        );
        None
    }
}

fn limits() -> EffectiveLimits {
    EffectiveLimits {
        fuel: sandbox::DEFAULT_FUEL,
        memory_bytes: sandbox::DEFAULT_MEMORY_BYTES,
        timeout: Some(Duration::from_secs(10)),
        output_bytes: sandbox::DEFAULT_OUTPUT_BYTES,
    }
}

/// The noop step under bare wasmtime: what an embedder writes by following
/// wasmtime's documentation, with the same fuel and epoch settings so the
/// compiled code is comparable.
mod bare {
    use wasmtime::component::{HasSelf, Linker, ResourceTable};
    use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store};
    use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

    wasmtime::component::bindgen!({ world: "step", path: "../wit/v0.2" });

    pub struct Host {
        wasi: WasiCtx,
        table: ResourceTable,
    }

    impl WasiView for Host {
        fn ctx(&mut self) -> WasiCtxView<'_> {
            WasiCtxView {
                ctx: &mut self.wasi,
                table: &mut self.table,
            }
        }
    }

    impl self::lobster::step::host::Host for Host {
        fn log(&mut self, _: self::lobster::step::types::LogLevel, _: String) {}
        fn state_get(&mut self, _: String) -> Option<String> {
            None
        }
        fn state_set(&mut self, _: String, _: String) -> Result<(), String> {
            Ok(())
        }
    }

    impl self::lobster::step::types::Host for Host {}

    impl self::lobster::step::broker::Host for Host {
        fn invoke_tool(
            &mut self,
            _: String,
            _: Option<String>,
            _: String,
        ) -> Result<String, String> {
            Err("no broker".into())
        }
        fn llm_json(&mut self, _: String) -> Result<String, String> {
            Err("no broker".into())
        }
    }

    /// A pre-instantiated noop and its engine.
    pub struct Noop {
        engine: Engine,
        pre: StepPre<Host>,
    }

    impl Noop {
        pub fn new(wasm: &[u8]) -> Noop {
            let mut config = Config::new();
            config
                .wasm_component_model(true)
                .consume_fuel(true)
                .epoch_interruption(true)
                .allocation_strategy(InstanceAllocationStrategy::Pooling(
                    PoolingAllocationConfig::default(),
                ));
            let engine = Engine::new(&config).expect("engine");
            let component = wasmtime::component::Component::new(&engine, wasm).expect("compiles");
            let mut linker = Linker::new(&engine);
            wasmtime_wasi::p2::add_to_linker_sync(&mut linker).expect("wasi");
            Step::add_to_linker::<Host, HasSelf<Host>>(&mut linker, |h| h).expect("host");
            let pre = StepPre::new(linker.instantiate_pre(&component).expect("links"))
                .expect("step world");
            Noop { engine, pre }
        }

        pub fn run(&self, input: &str) -> String {
            let host = Host {
                wasi: WasiCtx::builder().build(),
                table: ResourceTable::new(),
            };
            let mut store = Store::new(&self.engine, host);
            store.set_fuel(u64::MAX / 2).expect("fuel");
            store.set_epoch_deadline(1_000_000);
            let step = self.pre.instantiate(&mut store).expect("instantiates");
            match step.call_run(&mut store, &[], input).expect("runs") {
                Ok(out) => out,
                Err(_) => panic!("noop failed"),
            }
        }
    }
}

fn bench(c: &mut Criterion) {
    let Some(path) = guest("noop.wasm") else {
        return;
    };
    // As `lobster serve` does: the pool, unless LOBSTER_WASM_ALLOCATOR decides.
    sandbox::engine::prefer_pooling();
    let tmp = tempfile::tempdir().expect("temp dir");
    let cache = ArtifactCache::in_state_dir(tmp.path());
    let noop = sandbox::load_file(&path, &cache).expect("noop loads");
    let allocation = sandbox::engine().expect("engine").allocation().name();
    let env = StepEnv::closed();
    let l = limits();

    c.bench_function(&format!("step/noop/{allocation}"), |b| {
        b.iter(|| noop.run("noop", &[], &[], &env, &l).expect("runs"))
    });
    let items: Vec<_> = (0..10)
        .map(|i| json!({"id": i, "name": format!("item-{i}")}))
        .collect();
    c.bench_function(&format!("step/noop-10-items/{allocation}"), |b| {
        b.iter(|| noop.run("noop", &[], &items, &env, &l).expect("runs"))
    });

    let bare = bare::Noop::new(&std::fs::read(&path).expect("read"));
    c.bench_function("baseline/wasmtime-pooling", |b| b.iter(|| bare.run("[]")));
    if Path::new("/bin/true").is_file() {
        c.bench_function("baseline/spawn-true", |b| {
            b.iter(|| {
                std::process::Command::new("/bin/true")
                    .status()
                    .expect("spawns")
            })
        });
    }

    let engine = sandbox::engine().expect("engine");
    c.bench_function("load/cached", |b| {
        b.iter(|| {
            let bytes = std::fs::read(&path).expect("read");
            let digest = sandbox::digest_of(&bytes);
            let (_component, outcome) = cache.load(engine, &bytes, &digest, &path).expect("load");
            assert_eq!(outcome, sandbox::CacheOutcome::Hit);
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
