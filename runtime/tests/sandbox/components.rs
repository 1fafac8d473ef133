//! Components found, compiled, cached and memoised: resolution by file name
//! and by described name, the artefact cache and its corrupt entries, one
//! compile for concurrent loads, the file memo and lock pins, and a
//! component swapped after admission.

use super::common::{cache, swap_setup, test_guest_dir, wasm};
use super::context;
use lobster::dsl::parse;
use lobster::executor::{run_pipeline, Mode, Outcome};
use lobster::sandbox::{
    self, load_file, ArtifactCache, CacheOutcome, Grants, StepPath, StepResolver,
};
use lobster::state::StateStore;
use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

#[test]
fn resolution_by_file_name_and_described_name_with_digests() {
    let Some(probe) = wasm(&test_guest_dir(), "probe.wasm") else {
        return;
    };
    let Some(noop) = wasm(&test_guest_dir(), "noop.wasm") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let steps = tmp.path().join("steps");
    std::fs::create_dir_all(&steps).unwrap();
    std::fs::copy(&probe, steps.join("renamed-component.wasm")).unwrap();
    std::fs::copy(&noop, steps.join("my_noop.wasm")).unwrap();
    std::fs::write(steps.join("broken.wasm"), b"\0asm garbage").unwrap();
    let resolver = StepResolver::new(StepPath::new(vec![steps.clone()]), cache());
    let registry = lobster::commands::builtin().with_steps(resolver);
    // `my.noop` matches my_noop.wasm by file name.
    let cmd = registry
        .resolve("my.noop")
        .unwrap()
        .expect("file-name match");
    let bytes = std::fs::read(&noop).unwrap();
    assert_eq!(cmd.digest(), Some(blake3::hash(&bytes).to_hex().as_str()));
    assert_eq!(cmd.signature().name, "my.noop");
    // `probe` matches renamed-component.wasm by its described name.
    let cmd = registry
        .resolve("probe")
        .unwrap()
        .expect("described-name match");
    assert!(cmd.help().contains("Report what the sandbox looks like"));
    assert!(cmd.help().contains("--times"));
    // A resolver pins what a name resolved to (one run sees one
    // component); a changed file is hashed again by the next resolver.
    let before = registry
        .resolve("my.noop")
        .unwrap()
        .unwrap()
        .digest()
        .unwrap()
        .to_string();
    std::fs::copy(&probe, steps.join("my_noop.wasm")).unwrap();
    let pinned = registry.resolve("my.noop").unwrap().unwrap();
    assert_eq!(pinned.digest().unwrap(), before);
    let next = StepResolver::new(StepPath::new(vec![steps.clone()]), cache());
    let after = next.resolve("my.noop").unwrap().unwrap();
    assert_ne!(after.digest(), before);
    assert_eq!(
        after.digest(),
        blake3::hash(&std::fs::read(&probe).unwrap())
            .to_hex()
            .as_str()
    );
    // Built-ins win; unknown names stay unknown; a broken file named directly is an error.
    assert!(registry
        .resolve("head")
        .unwrap()
        .unwrap()
        .digest()
        .is_none());
    assert!(registry.resolve("nothing.here").unwrap().is_none());
    let err = registry.resolve("broken").err().expect("broken component");
    assert!(err.to_string().contains("broken.wasm"), "{err}");
    let err = run_pipeline(&parse("head | nothing.here").unwrap(), 0, vec![], &{
        let mut c =
            lobster::executor::process_context(Mode::Tool, StateStore::new(tmp.path().join("s")))
                .build();
        c.registry = Arc::new(
            lobster::commands::builtin()
                .with_steps(StepResolver::new(StepPath::new(vec![steps]), cache())),
        );
        c
    })
    .unwrap_err();
    assert_eq!(err.to_string(), "Unknown command: nothing.here");
}

/// noop's file, bytes and digest, and an empty artefact cache in a fresh
/// state directory: the set-up of the artefact cache's tests.
struct FreshCache {
    path: std::path::PathBuf,
    bytes: Vec<u8>,
    digest: String,
    cache: ArtifactCache,
    state: tempfile::TempDir,
}

/// [`FreshCache`], or `None` when the guests are not built (see `wasm`).
fn fresh_cache() -> Option<FreshCache> {
    let path = wasm(&test_guest_dir(), "noop.wasm")?;
    let bytes = std::fs::read(&path).unwrap();
    let state = tempfile::tempdir().unwrap();
    Some(FreshCache {
        digest: sandbox::digest_of(&bytes),
        cache: ArtifactCache::in_state_dir(state.path()),
        path,
        bytes,
        state,
    })
}

#[test]
fn compiled_artefacts_are_cached_and_corrupt_entries_recompiled() {
    let Some(FreshCache {
        path,
        bytes,
        digest,
        cache,
        state: tmp,
    }) = fresh_cache()
    else {
        return;
    };
    let engine = sandbox::engine().unwrap();
    let outcome = |c: &ArtifactCache| c.load(engine, &bytes, &digest, &path).unwrap().1;
    assert_eq!(outcome(&cache), CacheOutcome::Compiled);
    assert_eq!(outcome(&cache), CacheOutcome::Hit);
    let (art, meta) = cache.entry_paths(engine, &digest).unwrap();
    assert!(art.starts_with(tmp.path().join("cache")));
    // A hit maps the artefact it checked instead of copying it into memory:
    // the file stays mapped while the component lives.
    let mapped = || {
        std::fs::read_to_string("/proc/self/maps")
            .unwrap()
            .contains(&art.display().to_string())
    };
    let (hit, _) = cache.load(engine, &bytes, &digest, &path).unwrap();
    assert!(mapped(), "{} is not mapped", art.display());
    drop(hit);
    // Flip one byte of the artefact: detected, recompiled, then trusted again.
    let mut a = std::fs::read(&art).unwrap();
    let mid = a.len() / 2;
    a[mid] ^= 0xff;
    std::fs::write(&art, &a).unwrap();
    assert!(matches!(outcome(&cache), CacheOutcome::Recompiled(_)));
    assert_eq!(outcome(&cache), CacheOutcome::Hit);
    // A stale or damaged header is not trusted either.
    std::fs::write(&meta, "lobster-cwasm v0\n").unwrap();
    assert!(matches!(outcome(&cache), CacheOutcome::Recompiled(_)));
    std::fs::write(&art, b"").unwrap();
    assert!(matches!(outcome(&cache), CacheOutcome::Recompiled(_)));
    assert_eq!(outcome(&cache), CacheOutcome::Hit);
}

/// Loads of one component at the same time share one compile: a fresh
/// `lobster serve` given 32 first runs at once compiled each of its
/// components 32 times over, and every first run waited for all of them.
#[test]
fn concurrent_loads_of_one_component_compile_it_once() {
    let Some(FreshCache {
        path,
        bytes,
        digest,
        cache,
        state: _state,
    }) = fresh_cache()
    else {
        return;
    };
    let engine = sandbox::engine().unwrap();
    let n = 8;
    let start = std::sync::Barrier::new(n);
    let outcomes: Vec<CacheOutcome> = std::thread::scope(|s| {
        let loads: Vec<_> = (0..n)
            .map(|_| {
                s.spawn(|| {
                    start.wait();
                    let (component, outcome) = cache.load(engine, &bytes, &digest, &path).unwrap();
                    // Every load gets the compiled component itself.
                    assert!(component
                        .component_type()
                        .exports(engine.engine())
                        .any(|(name, _)| name == "describe"));
                    outcome
                })
            })
            .collect();
        loads.into_iter().map(|l| l.join().unwrap()).collect()
    });
    let compiled = outcomes
        .iter()
        .filter(|o| **o == CacheOutcome::Compiled)
        .count();
    assert_eq!(compiled, 1, "{outcomes:?}");
    // The others waited for that compile, or came after it was stored.
    assert!(
        outcomes.iter().all(|o| matches!(
            o,
            CacheOutcome::Compiled | CacheOutcome::Joined | CacheOutcome::Hit
        )),
        "{outcomes:?}"
    );
    let (_, later) = cache.load(engine, &bytes, &digest, &path).unwrap();
    assert_eq!(later, CacheOutcome::Hit);
}

/// The per-process memo of component files (`sandbox::file_memo`): a file
/// is read and hashed again whenever its stamp changes (rewritten in place
/// or replaced by a rename), a file just written is not memoised until its
/// times are settled, and a pin in `lobster.lock` still refuses a
/// replaced component.
#[test]
fn memoised_component_files_follow_changes_and_pins() {
    use lobster::sandbox::file_memo::{is_memoised, SETTLED};
    let Some(set) = swap_setup() else {
        return;
    };
    let (cwd, steps) = (&set.cwd, &set.steps);
    let file = steps.join("memo.wasm");
    let settle = || std::thread::sleep(SETTLED + Duration::from_millis(50));

    std::fs::write(&file, &set.noop).unwrap();
    assert_eq!(
        load_file(&file, &cache()).unwrap().digest(),
        set.noop_digest
    );
    assert!(
        !is_memoised(&file),
        "a file written just now is not memoised"
    );
    settle();
    assert_eq!(
        load_file(&file, &cache()).unwrap().digest(),
        set.noop_digest
    );
    assert!(is_memoised(&file), "a settled file is memoised");

    // Rewritten in place (same inode), at once: the new bytes are loaded.
    std::fs::write(&file, &set.probe).unwrap();
    assert!(!is_memoised(&file));
    assert_eq!(
        load_file(&file, &cache()).unwrap().digest(),
        set.probe_digest
    );

    // Pinned to noop: runs while the memoised file is noop, refused once a
    // rename puts another component in its place.
    std::fs::write(&file, &set.noop).unwrap();
    std::fs::write(
        cwd.join("lobster.lock"),
        format!(
            "version = 1\n\n[steps]\n\"memo\" = \"{}\"\n",
            set.noop_digest
        ),
    )
    .unwrap();
    settle();
    let run = |ctx_dir: &Path| {
        let mut ctx = context(ctx_dir, &cwd.join("state"), Grants::none());
        ctx.registry = lobster::executor::registry(
            StepPath::new(vec![steps.clone()]),
            &ctx.state,
            ctx.authority().shared_policy(),
            ctx.cwd.clone(),
        );
        run_pipeline(&parse("memo").unwrap(), 0, vec![json!({"n": 1})], &ctx)
    };
    assert!(run(cwd).is_ok());
    assert!(is_memoised(&file));
    let swap = steps.join("swap.tmp");
    std::fs::write(&swap, &set.probe).unwrap();
    std::fs::rename(&swap, &file).unwrap();
    let err = run(cwd).expect_err("a replaced component is refused");
    assert!(
        err.to_string()
            .contains("step memo does not match its pin in lobster.lock"),
        "{err}"
    );
    settle();
    let err = run(cwd).expect_err("still refused once memoised");
    assert!(err.to_string().contains("does not match its pin"), "{err}");
    assert!(is_memoised(&file));
}

/// A component swapped on disk after the run resolved and admitted it is
/// not what the run executes: every phase of the run (plan, execution) uses
/// the resolver's pin, which holds the component compiled from the bytes
/// the admission judged. The next run resolves the file anew and judges it
/// then: an unsigned component put in place of a signed one is refused.
#[test]
fn a_component_swapped_after_admission_is_not_what_runs() {
    use lobster::signing::{key::SecretKey, sidecar, signature};
    let Some(set) = swap_setup() else {
        return;
    };
    let (cwd, steps) = (&set.cwd, &set.steps);
    let file = steps.join("swap.wasm");
    let key = SecretKey::generate("pin-test").unwrap();
    let policy = lobster::kernel::Policy::parse(
        &format!(
            "[signers]\nkeys = [\"{}\"]\nrequire_signed = true\n",
            key.public().line()
        ),
        Path::new("policy.toml"),
    )
    .unwrap();
    let context_under = |policy: Arc<lobster::kernel::Policy>| {
        let mut ctx = context(cwd, &cwd.join("state"), Grants::none());
        ctx.registry = lobster::executor::registry(
            StepPath::new(vec![steps.clone()]),
            &ctx.state,
            policy,
            cwd.clone(),
        );
        ctx
    };
    // `swap args`: noop returns its input, probe (asked `args`) describes
    // its arguments instead, so the output tells which component ran.
    let pipeline = parse("swap args").unwrap();
    let input = vec![json!({"n": 1})];
    let items = |outcome: Outcome| match outcome {
        Outcome::Completed { items, .. } => items,
        Outcome::Halted { stage, .. } => panic!("halted at stage {stage}"),
    };
    let swap_in = |bytes: &[u8]| {
        let tmp = steps.join("swap.tmp");
        std::fs::write(&tmp, bytes).unwrap();
        std::fs::rename(&tmp, &file).unwrap();
    };

    for signed in [false, true] {
        swap_in(&set.noop);
        let _ = std::fs::remove_file(sidecar::path_of(&file));
        let policy = if signed {
            let sig = signature::sign(&key, &set.noop, "swap.wasm").unwrap();
            sidecar::write(&file, &sig).unwrap();
            Arc::new(policy.clone())
        } else {
            Arc::default()
        };
        let ctx = context_under(policy.clone());
        // The plan resolves and admits `swap` (noop, signed when it must be).
        lobster::executor::check_pipeline(&pipeline, 0, &ctx.registry).unwrap();
        // Then the file changes under the run: probe, with noop's signature
        // beside it (which does not verify for probe's bytes).
        swap_in(&set.probe);
        let out = items(run_pipeline(&pipeline, 0, input.clone(), &ctx).unwrap());
        assert_eq!(out, input, "the admitted component ran (signed: {signed})");
        let pin = lobster::sandbox::resolver_of(&ctx.registry)
            .unwrap()
            .pinned("swap")
            .unwrap();
        assert_eq!(pin.digest(), set.noop_digest);
        assert_eq!(pin.path, file);
        assert_eq!(pin.trust, lobster::sandbox::resolve::Trust::Admitted);
        // The next run resolves the swapped file and judges it.
        let next = context_under(policy);
        let result = run_pipeline(&pipeline, 0, input.clone(), &next);
        if signed {
            let err = result.expect_err("probe's bytes do not verify against noop's signature");
            assert!(
                err.to_string().contains("policy refuses step swap"),
                "{err}"
            );
        } else {
            let out = items(result.unwrap());
            assert_ne!(out, input, "the next run runs the new component");
            assert_eq!(out[0]["positional"], json!(["args"]));
        }
    }
}
