//! `lobster step build`: the project's toolchain (rust: cargo; python:
//! `python -m lobster_step build`, from `./.venv` when present; js: the
//! `lobster-step` package's build script), then the component it wrote,
//! loaded (which warms the compiled cache) and described.

use super::{manifest, wasm_path, Lang, Manifest, BUILT_SDK};
use crate::error::{Error, Result};
use crate::sandbox::{load_file, ArtifactCache, ComponentKind};
use crate::state::StateStore;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The component a build wrote.
#[derive(Debug, Clone)]
pub struct Built {
    /// The step's name as the component describes itself (a
    /// `wasi:cli/command` component: the manifest's name).
    pub name: String,
    /// The name `lobster-step.toml` gives.
    pub declared: String,
    /// Its size in bytes.
    pub size: u64,
    /// The world it implements, as a person reads it.
    pub world: String,
    /// Its blake3 digest (hex).
    pub digest: String,
    /// Where it is.
    pub file: PathBuf,
}

fn run_tool(cmd: &mut Command, what: &str) -> Result<()> {
    let status = cmd.status().map_err(|e| {
        Error::runtime(format!(
            "cannot run {what}: {e} (is the toolchain installed? see the project's README)"
        ))
    })?;
    if !status.success() {
        return Err(Error::runtime(format!("{what} failed ({status})")));
    }
    Ok(())
}

/// Build the project in `dir` with its language's toolchain and describe
/// the component it wrote.
pub fn build(dir: &Path) -> Result<Built> {
    let m = manifest(dir)?;
    let lang = Lang::parse(&m.lang)?;
    match lang {
        Lang::Rust => run_tool(
            Command::new("cargo")
                .args(["build", "--release", "--target", "wasm32-wasip2"])
                .current_dir(dir),
            "cargo build",
        )?,
        Lang::Python => {
            let venv = dir.join(".venv/bin/python");
            let python = if venv.is_file() {
                venv
            } else {
                PathBuf::from(std::env::var("LOBSTER_PYTHON").unwrap_or_else(|_| "python3".into()))
            };
            // Without the SDK, python would only say `No module named lobster_step`.
            let has_sdk = Command::new(&python)
                .args(["-c", "import importlib.util as u, sys; sys.exit(0 if u.find_spec('lobster_step') else 3)"])
                .current_dir(dir)
                .status()
                .map(|s| s.code());
            if let Ok(Some(3)) = has_sdk {
                return Err(Error::runtime(format!(
                    "the Python step SDK (module lobster_step) is not installed for {}",
                    python.display()
                ))
                .with_hint(format!(
                    "install it into a virtual environment here: `python3 -m venv .venv && .venv/bin/pip install {}/python` (the project's README names the path)",
                    std::fs::canonicalize(BUILT_SDK)
                        .unwrap_or_else(|_| PathBuf::from(BUILT_SDK))
                        .display()
                )));
            }
            run_tool(
                Command::new(&python)
                    .args(["-m", "lobster_step", "build", "."])
                    .current_dir(dir),
                &format!("{} -m lobster_step build", python.display()),
            )?
        }
        Lang::Js => {
            let script = dir.join("node_modules/lobster-step/build.mjs");
            if !script.is_file() {
                return Err(Error::runtime(format!(
                    "{}: missing; run `npm install` in {} first (see its README)",
                    script.display(),
                    dir.display()
                )));
            }
            run_tool(
                Command::new("node")
                    .arg(&script)
                    .args(["build", "."])
                    .current_dir(dir),
                "node lobster-step/build.mjs",
            )?
        }
    }
    report(dir, &m)
}

/// The component the build of `m` in `dir` wrote.
fn report(dir: &Path, m: &Manifest) -> Result<Built> {
    let wasm = wasm_path(dir, m);
    let size = std::fs::metadata(&wasm)
        .map_err(|e| Error::runtime(format!("{}: {e} (did the build write it?)", wasm.display())))?
        .len();
    let cache = ArtifactCache::in_state_dir(StateStore::from_env().dir());
    let c = load_file(&wasm, &cache)?;
    let (name, world) = match c.kind() {
        ComponentKind::Step => (
            c.meta().map(|x| x.name.clone()).unwrap_or_default(),
            // The world its exports (and imports, if any) are of.
            match c.world_version() {
                Some(v) => format!("lobster:step@{v}.0 (step: describe, run)"),
                None => "lobster:step (step: describe, run)".into(),
            },
        ),
        ComponentKind::Command => (m.name.clone(), "wasi:cli/command".into()),
    };
    Ok(Built {
        name,
        declared: m.name.clone(),
        size,
        world,
        digest: c.digest().to_string(),
        file: wasm,
    })
}
