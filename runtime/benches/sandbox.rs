//! Sandbox costs (build the guests first: tests/build-guests.sh):
//! - `step/noop`: new store + instantiate (`InstancePre`) + call of a no-op
//!   step with the compiled component in memory (target ≤ 50 µs median);
//! - `step/noop-10-items`: the same with ten small items in and out;
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

fn bench(c: &mut Criterion) {
    let Some(path) = guest("noop.wasm") else {
        return;
    };
    let tmp = tempfile::tempdir().expect("temp dir");
    let cache = ArtifactCache::in_state_dir(tmp.path());
    let noop = sandbox::load_file(&path, &cache).expect("noop loads");
    let env = StepEnv::closed();
    let l = limits();

    c.bench_function("step/noop", |b| {
        b.iter(|| noop.run("noop", &[], &[], &env, &l).expect("runs"))
    });
    let items: Vec<_> = (0..10)
        .map(|i| json!({"id": i, "name": format!("item-{i}")}))
        .collect();
    c.bench_function("step/noop-10-items", |b| {
        b.iter(|| noop.run("noop", &[], &items, &env, &l).expect("runs"))
    });

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
