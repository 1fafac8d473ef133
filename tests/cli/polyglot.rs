//! Steps written in Python and TypeScript (issue 16) and the host's handling
//! of large components: the same sandbox, limits and grants as Rust steps;
//! compiles off the run's clock, cached once, reported on a terminal.
//!
//! The components are built by `tests/build-polyglot.sh` (pinned
//! componentize-py and componentize-qjs). Compiling a Python component takes
//! ~16 s, so every test shares one compiled cache (`LOBSTER_WASM_CACHE_DIR`),
//! warmed once with `lobster steps precompile`.

use crate::broker::Stub;
use crate::common::{finish, Env, Run};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn examples_dir() -> PathBuf {
    root().join("examples/steps/target/polyglot")
}

fn guests_dir() -> PathBuf {
    root().join("tests/guests/target/polyglot")
}

fn rust_examples_dir() -> PathBuf {
    root().join("examples/steps/target/wasm32-wasip2/release")
}

fn shared_cache() -> PathBuf {
    root().join("target/polyglot-cache")
}

/// Whether the components are built; skips loudly (fails under CI).
fn built() -> bool {
    let need = [
        examples_dir().join("inbox-categorize-py.wasm"),
        examples_dir().join("inbox-categorize-ts.wasm"),
        guests_dir().join("hostile-py.wasm"),
        guests_dir().join("hostile-js.wasm"),
        guests_dir().join("brokered-ts.wasm"),
        rust_examples_dir().join("inbox_categorize.wasm"),
    ];
    if need.iter().all(|p| p.is_file()) {
        warm();
        return true;
    }
    if std::env::var_os("CI").is_some() || std::env::var_os("LOBSTER_REQUIRE_GUESTS").is_some() {
        panic!("Python/JS steps are not built; run tests/build-polyglot.sh");
    }
    eprintln!("SKIPPED: Python/JS steps are not built (tests/build-polyglot.sh)");
    false
}

/// Compile every component into the shared cache, once per test process.
fn warm() {
    static WARM: OnceLock<()> = OnceLock::new();
    WARM.get_or_init(|| {
        let env = Env::new();
        let r = run(
            &env,
            &[
                "steps",
                "precompile",
                "--steps",
                examples_dir().to_str().unwrap(),
                "--steps",
                guests_dir().to_str().unwrap(),
                "--steps",
                rust_examples_dir().to_str().unwrap(),
            ],
        );
        assert_eq!(r.code, 0, "{r:?}");
    });
}

fn command(env: &Env, args: &[&str]) -> Command {
    let mut c = env.command(args);
    c.env("LOBSTER_WASM_CACHE_DIR", shared_cache());
    c
}

fn run(env: &Env, args: &[&str]) -> Run {
    finish(command(env, args).output().unwrap())
}

fn steps_args() -> Vec<String> {
    vec![
        "--steps".into(),
        examples_dir().display().to_string(),
        "--steps".into(),
        guests_dir().display().to_string(),
        "--steps".into(),
        rust_examples_dir().display().to_string(),
    ]
}

/// The grants `hostile-py`'s describe asks for (a `data` dir, GREETING,
/// tool `echo` and model calls).
fn hostile_grants(env: &Env) -> Vec<String> {
    std::fs::create_dir_all(env.work_path("data")).unwrap();
    [
        "--allow-read",
        "data",
        "--allow-env",
        "GREETING",
        "--allow-tool",
        "echo",
        "--allow-llm",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// A tool-mode run with the steps and `hostile-py`'s grants.
fn tool(env: &Env, extra: &[&str], pipeline: &str) -> Run {
    let mut args: Vec<String> = vec!["run".into(), "--mode".into(), "tool".into()];
    args.extend(steps_args());
    args.extend(hostile_grants(env));
    args.extend(extra.iter().map(|s| s.to_string()));
    args.push(pipeline.into());
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    run(env, &refs)
}

fn mail(env: &Env) {
    let dir = env.work_path("mail");
    std::fs::create_dir_all(&dir).unwrap();
    for e in std::fs::read_dir(root().join("examples/mail"))
        .unwrap()
        .flatten()
    {
        std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
    }
}

fn error_message(r: &Run) -> String {
    let v = r.json();
    assert_eq!(v["ok"], false, "{r:?}");
    v["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn rust_python_and_typescript_categorize_the_sample_mail_alike() {
    if !built() {
        return;
    }
    let env = Env::new();
    mail(&env);
    let outputs: Vec<serde_json::Value> = [
        "inbox.categorize",
        "inbox.categorize-py",
        "inbox.categorize-ts",
    ]
    .iter()
    .map(|step| {
        let r = tool(
            &env,
            &["--allow-read", "mail"],
            &format!("inbox.list | {step} | pick id,category"),
        );
        let v = r.json();
        assert_eq!(v["status"], "ok", "{step}: {r:?}");
        v["output"].clone()
    })
    .collect();
    let items = outputs[0].as_array().unwrap();
    assert_eq!(items.len(), 10);
    let mut categories: Vec<&str> = items
        .iter()
        .map(|i| i["category"].as_str().unwrap())
        .collect();
    categories.sort();
    categories.dedup();
    assert!(categories.len() >= 4, "{categories:?}");
    assert_eq!(outputs[0], outputs[1], "Python differs from Rust");
    assert_eq!(outputs[0], outputs[2], "TypeScript differs from Rust");
}

#[test]
fn a_workflow_mixes_rust_python_and_typescript_steps() {
    if !built() {
        return;
    }
    let env = Env::new();
    mail(&env);
    let wf = root().join("examples/workflows/polyglot.lobster");
    let r = run(
        &env,
        &[
            "run",
            "--mode",
            "tool",
            "--allow-read",
            "mail",
            wf.to_str().unwrap(),
        ],
    );
    let v = r.json();
    assert_eq!(v["status"], "ok", "{r:?}");
    let items = v["output"].as_array().unwrap();
    assert_eq!(items.len(), 10, "{r:?}");
    for item in items {
        assert_eq!(item["category"], item["category_ts"], "{item}");
        assert!(item.get("triage").is_some(), "{item}");
    }
}

#[test]
fn every_language_passes_its_declared_examples_in_the_sandbox() {
    if !built() {
        return;
    }
    let env = Env::new();
    for dir in [
        "inbox-categorize",
        "inbox-categorize-py",
        "inbox-categorize-ts",
    ] {
        let project = root().join("examples/steps").join(dir);
        let r = run(&env, &["step", "test", project.to_str().unwrap()]);
        assert_eq!(r.code, 0, "{dir}: {r:?}");
        assert!(r.stdout.ends_with("2 passed, 0 failed\n"), "{dir}: {r:?}");
    }
}

#[test]
fn a_failing_example_is_reported_with_expected_and_actual_items() {
    if !built() {
        return;
    }
    let env = Env::new();
    let project = env.work_path("bad");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(
        project.join("lobster-step.toml"),
        format!(
            "name = \"inbox.categorize-ts\"\nlang = \"js\"\nwasm = \"{}\"\n",
            examples_dir().join("inbox-categorize-ts.wasm").display()
        ),
    )
    .unwrap();
    std::fs::write(
        project.join("examples.json"),
        r#"[{"name": "wrong on purpose", "args": [], "input": [{"subject": "invoice"}], "output": [{"subject": "invoice", "category": "work"}]}]"#,
    )
    .unwrap();
    let r = run(&env, &["step", "test", project.to_str().unwrap()]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stdout.contains("FAILED  wrong on purpose"), "{r:?}");
    assert!(r.stdout.contains(r#""category":"finance""#), "{r:?}");
    assert!(r.stdout.ends_with("0 passed, 1 failed\n"), "{r:?}");
}

#[test]
fn a_python_loop_is_stopped_by_the_deadline() {
    if !built() {
        return;
    }
    let env = Env::new();
    let r = tool(&env, &["--timeout-ms", "300"], "hostile-py --do loop");
    let msg = error_message(&r);
    assert!(msg.contains("timed out"), "{r:?}");
}

#[test]
fn a_python_step_allocating_past_the_cap_gets_a_clear_error() {
    if !built() {
        return;
    }
    let env = Env::new();
    let r = tool(&env, &[], "hostile-py --do alloc");
    let msg = error_message(&r);
    assert!(msg.contains("hostile-py"), "{r:?}");
    assert!(msg.contains("memory"), "{r:?}");
}

#[test]
fn python_and_js_exceptions_become_step_failures_with_the_message() {
    if !built() {
        return;
    }
    let env = Env::new();
    let msg = error_message(&tool(&env, &[], "hostile-py --do raise"));
    assert!(msg.contains("step hostile-py failed"), "{msg}");
    assert!(msg.contains("KeyError: 'missing'"), "{msg}");
    assert!(msg.contains("app.py"), "{msg}");
    let msg = error_message(&tool(
        &env,
        &[],
        &format!("{} | hostile-js --do raise", env.source(r#"[{"a":1}]"#)),
    ));
    assert!(msg.contains("step hostile-js failed"), "{msg}");
    assert!(msg.contains("TypeError"), "{msg}");
    let msg = error_message(&tool(&env, &[], "hostile-js --do throw-string"));
    assert!(msg.contains("plain string"), "{msg}");
}

#[test]
fn python_steps_get_only_the_granted_dirs_and_env() {
    if !built() {
        return;
    }
    let env = Env::new();
    std::fs::create_dir_all(env.work_path("data")).unwrap();
    std::fs::write(env.work_path("data/a.txt"), "hello").unwrap();
    // Without the grants its describe asks for, the plan refuses.
    let mut args: Vec<String> = vec!["run".into(), "--mode".into(), "tool".into()];
    args.extend(steps_args());
    args.push("hostile-py --do read".into());
    let r = run(&env, &args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(
        error_message(&r).contains("--allow-read DIR:/data"),
        "{r:?}"
    );
    let grants = hostile_grants(&env);
    let mut c = command(&env, &[]);
    let mut args: Vec<String> = vec!["run".into(), "--mode".into(), "tool".into()];
    args.extend(steps_args());
    args.extend(grants);
    args.push("hostile-py --do read".into());
    c.args(&args).env("GREETING", "hi").env("HOME", "/root");
    let r = finish(c.output().unwrap());
    assert_eq!(
        r.json()["output"],
        serde_json::json!([{"file": "a.txt", "text": "hello"}]),
        "{r:?}"
    );
    let mut c = command(&env, &[]);
    args.pop();
    args.push("hostile-py --do env".into());
    c.args(&args).env("GREETING", "hi").env("HOME", "/root");
    let r = finish(c.output().unwrap());
    assert_eq!(
        r.json()["output"],
        serde_json::json!([{"GREETING": "hi", "HOME": null}]),
        "{r:?}"
    );
    args.pop();
    args.push("hostile-py --do escape".into());
    let r = finish(command(&env, &[]).args(&args).output().unwrap());
    assert!(
        error_message(&r).contains("step hostile-py failed"),
        "{r:?}"
    );
}

#[test]
fn a_python_step_runs_a_thousand_items_within_the_default_limits() {
    if !built() {
        return;
    }
    let env = Env::new();
    let r = tool(
        &env,
        &[],
        "hostile-py --do count --n 1000 | hostile-js --do count",
    );
    let v = r.json();
    assert_eq!(v["status"], "ok", "{r:?}");
    assert_eq!(v["output"].as_array().unwrap().len(), 1000);
    assert_eq!(v["output"][999]["words"], 2);
}

#[test]
fn console_and_log_lines_reach_the_host_log() {
    if !built() {
        return;
    }
    let env = Env::new();
    let mut args: Vec<String> = vec!["run".into()];
    args.extend(steps_args());
    args.extend(hostile_grants(&env));
    args.push("hostile-js --do log | hostile-py --do log".into());
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = run(&env, &refs);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stderr.contains(r#"hello from js {"n":1}"#), "{r:?}");
    assert!(r.stderr.contains("hello from python"), "{r:?}");
}

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

/// `lobster step new` + `build` + `test` for one language, end to end.
fn new_build_test(lang: &str, name: &str, env_vars: &[(&str, PathBuf)], prepare: impl Fn(&Path)) {
    let env = Env::new();
    let r = env.run(&["step", "new", name, "--lang", lang]);
    assert_eq!(r.code, 0, "{r:?}");
    let dir = env.work_path(&name.replace('.', "-"));
    assert!(dir.join("README.md").is_file() && dir.join("examples.json").is_file());
    prepare(&dir);
    let mut c = command(&env, &["step", "build", dir.to_str().unwrap()]);
    for (k, v) in env_vars {
        c.env(k, v);
    }
    let r = finish(c.output().unwrap());
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains(&format!("name    {name}\n")), "{r:?}");
    assert!(r.stdout.contains("world   lobster:step"), "{r:?}");
    assert!(r.stdout.contains("digest  blake3:"), "{r:?}");
    let mut c = command(&env, &["step", "test", dir.to_str().unwrap()]);
    for (k, v) in env_vars {
        c.env(k, v);
    }
    let r = finish(c.output().unwrap());
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.ends_with("2 passed, 0 failed\n"), "{r:?}");
    // A second `new` into the same place is refused.
    let r = env.run(&["step", "new", name, "--lang", lang]);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("already exists"), "{r:?}");
}

#[test]
fn step_new_build_test_python() {
    if !built() {
        return;
    }
    let python = root().join("target/polyglot-tools/py/bin/python");
    new_build_test("python", "greet.py", &[("LOBSTER_PYTHON", python)], |_| {});
}

#[test]
fn step_new_build_test_js() {
    if !built() {
        return;
    }
    new_build_test("js", "greet.ts", &[], |dir| {
        // What the README says: `npm install` (the SDK is copied in, with its
        // pinned toolchain, from the local npm cache when warm).
        let st = Command::new("npm")
            .args([
                "install",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                "--prefer-offline",
            ])
            .current_dir(dir)
            .status()
            .unwrap();
        assert!(st.success());
    });
}

#[test]
fn step_new_build_test_rust() {
    if !built() {
        return;
    }
    // The example steps' target dir already holds the SDK's dependencies
    // built with the same profile; its lock file keeps the same versions.
    let target = root().join("examples/steps/target");
    new_build_test("rust", "greet.rs", &[("CARGO_TARGET_DIR", target)], |dir| {
        std::fs::copy(
            root().join("examples/steps/Cargo.lock"),
            dir.join("Cargo.lock"),
        )
        .unwrap();
    });
}

#[test]
fn step_new_refuses_bad_names_and_languages() {
    let env = Env::new();
    let r = env.run(&["step", "new", "../x", "--lang", "python"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("step name"), "{r:?}");
    let r = env.run(&["step", "new", "x", "--lang", "cobol"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains("--lang must be rust, python or js"),
        "{r:?}"
    );
    let r = env.run(&["step", "build", env.work_path("nothing").to_str().unwrap()]);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("lobster-step.toml"), "{r:?}");
}

#[test]
fn a_trusted_policy_can_turn_fuel_off_leaving_the_deadline() {
    if !built() {
        return;
    }
    let env = Env::new();
    // With fuel, a loop runs out of it long before a 20 s deadline.
    let msg = error_message(&tool(
        &env,
        &["--timeout-ms", "20000"],
        "hostile-js --do loop",
    ));
    assert!(msg.contains("ran out of fuel"), "{msg}");
    // Without fuel (a trusted policy), the deadline stops it.
    std::fs::write(
        env.work_path("p.toml"),
        "trust = \"trusted\"\nfuel = false\n",
    )
    .unwrap();
    let msg = error_message(&tool(
        &env,
        &["--policy", "p.toml", "--timeout-ms", "1500"],
        "hostile-js --do loop",
    ));
    assert!(msg.contains("timed out"), "{msg}");
    // An untrusted policy may not.
    std::fs::write(
        env.work_path("u.toml"),
        "trust = \"untrusted\"\nfuel = false\n",
    )
    .unwrap();
    let r = tool(&env, &["--policy", "u.toml"], "hostile-js --do count");
    assert!(
        error_message(&r).contains("fuel = false needs trust"),
        "{r:?}"
    );
}

#[test]
fn python_and_js_steps_keep_state_through_the_host() {
    if !built() {
        return;
    }
    let env = Env::new();
    for step in ["hostile-py", "hostile-js"] {
        let r = tool(&env, &[], &format!("{step} --do state"));
        assert_eq!(
            r.json()["output"],
            serde_json::json!([{"runs": 1}]),
            "{step}: {r:?}"
        );
    }
}

/// Every componentize-py component imports `wasi:sockets` (CPython links its
/// `socket` module). The host links sockets with every use refused, so a
/// Python step passes `lobster check`, builds into a bundle that verifies,
/// and runs under the untrusted policy.
#[test]
fn a_python_step_passes_check_bundle_and_untrusted_runs() {
    if !built() {
        return;
    }
    let env = Env::new();
    mail(&env);
    let py = examples_dir().join("inbox-categorize-py.wasm");
    let r = run(&env, &["check", py.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{r:?}");
    let src = env.work_path("src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::copy(&py, src.join("inbox-categorize-py.wasm")).unwrap();
    let r = run(&env, &["bundle", "build", "src", "--out", "py.bundle"]);
    assert_eq!(r.code, 0, "{r:?}");
    let r = run(&env, &["bundle", "verify", "py.bundle"]);
    assert_eq!(r.code, 0, "{r:?}");
    let r = run(&env, &["check", "py.bundle"]);
    assert_eq!(r.code, 0, "{r:?}");

    let steps = env.work_path("steps");
    std::fs::create_dir_all(&steps).unwrap();
    std::fs::copy(&py, steps.join("inbox-categorize-py.wasm")).unwrap();
    std::fs::copy(
        rust_examples_dir().join("inbox_list.wasm"),
        steps.join("inbox_list.wasm"),
    )
    .unwrap();
    std::fs::write(
        env.work_path("p.toml"),
        "trust = \"untrusted\"\nroots = [\"mail\"]\n",
    )
    .unwrap();
    let r = run(
        &env,
        &[
            "run",
            "--mode",
            "tool",
            "--policy",
            "p.toml",
            "--steps",
            "steps",
            "--allow-read",
            "mail",
            "inbox.list | inbox.categorize-py | pick id,category",
        ],
    );
    let v = r.json();
    assert_eq!(v["status"], "ok", "{r:?}");
    assert_eq!(v["output"].as_array().map(Vec::len), Some(10), "{r:?}");
}

/// `tool-mode run` of `pipeline` with the guests on the step path, the
/// stubs' addresses in the environment, `hostile-py`'s dir and env grants,
/// and `grants`.
fn brokered(env: &Env, gw: &Stub, model: &Stub, grants: &[&str], pipeline: &str) -> Run {
    std::fs::create_dir_all(env.work_path("data")).unwrap();
    let mut args = vec!["run", "--mode", "tool", "--steps"];
    let dir = guests_dir().display().to_string();
    args.push(&dir);
    args.extend_from_slice(&["--allow-read", "data", "--allow-env", "GREETING"]);
    args.extend_from_slice(grants);
    args.push(pipeline);
    let mut c = command(env, &args);
    for k in ["OPENCLAW_TOKEN", "LOBSTER_POLICY"] {
        c.env_remove(k);
    }
    c.env("OPENCLAW_URL", &gw.url)
        .env("LOBSTER_LLM_PROVIDER", "openai")
        .env("LOBSTER_LLM_BASE_URL", format!("{}/v1", model.url))
        .env("LOBSTER_LLM_MODEL", "stub-violate-once");
    finish(c.output().unwrap())
}

/// The Python and TypeScript SDKs wrap `lobster:step@0.2.0`'s broker: a
/// described and granted tool call and model call reach the loopback stubs
/// (the model's schema-violating first answer is retried by the host); an
/// undescribed tool or a missing grant is refused and nothing is sent.
#[test]
fn python_and_typescript_steps_call_tools_and_models_through_the_broker() {
    if !built() {
        return;
    }
    // hostile-py's `--do broker` is the Python step (one Python component
    // fewer to build and compile); brokered-ts the TypeScript one.
    for step in ["hostile-py --do broker", "brokered-ts"] {
        let env = Env::new();
        let gw = Stub::start("gateway", None);
        let model = Stub::start("model", None);
        std::fs::write(env.work_path("mail.json"), r#"[{"subject":"Hello"}]"#).unwrap();
        let grant = ["--allow-tool", "echo", "--allow-llm"];
        // Granted: the tool's answer and the model's schema-checked answer.
        let r = brokered(
            &env,
            &gw,
            &model,
            &grant,
            &format!(
                "exec --json cat mail.json | {step} --tool echo --args '{{\"to\":\"x\"}}' --llm"
            ),
        );
        let v = r.json();
        assert_eq!(v["status"], "ok", "{step}: {r:?}");
        let out = v["output"].as_array().unwrap();
        assert_eq!(out.len(), 2, "{step}: {r:?}");
        assert_eq!(out[0]["args"], json!({"to": "x"}), "{step}: {r:?}");
        assert!(
            out[1]["intent"].is_string() && out[1]["draft"].is_string(),
            "{step}: {r:?}"
        );
        assert_eq!(gw.requests().len(), 1, "{step}");
        assert_eq!(gw.requests()[0]["body"]["tool"], "echo", "{step}");
        assert_eq!(model.requests().len(), 2, "{step}: violation, then retry");
        // A tool its describe does not ask for: refused at the call, the
        // step fails with the host's reason, nothing is sent.
        let r = brokered(&env, &gw, &model, &grant, &format!("{step} --tool message"));
        let msg = error_message(&r);
        assert!(
            msg.contains("called tool \"message\", which its describe does not ask for"),
            "{step}: {msg}"
        );
        assert_eq!(gw.requests().len(), 1, "{step}: a refused call was sent");
        // Described but not granted: the step does not run; nothing is sent.
        let r = brokered(
            &env,
            &gw,
            &model,
            &["--allow-llm"],
            &format!("{step} --tool echo"),
        );
        assert!(
            error_message(&r).contains("--allow-tool echo"),
            "{step}: {r:?}"
        );
        let r = brokered(
            &env,
            &gw,
            &model,
            &["--allow-tool", "echo"],
            &format!("{step} --llm"),
        );
        assert!(error_message(&r).contains("--allow-llm"), "{step}: {r:?}");
        assert_eq!(gw.requests().len(), 1, "{step}");
        assert_eq!(model.requests().len(), 2, "{step}");
    }
}
