//! Compiling large components: off the run's clock, bounded, one progress
//! line on a terminal, nothing compiled for a mistyped stage name,
//! `steps precompile`, and the compiled cache bounded by bytes.

use super::{built, error_message, guests_dir, rust_examples_dir, shared_cache, steps_args};
use crate::common::{finish, Env};
use std::process::Command;

#[test]
fn compiling_does_not_count_against_the_run_deadline() {
    if !built() {
        return;
    }
    // A private, empty cache: this run compiles the JS component (longer
    // than the 200 ms deadline here) before the step runs.
    let env = Env::new();
    let mut args: Vec<String> = vec![
        "run".into(),
        "--mode".into(),
        "tool".into(),
        "--timeout-ms".into(),
        "200".into(),
    ];
    args.extend(steps_args());
    args.push("hostile-js --do count --n 3".into());
    let r = finish(
        env.command(&args.iter().map(String::as_str).collect::<Vec<_>>())
            .output()
            .unwrap(),
    );
    assert_eq!(r.json()["status"], "ok", "{r:?}");
    let cached = std::fs::read_dir(env.state.path().join("cache/wasm"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "cwasm"))
        .count();
    assert_eq!(cached, 1, "the compile was cached");
}

#[test]
fn a_compile_past_its_own_bound_is_a_clear_error() {
    if !built() {
        return;
    }
    let env = Env::new();
    let mut args: Vec<String> = vec!["run".into(), "--mode".into(), "tool".into()];
    args.extend(steps_args());
    args.push("hostile-js --do count".into());
    let r = finish(
        env.command(&args.iter().map(String::as_str).collect::<Vec<_>>())
            .env("LOBSTER_COMPILE_TIMEOUT_MS", "1")
            .output()
            .unwrap(),
    );
    let msg = error_message(&r);
    assert!(msg.contains("compiling took longer than 1ms"), "{msg}");
    assert!(msg.contains("lobster steps precompile"), "{msg}");
}

#[test]
fn a_slow_compile_prints_one_progress_line_on_a_terminal_only() {
    if !built() {
        return;
    }
    let env = Env::new();
    let steps = guests_dir();
    // `script` gives the run a terminal; stderr then carries the line.
    let line = format!(
        "LOBSTER_PROGRESS_AFTER_MS=0 {} --steps {} 'hostile-js --do count --n 1'",
        crate::common::bin(),
        steps.display()
    );
    let r = finish(
        Command::new("script")
            .args(["-qec", &line, "/dev/null"])
            .current_dir(env.work.path())
            .env("LOBSTER_STATE_DIR", env.state.path())
            .output()
            .unwrap(),
    );
    assert!(
        r.stdout
            .contains("lobster: compiling hostile-js.wasm (1.7 MB), cached for next time… done in"),
        "{r:?}"
    );
    // Tool mode (and no terminal): one envelope, no progress line.
    let env = Env::new();
    let r = finish(
        env.command(&[
            "run",
            "--mode",
            "tool",
            "--steps",
            steps.to_str().unwrap(),
            "hostile-js --do count --n 1",
        ])
        .env("LOBSTER_PROGRESS_AFTER_MS", "0")
        .output()
        .unwrap(),
    );
    assert_eq!(r.json()["status"], "ok", "{r:?}");
    assert!(!r.stderr.contains("compiling"), "{r:?}");
}

#[test]
fn a_mistyped_stage_name_compiles_nothing_once_names_are_known() {
    if !built() {
        return;
    }
    // A cache that knows every component's name (from the warm-up) but
    // holds no compiled code: resolving a typo must not compile anything.
    let env = Env::new();
    let cache = env.work_path("names-only");
    std::fs::create_dir_all(&cache).unwrap();
    for e in std::fs::read_dir(shared_cache()).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "name") {
            std::fs::copy(e.path(), cache.join(e.file_name())).unwrap();
        }
    }
    let mut args: Vec<String> = vec!["run".into(), "--mode".into(), "tool".into()];
    args.extend(steps_args());
    args.push("inbox.categorize-pyy".into());
    let r = finish(
        env.command(&args.iter().map(String::as_str).collect::<Vec<_>>())
            .env("LOBSTER_WASM_CACHE_DIR", &cache)
            .output()
            .unwrap(),
    );
    assert!(
        error_message(&r).contains("Unknown command: inbox.categorize-pyy"),
        "{r:?}"
    );
    let compiled = std::fs::read_dir(&cache)
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "cwasm"))
        .count();
    assert_eq!(compiled, 0, "a typo compiled components");
}

#[test]
fn precompile_warms_the_cache_and_reports_each_component() {
    if !built() {
        return;
    }
    let env = Env::new();
    // Only the JS guest: a Python compile here would cost ~16 s more.
    let steps = env.work_path("js-only");
    std::fs::create_dir_all(&steps).unwrap();
    std::fs::copy(
        guests_dir().join("hostile-js.wasm"),
        steps.join("hostile-js.wasm"),
    )
    .unwrap();
    let args = ["steps", "precompile", "--steps", steps.to_str().unwrap()];
    let r = env.run(&args);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("hostile-js\t"), "{r:?}");
    assert!(r.stdout.contains("\tcompiled in "), "{r:?}");
    let r = env.run(&args);
    assert!(r.stdout.contains("\talready cached in "), "{r:?}");
    let r = env.run(&["steps", "precompile", "--steps", "nowhere"]);
    assert_ne!(r.code, 0, "{r:?}");
    assert!(
        r.stderr.contains("no .wasm components on the step path"),
        "{r:?}"
    );
}

#[test]
fn the_compiled_cache_is_bounded_by_bytes() {
    if !built() {
        return;
    }
    let env = Env::new();
    let steps = rust_examples_dir();
    let r = finish(
        env.command(&["steps", "precompile", "--steps", steps.to_str().unwrap()])
            .env("LOBSTER_WASM_CACHE_BYTES", "1")
            .output()
            .unwrap(),
    );
    assert_eq!(r.code, 0, "{r:?}");
    let left = std::fs::read_dir(env.state.path().join("cache/wasm"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "cwasm"))
        .count();
    assert_eq!(left, 1, "only the newest entry stays under a 1-byte bound");
}
