//! Steps written in Python and TypeScript (issue 16) and the host's handling
//! of large components: the same sandbox, limits and grants as Rust steps;
//! compiles off the run's clock, cached once, reported on a terminal.
//!
//! The components are built by `tests/build-polyglot.sh` (pinned
//! componentize-py and componentize-qjs). Compiling a Python component takes
//! ~16 s, so every test shares one compiled cache (`LOBSTER_WASM_CACHE_DIR`),
//! warmed once with `lobster steps precompile`.
//!
//! The helpers the submodules share are here.

use crate::common::{finish, Env, Run};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

mod compile;
mod languages;
mod sandbox;

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
