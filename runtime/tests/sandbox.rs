//! The WebAssembly sandbox against real guests: hostile ones must end in
//! their specific error without harming the host or any file outside the
//! grants; friendly ones (tests/guests, examples/steps) must work.
//!
//! Build the guests first: `tests/build-guests.sh`. A missing `.wasm` skips
//! its test with a loud message.

use lobster::dsl::parse;
use lobster::executor::{run_pipeline, Context, Mode, Outcome};
use lobster::sandbox::{
    self, load_file, ArtifactCache, CacheOutcome, EffectiveLimits, Grants, LoadedComponent,
    SandboxError, StepEnv, StepPath, StepResolver, Stream,
};
use lobster::state::StateStore;
use lobster::value::Item;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod common;
use common::{args, cache, example_dir, limits, repo, swap_setup, test_guest_dir, wasm};

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

#[test]
fn infinite_loop_runs_out_of_fuel() {
    let l = EffectiveLimits {
        fuel: 50_000_000,
        ..limits()
    };
    let Some(err) = hostile(&["loop"], l) else {
        return;
    };
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
    assert_eq!(
        err.to_string(),
        "step hostile ran out of fuel (limit 50000000)"
    );
}

#[test]
fn infinite_loop_hits_the_deadline() {
    let l = EffectiveLimits {
        fuel: u64::MAX / 4,
        timeout: Some(Duration::from_millis(300)),
        ..limits()
    };
    let start = Instant::now();
    let Some(err) = hostile(&["loop"], l) else {
        return;
    };
    assert!(
        matches!(err, SandboxError::Timeout { limit_ms: 300, .. }),
        "{err:?}"
    );
    assert_eq!(err.to_string(), "step hostile timed out after 300ms");
    assert!(start.elapsed() < Duration::from_secs(10));
}

#[test]
fn run_cancellation_stops_a_spinning_step() {
    let Some(h) = load(&test_guest_dir(), "hostile.wasm") else {
        return;
    };
    let cancel = lobster::executor::Cancel::default();
    let env = StepEnv {
        cancel: Some(cancel.clone()),
        ..StepEnv::closed()
    };
    cancel.arm_deadline(Duration::from_millis(200));
    let l = EffectiveLimits {
        fuel: u64::MAX / 4,
        timeout: None,
        ..limits()
    };
    let err = h
        .run("hostile", &args(&["loop"]), &[], &env, &l)
        .unwrap_err();
    assert!(matches!(err, SandboxError::Cancelled { .. }), "{err:?}");
    assert_host_ok();
}

#[test]
fn memory_bomb_hits_the_memory_limit() {
    let l = EffectiveLimits {
        memory_bytes: 32 << 20,
        ..limits()
    };
    let Some(err) = hostile(&["grow"], l) else {
        return;
    };
    assert!(matches!(err, SandboxError::MemoryLimit { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "step hostile exceeded its memory limit (33554432 bytes)"
    );
}

#[test]
fn unbounded_recursion_crashes_cleanly() {
    let Some(err) = hostile(&["recurse"], limits()) else {
        return;
    };
    match &err {
        SandboxError::Crashed { reason, .. } => {
            assert!(reason.contains("stack overflow"), "{reason}")
        }
        other => panic!("expected a crash, got {other:?}"),
    }
}

#[test]
fn stdout_flood_hits_the_output_cap() {
    let l = EffectiveLimits {
        output_bytes: 512_000,
        ..limits()
    };
    let Some(err) = hostile(&["flood-stdout"], l) else {
        return;
    };
    assert!(
        matches!(
            err,
            SandboxError::OutputLimit {
                stream: Stream::Stdout,
                limit: 512_000,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "step hostile wrote more than 512000 bytes to stdout"
    );
}

#[test]
fn stderr_and_log_floods_hit_the_stderr_cap() {
    let l = EffectiveLimits {
        output_bytes: 10_000,
        ..limits()
    };
    for mode in ["flood-stderr", "flood-log"] {
        let Some(err) = hostile(&[mode], l) else {
            return;
        };
        assert!(
            matches!(
                err,
                SandboxError::OutputLimit {
                    stream: Stream::Stderr,
                    limit: 10_000,
                    ..
                }
            ),
            "{mode}: {err:?}"
        );
    }
}

#[test]
fn oversized_result_is_refused() {
    let l = EffectiveLimits {
        output_bytes: 100_000,
        ..limits()
    };
    let Some(err) = hostile(&["big-result"], l) else {
        return;
    };
    assert!(
        matches!(err, SandboxError::ResultTooLarge { limit: 100_000, .. }),
        "{err:?}"
    );
}

#[test]
fn panic_and_trap_are_crashes() {
    let Some(err) = hostile(&["panic"], limits()) else {
        return;
    };
    match &err {
        SandboxError::Crashed { reason, .. } => {
            assert!(reason.contains("panic"), "{reason}");
            assert!(reason.contains("panicked on purpose"), "{reason}");
        }
        other => panic!("expected a crash, got {other:?}"),
    }
    let Some(err) = hostile(&["trap"], limits()) else {
        return;
    };
    assert!(matches!(err, SandboxError::Crashed { .. }), "{err:?}");
    let Some(err) = hostile(&["no-such-mode"], limits()) else {
        return;
    };
    assert!(matches!(err, SandboxError::InvalidArgs { .. }), "{err:?}");
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

#[test]
fn file_escapes_are_denied_and_nothing_outside_changes() {
    let Some(h) = load(&test_guest_dir(), "hostile.wasm") else {
        return;
    };
    let w = world();
    let grants = Grants::builder()
        .allow_read("data")
        .allow_write("rw")
        .build()
        .unwrap();
    let state = w.root.join("state-unused");
    let ctx = context(&w.cwd, &state, grants);
    let env = StepEnv::from_context(&ctx).unwrap();
    let before = snapshot(&w.root);
    let attempts: &[&[&str]] = &[
        &["read", "/data/../secret.txt"],
        &["read", "../secret.txt"],
        &["read", "/etc/passwd"],
        &["read", "/data/link"],
        &["read", "/rw/../../secret.txt"],
        &["list", "/"],
        &["write", "/data/new.txt"],
        &["write", "/data/in.txt"],
        &["mkdir", "/data/sub"],
        &["write", "/rw/../escape.txt"],
        &["write", "/rw/../data/x.txt"],
        &["write", "/escape.txt"],
        &["write", "/tmp/escape.txt"],
        &["write", "/data/link"],
    ];
    for attempt in attempts {
        let err = h
            .run("hostile", &args(attempt), &[], &env, &limits())
            .expect_err(&format!("{attempt:?} must be denied"));
        match &err {
            SandboxError::Failed { message, .. } => {
                assert!(message.starts_with("denied:"), "{attempt:?}: {message}")
            }
            other => panic!("{attempt:?}: expected a denial, got {other:?}"),
        }
    }
    assert_eq!(
        snapshot(&w.root),
        before,
        "files outside the grants changed"
    );
    // The read-write grant does work, and only inside itself.
    let out = h
        .run(
            "hostile",
            &args(&["write", "/rw/ok.txt"]),
            &[],
            &env,
            &limits(),
        )
        .unwrap();
    assert_eq!(out, [json!({"breach": "write /rw/ok.txt"})]);
    assert_eq!(
        std::fs::read_to_string(w.cwd.join("rw/ok.txt")).unwrap(),
        "escaped"
    );
    assert_host_ok();
}

#[test]
fn bad_grants_are_refused_before_the_step_runs() {
    let Some(dir) =
        wasm(&test_guest_dir(), "probe.wasm").map(|p| p.parent().unwrap().to_path_buf())
    else {
        return;
    };
    let w = world();
    std::fs::create_dir_all(w.root.join("outside")).unwrap();
    std::os::unix::fs::symlink(w.root.join("outside"), w.cwd.join("out-link")).unwrap();
    let abs = format!("{}:/o", w.root.join("outside").display());
    for (spec, expect) in [
        ("../outside:/o", "`..` is not allowed"),
        (abs.as_str(), "relative to the working directory"),
        ("out-link:/o", "outside the working directory"),
    ] {
        let grants = Grants::builder().allow_write(spec).build().unwrap();
        let mut ctx = context(&w.cwd, &w.root.join("state"), grants);
        ctx.registry = Arc::new(
            lobster::commands::builtin()
                .with_steps(StepResolver::new(StepPath::new(vec![dir.clone()]), cache())),
        );
        let p = parse("probe write /o/pwned.txt x").unwrap();
        let err = run_pipeline(&p, 0, vec![], &ctx).unwrap_err();
        assert!(err.to_string().contains(expect), "{spec}: {err}");
    }
    assert!(!w.root.join("outside/pwned.txt").exists());
}

#[test]
fn ungranted_env_is_invisible_and_granted_env_is_visible() {
    let Some(h) = load(&test_guest_dir(), "hostile.wasm") else {
        return;
    };
    let w = world();
    let grants = Grants::builder().allow_env("VISIBLE").build().unwrap();
    let ctx = context(&w.cwd, &w.root.join("state"), grants);
    let env = StepEnv::from_context(&ctx).unwrap();
    let err = h
        .run("hostile", &args(&["env", "SECRET"]), &[], &env, &limits())
        .unwrap_err();
    assert!(
        matches!(&err, SandboxError::Failed { message, .. } if message.starts_with("denied: env SECRET")),
        "{err:?}"
    );
    let err = h
        .run("hostile", &args(&["env", "HOME"]), &[], &env, &limits())
        .unwrap_err();
    assert!(matches!(err, SandboxError::Failed { .. }), "{err:?}");
    let out = h
        .run("hostile", &args(&["env", "VISIBLE"]), &[], &env, &limits())
        .unwrap();
    assert_eq!(out[0]["value"], "yes");
}

#[test]
fn sockets_and_name_lookup_are_denied() {
    let Some(h) = load(&test_guest_dir(), "hostile.wasm") else {
        return;
    };
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    for attempt in [
        vec!["connect", addr.as_str()],
        vec!["listen"],
        vec!["lookup", "localhost"],
    ] {
        let err = h
            .run(
                "hostile",
                &args(&attempt),
                &[],
                &StepEnv::closed(),
                &limits(),
            )
            .unwrap_err();
        assert!(
            matches!(&err, SandboxError::Failed { message, .. } if message.starts_with("denied:")),
            "{attempt:?}: {err:?}"
        );
    }
    assert!(listener.accept().is_err(), "the guest reached the listener");
    assert_host_ok();
}

#[test]
fn probe_sees_a_fixed_clock_seeded_random_and_nothing_else() {
    let Some(p) = load(&test_guest_dir(), "probe.wasm") else {
        return;
    };
    let run = |seed: u64, clock: u64| {
        let env = StepEnv {
            random_seed: seed,
            wall_clock_ms: clock,
            ..StepEnv::closed()
        };
        p.run("probe", &args(&["world"]), &[], &env, &limits())
            .unwrap()[0]
            .clone()
    };
    let a = run(7, 1_700_000_000_000);
    let b = run(7, 1_700_000_000_000);
    let c = run(8, 1_700_000_000_000);
    assert_eq!(a, b, "same seed and clock, same world");
    assert_ne!(
        a["hash"], c["hash"],
        "the seed drives the guest's random state"
    );
    assert_eq!(a["now"], 1_700_000_000);
    assert_eq!(a["env"], json!([]));
    assert_eq!(a["root_entries"], 0);
}

#[test]
fn describe_args_and_state_through_the_pipeline() {
    let Some(dir) =
        wasm(&test_guest_dir(), "probe.wasm").map(|p| p.parent().unwrap().to_path_buf())
    else {
        return;
    };
    let w = world();
    let mut ctx = context(&w.cwd, &w.root.join("state"), Grants::none());
    ctx.registry = Arc::new(
        lobster::commands::builtin()
            .with_steps(StepResolver::new(StepPath::new(vec![dir.clone()]), cache())),
    );
    let (sink, lines) = sandbox::log::collect();
    ctx.sandbox.log = sink;
    let run = |ctx: &Context, text: &str, input: Vec<Item>| -> Vec<Item> {
        match run_pipeline(&parse(text).unwrap(), 0, input, ctx).unwrap() {
            Outcome::Completed { items, .. } => items,
            other => panic!("{other:?}"),
        }
    };
    // Items flow between built-ins and wasm steps.
    let out = run(
        &ctx,
        "noop | head --n 2 | probe echo",
        vec![json!(1), json!(2), json!(3)],
    );
    assert_eq!(out, [json!(1), json!(2)]);
    // Args round-trip, numbers validated at plan time.
    let out = run(&ctx, "probe args p1 --loud --times 3", vec![]);
    assert_eq!(out[0]["positional"], json!(["args", "p1"]));
    assert_eq!(out[0]["flags"], json!([["loud", "true"], ["times", "3"]]));
    assert_eq!(out[0]["times"], 3.0);
    // A flag its describe does not declare is refused before it runs.
    let err = run_pipeline(&parse("probe args --s=--x").unwrap(), 0, vec![], &ctx).unwrap_err();
    assert_eq!(err.to_string(), "Unknown flag --s for probe");
    let err = run_pipeline(&parse("probe args --times abc").unwrap(), 0, vec![], &ctx).unwrap_err();
    assert!(
        err.to_string().contains("--times must be a number"),
        "{err}"
    );
    // State is scoped to step + run scope.
    assert_eq!(run(&ctx, "probe state", vec![])[0]["counter"], 1);
    assert_eq!(run(&ctx, "probe state", vec![])[0]["counter"], 2);
    ctx.sandbox.state_scope = "other-run".into();
    assert_eq!(run(&ctx, "probe state", vec![])[0]["counter"], 1);
    // Logs reach the sink, tagged with the step.
    run(&ctx, "probe log --loud", vec![]);
    let lines = lines.lock().unwrap().clone();
    assert!(lines
        .iter()
        .any(|l| l.step == "probe" && l.message == "hello from probe"));
    assert!(lines
        .iter()
        .any(|l| l.level == sandbox::Level::Warn && l.message == "loud"));
    // Step errors become runtime errors naming the step.
    let err = run_pipeline(&parse("probe read /nope").unwrap(), 0, vec![], &ctx).unwrap_err();
    assert!(err.to_string().starts_with("step probe failed:"), "{err}");
}

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

#[test]
fn plain_wasi_commands_are_steps_too() {
    let Some(c) = load(&test_guest_dir(), "cmd-echo.wasm") else {
        return;
    };
    assert_eq!(c.kind(), sandbox::ComponentKind::Command);
    let out = c
        .run(
            "cmd-echo",
            &args(&["--x=1"]),
            &[json!({"a": 1})],
            &StepEnv::closed(),
            &limits(),
        )
        .unwrap();
    assert_eq!(
        out,
        [json!({"item": {"a": 1}, "argv": ["cmd-echo", "--x=1"]})]
    );
    let out = c
        .run(
            "cmd-echo",
            &args(&["single"]),
            &[json!(1), json!(2)],
            &StepEnv::closed(),
            &limits(),
        )
        .unwrap();
    assert_eq!(out, [json!({"count": 2})]);
    let err = c
        .run(
            "cmd-echo",
            &args(&["fail"]),
            &[],
            &StepEnv::closed(),
            &limits(),
        )
        .unwrap_err();
    match &err {
        SandboxError::Exit { code, stderr, .. } => {
            assert_ne!(*code, 0);
            assert!(stderr.contains("failing on purpose"), "{stderr}");
        }
        other => panic!("expected an exit error, got {other:?}"),
    }
    assert_host_ok();
}

/// A working directory with a copy of examples/mail at `mail/`, and a
/// context whose step path is the built example steps.
fn mailbox(grants: Grants) -> Option<(tempfile::TempDir, Context)> {
    let dir = example_dir();
    wasm(&dir, "inbox_list.wasm")?;
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path().join("cwd");
    std::fs::create_dir_all(cwd.join("mail")).unwrap();
    for entry in std::fs::read_dir(repo().join("examples/mail")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), cwd.join("mail").join(entry.file_name())).unwrap();
    }
    let mut ctx = context(&cwd, &tmp.path().join("state"), grants);
    ctx.registry = Arc::new(
        lobster::commands::builtin()
            .with_steps(StepResolver::new(StepPath::new(vec![dir]), cache())),
    );
    Some((tmp, ctx))
}

fn items_of(ctx: &Context, text: &str) -> lobster::Result<Vec<Item>> {
    match run_pipeline(&parse(text).unwrap(), 0, vec![], ctx)? {
        Outcome::Completed { items, .. } => Ok(items),
        other => panic!("{other:?}"),
    }
}

#[test]
fn example_inbox_pipeline_lists_categorizes_and_triages() {
    let grants = Grants::builder().allow_read("mail").build().unwrap();
    let Some((_tmp, ctx)) = mailbox(grants) else {
        return;
    };
    let items = items_of(&ctx, "inbox.list | inbox.categorize | email.triage").unwrap();
    assert_eq!(items.len(), 10);
    let by_id = |id: &str| items.iter().find(|i| i["id"] == id).unwrap().clone();
    let budget = by_id("001-budget-review");
    assert_eq!(budget["from"], "Alice Martin <alice@acme.example>");
    assert_eq!(budget["labels"], json!(["inbox"]));
    assert_eq!(budget["category"], "work");
    assert_eq!(budget["triage"], "needs_reply");
    let expect = [
        ("002-newsletter", "newsletter", "fyi"),
        ("003-invoice", "finance", "needs_action"),
        ("004-security-alert", "security", "fyi"),
        ("005-meeting-invite", "meetings", "needs_action"),
        ("006-question-from-friend", "personal", "needs_reply"),
        ("007-ci-failure", "notifications", "needs_action"),
        ("008-receipt", "finance", "fyi"),
        ("009-contract", "personal", "needs_action"),
        ("010-team-update", "work", "fyi"),
    ];
    for (id, category, triage) in expect {
        let item = by_id(id);
        assert_eq!(
            (item["category"].as_str(), item["triage"].as_str()),
            (Some(category), Some(triage)),
            "{id}"
        );
    }
    let only = items_of(
        &ctx,
        "inbox.list --limit 6 | email.triage --only needs_reply",
    )
    .unwrap();
    assert_eq!(only.len(), 2);
    let err = items_of(&ctx, "inbox.list | email.triage --only later").unwrap_err();
    assert!(
        err.to_string()
            .starts_with("step email.triage rejected its arguments"),
        "{err}"
    );
}

#[test]
fn example_steps_refuse_to_run_without_their_capabilities() {
    let Some((_tmp, ctx)) = mailbox(Grants::none()) else {
        return;
    };
    let err = items_of(&ctx, "inbox.list | inbox.categorize").unwrap_err();
    assert_eq!(
        err.to_string(),
        "step inbox.list needs read access to /mail, which this run does not grant (add --allow-read DIR:/mail)"
    );
    let grants = Grants::builder().allow_read("mail").build().unwrap();
    let Some((tmp, ctx)) = mailbox(grants) else {
        return;
    };
    let before = snapshot(tmp.path());
    let err = items_of(&ctx, "inbox.list | inbox.apply --apply --move-by category").unwrap_err();
    assert!(
        err.to_string().contains("needs write access to /mail"),
        "{err}"
    );
    assert_eq!(snapshot(tmp.path()), before);
}

#[test]
fn example_inbox_apply_plans_then_applies_inside_the_grant_only() {
    let grants = Grants::builder().allow_write("mail").build().unwrap();
    let Some((tmp, ctx)) = mailbox(grants) else {
        return;
    };
    let before = snapshot(tmp.path());
    let pipeline = "inbox.list | inbox.categorize | email.triage | inbox.apply --move-by category";
    let plan = items_of(&ctx, pipeline).unwrap();
    assert_eq!(plan.len(), 10);
    assert!(plan
        .iter()
        .all(|p| p["applied"] == false && p["changes"] == true));
    let invoice = plan.iter().find(|p| p["id"] == "003-invoice").unwrap();
    assert_eq!(invoice["move_to"], "finance");
    assert_eq!(invoice["add_labels"], json!(["finance", "needs_action"]));
    assert_eq!(
        snapshot(tmp.path()),
        before,
        "a dry run must not change files"
    );

    let done = items_of(&ctx, &format!("{pipeline} --apply")).unwrap();
    assert!(done.iter().all(|p| p["applied"] == true));
    let mail = ctx.cwd.join("mail");
    let moved = std::fs::read_to_string(mail.join("finance/003-invoice.eml")).unwrap();
    assert!(
        moved.contains("Labels: inbox, finance, needs_action\n"),
        "{moved}"
    );
    assert!(!mail.join("003-invoice.eml").exists());
    // Everything that changed is inside the granted directory.
    let after = snapshot(tmp.path());
    for (path, meta) in &before {
        if !path.starts_with(&mail) {
            assert_eq!(after.get(path), Some(meta), "{} changed", path.display());
        }
    }
    for path in after.keys() {
        assert!(
            path.starts_with(&mail) || before.contains_key(path),
            "{} appeared",
            path.display()
        );
    }
    // Listing the moved folder finds the relabelled message.
    let listed = items_of(&ctx, "inbox.list --folder finance").unwrap();
    assert_eq!(listed.len(), 2);
}

#[test]
fn a_sleeping_guest_is_woken_by_the_deadline_and_by_cancellation() {
    let l = EffectiveLimits {
        timeout: Some(Duration::from_millis(300)),
        ..limits()
    };
    let start = Instant::now();
    let Some(err) = hostile(&["sleep"], l) else {
        return;
    };
    assert!(
        matches!(err, SandboxError::Timeout { limit_ms: 300, .. }),
        "{err:?}"
    );
    assert!(start.elapsed() < Duration::from_secs(10));

    let Some(h) = load(&test_guest_dir(), "hostile.wasm") else {
        return;
    };
    let cancel = lobster::executor::Cancel::default();
    cancel.arm_deadline(Duration::from_millis(200));
    let env = StepEnv {
        cancel: Some(cancel),
        ..StepEnv::closed()
    };
    let l = EffectiveLimits {
        timeout: None,
        ..limits()
    };
    let start = Instant::now();
    let err = h
        .run("hostile", &args(&["sleep"]), &[], &env, &l)
        .unwrap_err();
    assert!(matches!(err, SandboxError::Cancelled { .. }), "{err:?}");
    assert!(start.elapsed() < Duration::from_secs(10));
}

#[test]
fn commands_and_cancellation_through_the_pipeline() {
    let Some(dir) =
        wasm(&test_guest_dir(), "cmd-echo.wasm").map(|p| p.parent().unwrap().to_path_buf())
    else {
        return;
    };
    let w = world();
    let mut ctx = context(&w.cwd, &w.root.join("state"), Grants::none());
    ctx.registry = Arc::new(
        lobster::commands::builtin()
            .with_steps(StepResolver::new(StepPath::new(vec![dir]), cache())),
    );
    // A plain wasi:cli/command resolved by file name, between built-ins.
    let out = match run_pipeline(
        &parse("head --n 1 | cmd-echo --tag=x").unwrap(),
        0,
        vec![json!(1), json!(2)],
        &ctx,
    )
    .unwrap()
    {
        Outcome::Completed { items, .. } => items,
        other => panic!("{other:?}"),
    };
    assert_eq!(out, [json!({"item": 1, "argv": ["cmd-echo", "--tag=x"]})]);
    let cmd = ctx.registry.resolve("cmd-echo").unwrap().unwrap();
    assert!(cmd.help().contains("wasi:cli/command"));
    assert_eq!(cmd.digest().map(str::len), Some(64));
    // The run's own deadline (armed by the CLI) stops a spinning step with
    // the run's timeout error, naming the step, where it was and the limit.
    ctx.limits.steps.fuel = u64::MAX / 4;
    ctx.cancel.arm_deadline(Duration::from_millis(300));
    let start = Instant::now();
    let err = run_pipeline(&parse("hostile loop").unwrap(), 0, vec![], &ctx).unwrap_err();
    assert_eq!(
        err.to_string(),
        "lobster runtime timed out: step hostile was in run when the run's deadline (300ms) passed"
    );
    // Loading and compiling `hostile` counts here too; under CI's load that
    // alone has taken over 10 s, so the bound only says "it did not spin on".
    assert!(start.elapsed() < Duration::from_secs(60));
    assert_host_ok();
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
