//! In-process benchmarks of Lobster's hot paths (criterion).
//!
//!     cargo bench -p lobster --bench pipeline
//!
//! Whole-process figures (start-up, shell steps, approval round trip, big
//! inputs through `exec`) come from `runtime/benches/compare.sh` instead.
//! Samples are kept few and short so a full run takes well under 2 minutes
//! on 2 cores.

use criterion::{black_box, criterion_group, criterion_main, BatchSize, Criterion};
use lobster::executor::{process_context, run_pipeline, Mode, Outcome};
use lobster::state::StateStore;
use lobster::value::{to_js_json, Item};
use serde_json::json;
use std::time::Duration;

const TAGS: [&str; 5] = ["alpha", "beta", "gamma", "delta", "epsilon"];

/// The same items as compare.sh's data files: `{"id","name","score","tag"}`.
fn items(n: u64) -> Vec<Item> {
    (0..n)
        .map(|i| {
            json!({
                "id": i,
                "name": format!("item-{i:07}"),
                "score": (i * 7919 + 13) % 101,
                "tag": TAGS[((i * 31 + 7) % 5) as usize],
            })
        })
        .collect()
}

/// A pipeline of `n` stages cycling through a few realistic ones.
fn long_pipeline(n: usize) -> String {
    const STAGES: [&str; 4] = [
        r#"exec --json --shell "echo '[{\"v\":1}]'""#,
        "where score>50",
        "sort --key score --desc",
        "head --n 10",
    ];
    (0..n)
        .map(|i| STAGES[i % STAGES.len()])
        .collect::<Vec<_>>()
        .join(" | ")
}

fn dsl(c: &mut Criterion) {
    let three =
        r#"exec --json --shell "echo '[{\"v\":1},{\"v\":2},{\"v\":3}]'" | where v>1 | json"#;
    let twenty = long_pipeline(20);
    let mut g = c.benchmark_group("dsl");
    g.bench_function("parse 3 stages", |b| {
        b.iter(|| lobster::dsl::parse(black_box(three)).unwrap())
    });
    g.bench_function("parse 20 stages", |b| {
        b.iter(|| lobster::dsl::parse(black_box(&twenty)).unwrap())
    });
    g.finish();
}

fn json(c: &mut Criterion) {
    let array = Item::Array(items(100_000));
    let text = serde_json::to_string(&array).unwrap();
    let mut g = c.benchmark_group("json");
    g.measurement_time(Duration::from_secs(4));
    g.bench_function("to_js_json 100k items", |b| {
        b.iter(|| to_js_json(black_box(&array)))
    });
    // What `exec --json` does with a child's stdout.
    g.bench_function("parse 100k items (6 MB)", |b| {
        b.iter(|| serde_json::from_str::<Item>(black_box(&text)).unwrap())
    });
    // What `exec --json` does now: array elements one by one from a reader.
    g.bench_function("stream-decode 100k items (6 MB)", |b| {
        b.iter(|| {
            let mut n = 0usize;
            lobster::process::decode::decode_json(black_box(text.as_bytes()), &mut |item| {
                n += 1;
                drop(item);
                true
            })
            .unwrap();
            assert_eq!(n, 100_000);
        })
    });
    g.finish();
}

fn executor(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let ctx = process_context(Mode::Tool, StateStore::new(dir.path())).build();
    let input = items(100_000);
    let mut g = c.benchmark_group("executor");
    g.measurement_time(Duration::from_secs(3));
    let above_50 = input
        .iter()
        .filter(|i| i["score"].as_u64() > Some(50))
        .count();
    // (pipeline, items it must yield): the whole query, then its stages alone.
    let cases = [
        ("where score>50 | sort --key score | head --n 10", 10),
        ("where score>50", above_50),
        ("sort --key score", input.len()),
        ("sort --key score --desc", input.len()),
        // Fused into a bounded top-K (memory O(K)); compare with the full sort.
        ("sort --key score | head --n 10", 10),
        ("sort --key name --desc | head --n 10", 10),
        ("where score>50 | pick id,score | head --n 10", 10),
    ];
    for (text, want) in cases {
        let pipeline = lobster::dsl::parse(text).unwrap();
        let missing: Vec<&str> = pipeline
            .stages
            .iter()
            .map(|s| s.name.as_str())
            .filter(|name| ctx.registry.get(name).is_none())
            .collect();
        if !missing.is_empty() {
            eprintln!(
                "skipped `{text}`: this build has no {} command",
                missing.join(", ")
            );
            continue;
        }
        g.bench_function(format!("{text} (100k items)"), |b| {
            b.iter_batched(
                || input.clone(),
                // The result is returned so criterion drops it untimed; items a
                // stage discards are still freed (and timed) inside the stage.
                |items| match run_pipeline(&pipeline, 0, items, &ctx).unwrap() {
                    Outcome::Completed { items, .. } => {
                        assert_eq!(items.len(), want);
                        items
                    }
                    other => panic!("pipeline did not complete: {other:?}"),
                },
                BatchSize::LargeInput,
            )
        });
    }
    g.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
}

criterion_group! {
    name = benches;
    config = config();
    targets = dsl, json, executor
}
criterion_main!(benches);
