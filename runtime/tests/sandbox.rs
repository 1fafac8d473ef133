//! The WebAssembly sandbox against real guests: hostile ones must end in
//! their specific error without harming the host or any file outside the
//! grants; friendly ones (tests/guests, examples/steps) must work.
//!
//! Build the guests first: `tests/build-guests.sh`. A missing `.wasm` skips
//! its test with a loud message.
//!
//! The tests are in `sandbox/`, one file per concept; the helpers they share
//! are here.

use lobster::executor::{Context, Mode};
use lobster::sandbox::{
    self, load_file, EffectiveLimits, Grants, LoadedComponent, SandboxError, StepEnv,
};
use lobster::state::StateStore;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod common;
use common::{args, cache, limits, test_guest_dir, wasm};

#[path = "sandbox/components.rs"]
mod components;
#[path = "sandbox/isolation.rs"]
mod isolation;
#[path = "sandbox/pipeline.rs"]
mod pipeline;
#[path = "sandbox/resource_limits.rs"]
mod resource_limits;

fn load(dir: &Path, file: &str) -> Option<Arc<LoadedComponent>> {
    let path = wasm(dir, file)?;
    Some(load_file(&path, &cache()).expect("guest loads"))
}

/// The host still runs a normal step after whatever happened before.
fn assert_host_ok() {
    let Some(noop) = load(&test_guest_dir(), "noop.wasm") else {
        return;
    };
    let input = vec![json!({"a": 1}), json!("two")];
    let out = noop
        .run("noop", &[], &input, &StepEnv::closed(), &limits())
        .expect("noop runs after a hostile step");
    assert_eq!(out, input);
}

fn hostile(mode: &[&str], l: EffectiveLimits) -> Option<SandboxError> {
    let h = load(&test_guest_dir(), "hostile.wasm")?;
    let err = h
        .run("hostile", &args(mode), &[], &StepEnv::closed(), &l)
        .expect_err("hostile step must fail");
    assert_host_ok();
    Some(err)
}

/// Files (path, size, mtime) under `root`, for before/after comparison.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, (u64, std::time::SystemTime)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let meta = std::fs::symlink_metadata(entry.path()).unwrap();
            if meta.is_dir() {
                stack.push(entry.path());
            }
            out.insert(entry.path(), (meta.len(), meta.modified().unwrap()));
        }
    }
    out
}

struct World {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    cwd: PathBuf,
}

/// root/{secret.txt, cwd/{data/{in.txt, link -> ../../secret.txt}, rw/}}
fn world() -> World {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let cwd = root.join("cwd");
    std::fs::create_dir_all(cwd.join("data")).unwrap();
    std::fs::create_dir_all(cwd.join("rw")).unwrap();
    std::fs::write(root.join("secret.txt"), "top secret").unwrap();
    std::fs::write(cwd.join("data/in.txt"), "inside").unwrap();
    std::os::unix::fs::symlink("../../secret.txt", cwd.join("data/link")).unwrap();
    World {
        _tmp: tmp,
        root,
        cwd,
    }
}

fn context(cwd: &Path, state: &Path, grants: Grants) -> Context {
    let mut ctx = lobster::executor::process_context(Mode::Tool, StateStore::new(state))
        .run_dir(cwd.to_path_buf())
        .grants(grants)
        .build();
    ctx.sandbox.log = sandbox::log::discard();
    let mut env = BTreeMap::new();
    env.insert("SECRET".to_string(), "hunter2".to_string());
    env.insert("VISIBLE".to_string(), "yes".to_string());
    ctx.env = Arc::new(env);
    ctx
}
