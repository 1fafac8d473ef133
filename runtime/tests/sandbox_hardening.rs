//! Hostile `lobster:step` components against the sandbox's bounds (issue 10):
//! error messages quoting guest text stay small, step state is scoped
//! unambiguously and bounded in bytes on disk, `describe` answers are bounded.
//!
//! Build the guests first: `tests/build-guests.sh`. A missing `.wasm` skips
//! loudly (and fails under CI / tests/run.sh).

use lobster::sandbox::{self, load_file, LoadedComponent, SandboxError, StepEnv};
use lobster::state::StateStore;
use serde_json::json;
use std::path::Path;
use std::sync::Arc;

mod common;
use common::{args, guest, limits};

use common::cache;

fn load(file: &str) -> Option<Arc<LoadedComponent>> {
    Some(load_file(&guest(file)?, &cache()).expect("guest loads"))
}

fn with_state(store: &StateStore, scope: &str) -> StepEnv {
    StepEnv {
        state: Some((store.clone(), scope.to_string())),
        ..StepEnv::closed()
    }
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

#[test]
fn a_100_mb_failure_message_becomes_a_short_error() {
    let Some(h) = load("hostile.wasm") else {
        return;
    };
    let err = h
        .run(
            "hostile",
            &args(&["huge-fail"]),
            &[],
            &StepEnv::closed(),
            &limits(),
        )
        .unwrap_err();
    assert!(matches!(err, SandboxError::Failed { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.len() < 4096, "message of {} bytes", text.len());
    assert!(
        text.starts_with("step hostile failed: FFFF"),
        "{}",
        &text[..80]
    );
    assert!(
        text.ends_with("more bytes)"),
        "{}",
        &text[text.len() - 80..]
    );
}

#[test]
fn a_40_mb_describe_path_is_refused_with_a_short_message() {
    let Some(path) = guest("bigdescribe.wasm") else {
        return;
    };
    let err = load_file(&path, &cache()).map(|_| ()).unwrap_err();
    let text = err.to_string();
    assert!(text.len() < 4096, "message of {} bytes", text.len());
    assert!(
        text.contains("describe returned a directory path of 41943041 bytes (limit 4096)"),
        "{text}"
    );
}

#[test]
fn step_state_is_scoped_by_step_and_key_without_collisions() {
    let Some(p) = load("probe.wasm") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let store = StateStore::new(tmp.path());
    let env = with_state(&store, "adhoc");
    let run = |step: &str, a: &[&str]| p.run(step, &args(a), &[], &env, &limits()).unwrap();
    // Step `hx-state.k` key `put` and step `hx-state` key `k.put` used to be
    // one file (`step.adhoc.hx-state.k.put.json`).
    run("hx-state.k", &["put", "put", "from hx-state.k"]);
    assert_eq!(run("hx-state", &["get", "k.put"])[0]["value"], json!(null));
    run("hx-state", &["put", "k.put", "from hx-state"]);
    assert_eq!(
        run("hx-state.k", &["get", "put"])[0]["value"],
        json!("from hx-state.k")
    );
    // A step named `inbox` cannot read `inbox.list`'s state.
    run("inbox.list", &["put", "cursor", "secret"]);
    assert_eq!(
        run("inbox", &["get", "list.cursor"])[0]["value"],
        json!(null)
    );
    // Case and punctuation in keys are distinct keys.
    run("s", &["put", "Key", "upper"]);
    assert_eq!(run("s", &["get", "key"])[0]["value"], json!(null));
    // Another scope (run or workflow) sees nothing of this one.
    let other = with_state(&store, "other");
    let got = p
        .run("s", &args(&["get", "Key"]), &[], &other, &limits())
        .unwrap();
    assert_eq!(got[0]["value"], json!(null));
}

#[test]
fn deeply_nested_state_is_bounded_in_bytes_on_disk() {
    let Some(h) = load("hostile.wasm") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let store = StateStore::new(tmp.path());
    let out = h
        .run(
            "hostile",
            &args(&["deep-state"]),
            &[],
            &with_state(&store, "adhoc"),
            &limits(),
        )
        .unwrap();
    assert_eq!(out, [json!({"stored": "deep"})]);
    // One MiB of value nested 100 deep: stored compact it stays under the
    // 1 MiB cap (pretty-printed it was a 106 MB file).
    let bytes = dir_bytes(tmp.path());
    assert!(
        bytes <= sandbox::MAX_STATE_VALUE_BYTES as u64,
        "{bytes} bytes on disk"
    );
}
