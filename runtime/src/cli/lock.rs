//! `lobster lock [--steps DIR]… ['<pipeline>' | WORKFLOW]`: pin step digests in
//! `./lobster.lock`.

use super::output::{human_error, write_once};
use super::trust_args;
use crate::error::{Error, Result};
use crate::policy::lock::{LockFile, LOCK_FILE};
use crate::sandbox::{load_file, ArtifactCache, StepPath, StepResolver};
use crate::state::StateStore;
use std::path::PathBuf;

/// `lobster help lock`.
pub const LOCK_HELP: &str = "lobster lock — pin WebAssembly steps to their blake3 digests

Usage:
  lobster lock [--steps DIR]... ['<pipeline>' | WORKFLOW-FILE]

Writes ./lobster.lock (TOML, sorted by step name): with a pipeline or a
workflow file, the steps it uses (pipeline stages and uses: components);
without, every component on the step path (--steps DIRs,
LOBSTER_STEP_PATH, ./steps). While ./lobster.lock exists, a run refuses a
pinned step whose component no longer has its pinned digest.
";

/// Every step on `path`, by name (first on the path wins), with its digest.
pub fn all_steps(path: &StepPath, cache: &ArtifactCache) -> Result<LockFile> {
    let mut lock = LockFile::new();
    for dir in path.dirs() {
        let files = crate::sandbox::survey::wasm_files(dir);
        for file in files {
            let c = load_file(&file, cache)?;
            let name = match c.meta() {
                Some(m) => m.name.clone(),
                None => file
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            };
            lock.steps
                .entry(name)
                .or_insert_with(|| c.digest().to_string());
        }
    }
    Ok(lock)
}

fn lock_pipeline(text: &str, resolver: StepResolver) -> Result<LockFile> {
    let registry = crate::commands::builtin().with_steps(resolver);
    let pipeline = crate::dsl::parse(text)?;
    let commands = crate::executor::check_pipeline(&pipeline, 0, &registry)?;
    let mut lock = LockFile::new();
    for (cmd, stage) in commands.iter().zip(&pipeline.stages) {
        if let Some(d) = cmd.digest() {
            lock.steps.insert(stage.name.clone(), d.to_string());
        }
    }
    Ok(lock)
}

fn lock_workflow(file: &str, resolver: StepResolver) -> Result<LockFile> {
    let ctx = crate::kernel::Context::builder(crate::kernel::Mode::Tool, StateStore::from_env())
        .registry(std::sync::Arc::new(
            crate::commands::builtin().with_steps(resolver),
        ))
        .build();
    let (wf, _) = crate::workflow::load_plan(std::path::Path::new(file), Some(&ctx.registry))?;
    let mut lock = LockFile::new();
    lock.steps
        .extend(crate::workflow::policy::workflow_steps(&wf, &ctx));
    Ok(lock)
}

/// Run `lobster lock …`; returns the exit code.
pub fn lock(argv: &[String]) -> i32 {
    let result = trust_args::parse("lock", argv, &["--steps"]).and_then(|args| {
        if args.help {
            return Ok(None);
        }
        let cwd = std::env::current_dir()?;
        let extra: Vec<PathBuf> = args.steps.iter().map(PathBuf::from).collect();
        let path = StepPath::from_env(&cwd, &extra);
        let cache = ArtifactCache::in_state_dir(StateStore::from_env().dir());
        let workflow = match args.words.as_slice() {
            [one] if super::workflow_file::looks_like_workflow(one) => Some(one.clone()),
            _ => None,
        };
        let lock = if args.words.is_empty() {
            all_steps(&path, &cache)?
        } else if let Some(file) = workflow {
            lock_workflow(&file, StepResolver::new(path, cache))?
        } else {
            lock_pipeline(&args.words.join(" "), StepResolver::new(path, cache))?
        };
        let target = cwd.join(LOCK_FILE);
        std::fs::write(&target, lock.to_text())
            .map_err(|e| Error::runtime(format!("cannot write {LOCK_FILE}: {e}")))?;
        Ok(Some(lock.steps.len()))
    });
    match result {
        Ok(None) => {
            write_once(LOCK_HELP, "");
            0
        }
        Ok(Some(n)) => {
            write_once(
                "",
                &format!(
                    "wrote {LOCK_FILE} ({n} step{})\n",
                    if n == 1 { "" } else { "s" }
                ),
            );
            0
        }
        Err(e) => {
            write_once("", &human_error(&e, None));
            e.exit_code()
        }
    }
}
