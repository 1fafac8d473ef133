//! `lobster lock [--steps DIR]… [--policy FILE] ['<pipeline>' | WORKFLOW]`: pin
//! step digests (and registry references: digest and blake3) in
//! `./lobster.lock`.

use super::output::{human_error, write_once};
use super::trust_args;
use crate::error::{Error, Result};
use crate::policy::lock::{LockFile, LOCK_FILE};
use crate::policy::{Authority, Policy};
use crate::registry::Admitter;
use crate::sandbox::{ArtifactCache, StepPath, StepResolver};
use crate::state::StateStore;
use std::path::PathBuf;
use std::sync::Arc;

/// `lobster help lock`.
pub const LOCK_HELP: &str = "lobster lock — pin WebAssembly steps to their blake3 digests

Usage:
  lobster lock [--steps DIR]... [--policy FILE] ['<pipeline>' | WORKFLOW-FILE]

Writes ./lobster.lock (TOML, sorted by step name): with a pipeline or a
workflow file, the steps it uses (pipeline stages and uses: components);
without, every component on the step path (--steps DIRs,
LOBSTER_STEP_PATH, ./steps). While ./lobster.lock exists, a run refuses a
pinned step whose component no longer has its pinned digest.

Registry steps (oci://HOST/REPO:TAG, in stage names or uses:) are resolved
at their registry now (a digest the reference names wins), pulled and
verified, and pinned under [oci] by the reference without digest, with the
manifest digest and the component's blake3; runs then fetch that digest,
never the tag. Under a policy (--policy FILE, else LOBSTER_POLICY) with
[signers] require_signed, an unsigned or unknown-signer component is refused
before it is compiled, as a run would.
";

/// Every step on `path`, by name (first on the path wins), with its digest.
pub fn all_steps(path: &StepPath, cache: &ArtifactCache) -> Result<LockFile> {
    all_steps_admitted(path, cache, None)
}

/// [`all_steps`], each component judged by `admission` before it compiles.
pub fn all_steps_admitted(
    path: &StepPath,
    cache: &ArtifactCache,
    admission: Option<&dyn crate::sandbox::Admission>,
) -> Result<LockFile> {
    let mut lock = LockFile::new();
    for dir in path.dirs() {
        let files = crate::sandbox::survey::wasm_files(dir);
        for file in files {
            let shown = file.display().to_string();
            let c = crate::sandbox::file_memo::load_admitted(
                &file,
                cache,
                admission.map(|a| (shown.as_str(), a)),
            )?;
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
            if !crate::registry::is_reference(&stage.name) {
                lock.steps.insert(stage.name.clone(), d.to_string());
            }
        }
    }
    Ok(lock)
}

fn lock_workflow(file: &str, resolver: StepResolver, policy: Policy) -> Result<LockFile> {
    let ctx = crate::kernel::Context::builder(crate::kernel::Mode::Tool, StateStore::from_env())
        .policy(policy)
        .registry(std::sync::Arc::new(
            crate::commands::builtin().with_steps(resolver),
        ))
        .build();
    let (wf, _) = crate::workflow::load_plan(std::path::Path::new(file), Some(&ctx.registry))?;
    let mut lock = LockFile::new();
    // The walk refuses what the policy refuses (signatures, registries)
    // before anything is pinned.
    crate::workflow::policy::check_workflow_refusals(&wf, &ctx)?;
    lock.steps.extend(
        crate::workflow::policy::workflow_steps(&wf, &ctx)
            .into_iter()
            .filter(|(name, _)| !crate::registry::is_reference(name)),
    );
    Ok(lock)
}

/// Run `lobster lock …`; returns the exit code.
pub fn lock(argv: &[String]) -> i32 {
    let result = trust_args::parse("lock", argv, &["--steps", "--policy"]).and_then(|args| {
        if args.help {
            return Ok(None);
        }
        let cwd = std::env::current_dir()?;
        let policy = Policy::from_flag_or_env(args.policy.as_deref(), &cwd)?;
        let extra: Vec<PathBuf> = args.steps.iter().map(PathBuf::from).collect();
        let path = StepPath::from_env(&cwd, &extra);
        let state = StateStore::from_env();
        let cache = ArtifactCache::in_state_dir(state.dir());
        let admission = Arc::new(
            Admitter::new(
                Arc::new(Authority::new(policy.clone(), cwd.clone())),
                state.dir(),
            )
            .resolving_tags(),
        );
        let resolver =
            StepResolver::new(path.clone(), cache.clone()).with_admission(admission.clone());
        let workflow = match args.words.as_slice() {
            [one] if super::workflow_file::looks_like_workflow(one) => Some(one.clone()),
            _ => None,
        };
        let mut lock = if args.words.is_empty() {
            all_steps_admitted(&path, &cache, Some(admission.as_ref()))?
        } else if let Some(file) = workflow {
            lock_workflow(&file, resolver, policy)?
        } else {
            lock_pipeline(&args.words.join(" "), resolver)?
        };
        for (name, pin) in admission.fetched() {
            lock.oci.insert(
                name,
                crate::policy::lock::OciPin {
                    digest: pin.digest,
                    blake3: pin.blake3,
                },
            );
        }
        let target = cwd.join(LOCK_FILE);
        std::fs::write(&target, lock.to_text())
            .map_err(|e| Error::runtime(format!("cannot write {LOCK_FILE}: {e}")))?;
        Ok(Some(lock.steps.len() + lock.oci.len()))
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
