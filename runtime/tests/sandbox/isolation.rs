//! What a guest cannot reach: files outside its grants, bad grants refused
//! before it runs, env it was not granted, sockets and name lookup; and the
//! fixed clock and seeded randomness it sees.

use super::common::{args, cache, limits, test_guest_dir, wasm};
use super::{assert_host_ok, context, load, snapshot, world};
use lobster::dsl::parse;
use lobster::executor::run_pipeline;
use lobster::sandbox::{Grants, SandboxError, StepEnv, StepPath, StepResolver};
use serde_json::json;
use std::sync::Arc;

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
