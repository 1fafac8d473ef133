//! The warm path as `lobster serve` runs it: the pooling allocator, one
//! `InstancePre` per component, a pool slot reused step after step. Every
//! limit (fuel, deadline, memory, output) and every grant still applies per
//! step, and nothing one step leaves in its instance — linear memory, a
//! static, the heap, state — is seen by the next step, of the same tenant or
//! another. (Its own test binary: the engine is created with the pool here,
//! as serve creates it.)
//!
//! Build the guests first: `tests/build-guests.sh`. A missing `.wasm` skips
//! loudly (and fails under CI / tests/run.sh).

use lobster::executor::{process_context, Mode};
use lobster::sandbox::{
    self, load_file, Allocation, EffectiveLimits, Grants, LoadedComponent, SandboxError, StepEnv,
};
use lobster::state::StateStore;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

mod common;
use common::{args, cache, guest, limits};

/// The component, loaded by an engine that uses the pool (as serve's).
fn load(file: &str) -> Option<Arc<LoadedComponent>> {
    let path = guest(file)?;
    sandbox::engine::prefer_pooling();
    assert_eq!(
        sandbox::engine().unwrap().allocation(),
        Allocation::Pooling,
        "these tests need the pooling allocator (LOBSTER_WASM_ALLOCATOR unset, no ulimit -v)"
    );
    Some(load_file(&path, &cache()).expect("guest loads"))
}

/// Warm the pool's slots with ordinary steps, then check one still runs.
fn warm(probe: &LoadedComponent) {
    for i in 0..20 {
        let out = probe
            .run("probe", &[], &[json!(i)], &StepEnv::closed(), &limits())
            .unwrap();
        assert_eq!(out, [json!(i)]);
    }
}

const SECRET: &str = "tenant-a-secret-7f3a91c2";

fn scan(probe: &LoadedComponent, env: &StepEnv, needle: &str) -> serde_json::Value {
    let out = probe
        .run("probe", &args(&["scan", needle]), &[], env, &limits())
        .unwrap();
    out[0].clone()
}

#[test]
fn the_scan_finds_what_is_in_memory() {
    let Some(probe) = load("probe.wasm") else {
        return;
    };
    // The guest's own text "taint SECRET" sits in its data segment: the
    // scan, given it reversed, must find it (so a miss below is a miss).
    let seen = scan(&probe, &StepEnv::closed(), "TERCES tniat");
    assert_eq!(seen["found"], true, "{seen}");
    let seen = scan(&probe, &StepEnv::closed(), SECRET);
    assert_eq!(seen["found"], false, "{seen}");
}

#[test]
fn a_step_never_sees_memory_statics_or_heap_a_previous_step_left() {
    let Some(probe) = load("probe.wasm") else {
        return;
    };
    warm(&probe);
    let env = StepEnv::closed();
    for round in 0..30 {
        let out = probe
            .run("probe", &args(&["taint", SECRET]), &[], &env, &limits())
            .unwrap();
        // A fresh instance each time: its static counter starts at zero.
        assert_eq!(out, [json!({"counter": 1})], "round {round}");
        let seen = scan(&probe, &env, SECRET);
        assert_eq!(
            seen,
            json!({"found": false, "counter": 0, "taint_len": 0}),
            "round {round}: the next step saw the previous step's memory"
        );
    }
}

/// The pool maps a module's data segments copy-on-write from its memory
/// image and resets a slot's written pages in place: what one step wrote
/// over initialised data (the image's pages) is back to the image's bytes
/// for the next step in the slot, whichever step ran in between.
#[test]
fn a_step_never_sees_what_a_previous_step_wrote_over_initialised_data() {
    let Some(probe) = load("probe.wasm") else {
        return;
    };
    warm(&probe);
    let env = StepEnv::closed();
    for round in 0..30 {
        let out = probe
            .run("probe", &args(&["smudge", SECRET]), &[], &env, &limits())
            .unwrap();
        assert_eq!(
            out,
            [json!({"intact": true})],
            "round {round}: the step found the image's data changed by the previous step"
        );
        if round % 3 == 0 {
            // A different step in between (the slot's next step may run
            // other code over the same pages).
            warm(&probe);
        }
        let seen = scan(&probe, &env, SECRET);
        assert_eq!(seen["found"], false, "round {round}: {seen}");
    }
}

#[test]
fn tenants_on_parallel_threads_share_slots_but_nothing_else() {
    let Some(probe) = load("probe.wasm") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let probe = probe.clone();
            let state = StateStore::new(tmp.path().join(format!("tenant-{t}")));
            std::thread::spawn(move || {
                let env = StepEnv {
                    state: Some((state, format!("tenant-{t}"))),
                    ..StepEnv::closed()
                };
                let mine = format!("{SECRET}-of-{t}");
                for round in 0..15 {
                    let run = |words: &[&str]| {
                        probe
                            .run("probe", &args(words), &[], &env, &limits())
                            .unwrap()
                    };
                    let got = run(&["get", "k"]);
                    let expect = if round == 0 {
                        json!(null)
                    } else {
                        json!(mine.as_str())
                    };
                    assert_eq!(got[0]["value"], expect, "tenant {t} round {round}");
                    run(&["put", "k", &mine]);
                    assert_eq!(run(&["taint", &mine])[0]["counter"], 1);
                    for other in 0..4 {
                        let theirs = format!("{SECRET}-of-{other}");
                        let seen = scan(&probe, &env, &theirs);
                        assert_eq!(seen["found"], false, "tenant {t} saw {other}'s memory");
                        assert_eq!(seen["counter"], 0);
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

#[test]
fn fuel_is_per_step_on_the_warm_path() {
    let (Some(probe), Some(hostile)) = (load("probe.wasm"), load("hostile.wasm")) else {
        return;
    };
    warm(&probe);
    let l = EffectiveLimits {
        fuel: 50_000_000,
        ..limits()
    };
    for _ in 0..3 {
        let err = hostile
            .run("hostile", &args(&["loop"]), &[], &StepEnv::closed(), &l)
            .unwrap_err();
        assert!(
            matches!(
                err,
                SandboxError::OutOfFuel {
                    limit: 50_000_000,
                    ..
                }
            ),
            "{err:?}"
        );
        // The next step gets its own fuel, not what is left.
        let env = StepEnv::closed();
        probe.run("probe", &[], &[json!(1)], &env, &l).unwrap();
        let burned = env.fuel.get().expect("fuel recorded");
        assert!(burned > 0 && burned < 50_000_000, "{burned}");
    }
}

#[test]
fn the_deadline_is_per_step_on_the_warm_path() {
    let (Some(probe), Some(hostile)) = (load("probe.wasm"), load("hostile.wasm")) else {
        return;
    };
    warm(&probe);
    let l = EffectiveLimits {
        fuel: u64::MAX / 4,
        timeout: Some(Duration::from_millis(200)),
        ..limits()
    };
    for mode in ["loop", "sleep", "loop"] {
        let start = Instant::now();
        let err = hostile
            .run("hostile", &args(&[mode]), &[], &StepEnv::closed(), &l)
            .unwrap_err();
        assert!(
            matches!(err, SandboxError::Timeout { limit_ms: 200, .. }),
            "{mode}: {err:?}"
        );
        assert!(start.elapsed() < Duration::from_secs(10), "{mode}");
        let out = probe
            .run("probe", &[], &[json!(mode)], &StepEnv::closed(), &l)
            .unwrap();
        assert_eq!(out, [json!(mode)]);
    }
}

#[test]
fn the_memory_cap_is_per_step_on_the_warm_path() {
    let (Some(probe), Some(hostile)) = (load("probe.wasm"), load("hostile.wasm")) else {
        return;
    };
    warm(&probe);
    let l = EffectiveLimits {
        memory_bytes: 16 << 20,
        ..limits()
    };
    for _ in 0..3 {
        let err = hostile
            .run("hostile", &args(&["grow"]), &[], &StepEnv::closed(), &l)
            .unwrap_err();
        assert!(matches!(err, SandboxError::MemoryLimit { .. }), "{err:?}");
    }
    // 2 MiB of heap per step under a 16 MiB cap, many times over: what one
    // step grew is neither kept nor counted against the next.
    for _ in 0..20 {
        let out = probe
            .run(
                "probe",
                &args(&["taint", SECRET]),
                &[],
                &StepEnv::closed(),
                &l,
            )
            .unwrap();
        assert_eq!(out, [json!({"counter": 1})]);
    }
}

#[test]
fn output_caps_are_per_step_on_the_warm_path() {
    let (Some(probe), Some(hostile)) = (load("probe.wasm"), load("hostile.wasm")) else {
        return;
    };
    warm(&probe);
    let l = EffectiveLimits {
        output_bytes: 100_000,
        ..limits()
    };
    for _ in 0..3 {
        let err = hostile
            .run(
                "hostile",
                &args(&["flood-stdout"]),
                &[],
                &StepEnv::closed(),
                &l,
            )
            .unwrap_err();
        assert!(
            matches!(err, SandboxError::OutputLimit { limit: 100_000, .. }),
            "{err:?}"
        );
        let err = hostile
            .run(
                "hostile",
                &args(&["big-result"]),
                &[],
                &StepEnv::closed(),
                &l,
            )
            .unwrap_err();
        assert!(
            matches!(err, SandboxError::ResultTooLarge { limit: 100_000, .. }),
            "{err:?}"
        );
        // A result just under the cap still passes: nothing was carried over.
        let items: Vec<_> = (0..1000)
            .map(|i| json!({ "i": i, "pad": "x".repeat(60) }))
            .collect();
        let out = probe
            .run("probe", &[], &items, &StepEnv::closed(), &l)
            .unwrap();
        assert_eq!(out.len(), 1000);
    }
}

#[test]
fn grants_are_per_step_on_the_warm_path() {
    let Some(probe) = load("probe.wasm") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path().canonicalize().unwrap();
    std::fs::create_dir_all(cwd.join("a")).unwrap();
    std::fs::write(cwd.join("a/in.txt"), "tenant a's file").unwrap();
    let ctx = |grants: Grants, env: &[(&str, &str)]| {
        let mut ctx = process_context(Mode::Tool, StateStore::new(cwd.join("state")))
            .run_dir(cwd.clone())
            .grants(grants)
            .build();
        ctx.sandbox.log = sandbox::log::discard();
        ctx.env = Arc::new(
            env.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>(),
        );
        ctx
    };
    let granted = ctx(
        Grants::builder()
            .allow_read("a:/a")
            .allow_env("TOKEN")
            .build()
            .unwrap(),
        &[("TOKEN", "a-token")],
    );
    let granted = StepEnv::from_context(&granted).unwrap();
    let closed = ctx(Grants::default(), &[("TOKEN", "a-token")]);
    let closed = StepEnv::from_context(&closed).unwrap();
    for round in 0..5 {
        let out = probe
            .run(
                "probe",
                &args(&["read", "/a/in.txt"]),
                &[],
                &granted,
                &limits(),
            )
            .unwrap();
        assert_eq!(out[0]["text"], "tenant a's file", "round {round}");
        let out = probe
            .run("probe", &args(&["env", "TOKEN"]), &[], &granted, &limits())
            .unwrap();
        assert_eq!(out[0]["value"], "a-token");
        // The next step, in a slot the granted one just used, has neither.
        let err = probe
            .run(
                "probe",
                &args(&["read", "/a/in.txt"]),
                &[],
                &closed,
                &limits(),
            )
            .unwrap_err();
        assert!(matches!(err, SandboxError::Failed { .. }), "{err:?}");
        let out = probe
            .run("probe", &args(&["env", "TOKEN"]), &[], &closed, &limits())
            .unwrap();
        assert_eq!(out[0]["value"], json!(null), "round {round}");
    }
}
