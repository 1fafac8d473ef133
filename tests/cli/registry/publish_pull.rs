//! Publishing and pulling: by digest over plain HTTP, a tag only through its
//! lock pin (a moved tag fails), a blob swapped in the registry and the
//! local cache altered refused before anything is compiled, and the
//! registries an untrusted policy lets a workflow use.

use super::{
    blake3_hex, greet, insecure_policy, nothing_compiled, other_component, publish, published_ref,
    sha256_hex, wf, OwnRegistry,
};
use crate::common::{write, Env};

#[test]
fn publish_pull_and_run_by_digest_over_plain_http() {
    let (Some(reg), Some(wasm)) = (OwnRegistry::start(false), greet()) else {
        return;
    };
    let env = Env::new();
    let policy = insecure_policy(&env, &reg, "");
    let target = format!("{}:0.1", reg.oci("team/greet"));
    let r = publish(&env, &wasm, &target, &policy);
    let pinned = published_ref(&r);
    assert!(r.stdout.contains("unsigned"), "{r:?}");
    // Pull by tag, then by digest: the same bytes.
    for name in [target.as_str(), pinned.as_str()] {
        let r = env.run(&["step", "pull", name, "-o", "out.wasm", "--policy", &policy]);
        assert_eq!(r.code, 0, "{r:?}");
        assert_eq!(
            std::fs::read(env.work_path("out.wasm")).unwrap(),
            std::fs::read(&wasm).unwrap()
        );
    }
    // A stage name and a `uses:` by digest run without any pin.
    let r = env.run(&[
        "run",
        "--mode",
        "tool",
        "--policy",
        &policy,
        &format!("{pinned} --name Ada"),
    ]);
    assert_eq!(r.code, 0, "{r:?}");
    let wf = wf(&env, &pinned);
    let r = env.run(&[
        "run",
        "--mode",
        "tool",
        "--policy",
        &policy,
        wf.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("hello Ada!"), "{r:?}");
    // https is the default: without the policy's insecure_registries the
    // plain registry is not spoken to over http.
    let r = env.run(&["step", "pull", &target, "-o", "x.wasm"]);
    assert_ne!(r.code, 0, "{r:?}");
    assert!(
        r.stderr.contains(&format!("https://{}/", reg.addr))
            && r.stderr.contains("insecure_registries"),
        "the https attempt and the fix are named: {r:?}"
    );
    assert!(!env.work_path("x.wasm").exists());
}

#[test]
fn a_tag_runs_only_through_its_lock_pin_and_a_moved_tag_fails_check() {
    let (Some(reg), Some(wasm), Some(other)) =
        (OwnRegistry::start(false), greet(), other_component())
    else {
        return;
    };
    let env = Env::new();
    let policy = insecure_policy(&env, &reg, "");
    let target = format!("{}:0.1", reg.oci("team/greet"));
    published_ref(&publish(&env, &wasm, &target, &policy));
    let wf = wf(&env, &target);
    let wf_s = wf.to_str().unwrap();
    // Unpinned: refused before anything compiles, the step and fix named.
    let r = env.run(&["run", "--mode", "tool", "--policy", &policy, wf_s]);
    assert_eq!(r.code, 1, "{r:?}");
    let msg = r.stdout.clone();
    assert!(
        msg.contains("names no digest") && msg.contains("lobster lock"),
        "{r:?}"
    );
    assert!(nothing_compiled(&env));
    // Pinned: the lock records digest and blake3, and the run works.
    let r = env.run(&["lock", "--policy", &policy, wf_s]);
    assert_eq!(r.code, 0, "{r:?}");
    let lock = std::fs::read_to_string(env.work_path("lobster.lock")).unwrap();
    assert!(
        lock.contains("[oci]") && lock.contains(&target) && lock.contains("blake3 = "),
        "{lock}"
    );
    let r = env.run(&["run", "--mode", "tool", "--policy", &policy, wf_s]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("hello Ada!"));
    let r = env.run(&["check", "--policy", &policy, "lobster.lock", wf_s]);
    assert_eq!(r.code, 0, "{r:?}");
    // The tag moves to another component.
    published_ref(&publish(&env, &other, &target, &policy));
    let r = env.run(&["check", "--policy", &policy, "lobster.lock"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stdout.contains("tag moved") && r.stdout.contains(&target),
        "{r:?}"
    );
    // A run keeps the pinned component: the moved tag never runs.
    let fresh = Env::new();
    std::fs::copy(
        env.work_path("lobster.lock"),
        fresh.work_path("lobster.lock"),
    )
    .unwrap();
    std::fs::copy(env.work_path("policy.toml"), fresh.work_path("policy.toml")).unwrap();
    let wf2 = crate::registry::wf(&fresh, &target);
    let r = fresh.run(&[
        "run",
        "--mode",
        "tool",
        "--policy",
        &policy,
        wf2.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("hello Ada!"), "{r:?}");
    // A reference naming another digest than the pin is refused.
    let other_digest = format!("sha256:{}", "0".repeat(64));
    let wf3 = crate::registry::wf(&fresh, &format!("{target}@{other_digest}"));
    let r = fresh.run(&[
        "run",
        "--mode",
        "tool",
        "--policy",
        &policy,
        wf3.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stdout.contains("lobster.lock pins"), "{r:?}");
}

#[test]
fn a_blob_swapped_in_the_registry_is_refused_before_compile() {
    let (Some(reg), Some(wasm), Some(other)) =
        (OwnRegistry::start(false), greet(), other_component())
    else {
        return;
    };
    let env = Env::new();
    let policy = insecure_policy(&env, &reg, "");
    let pinned = published_ref(&publish(
        &env,
        &wasm,
        &format!("{}:0.1", reg.oci("team/greet")),
        &policy,
    ));
    // The layer's blob, altered on the registry's disk (same size: one
    // byte flipped), then replaced by a larger component.
    let bytes = std::fs::read(&wasm).unwrap();
    let blob = reg.blob_file(&format!("sha256:{}", sha256_hex(&bytes)));
    let mut altered = bytes.clone();
    let mid = altered.len() / 2;
    altered[mid] ^= 0x55;
    std::fs::write(&blob, &altered).unwrap();
    let wf = wf(&env, &pinned);
    let r = env.run(&[
        "run",
        "--mode",
        "tool",
        "--policy",
        &policy,
        wf.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stdout.contains("hello") && r.stdout.contains("does not match its digest"),
        "{r:?}"
    );
    assert!(nothing_compiled(&env));
    let r = env.run(&[
        "step", "pull", &pinned, "-o", "out.wasm", "--policy", &policy,
    ]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("does not match its digest"), "{r:?}");
    assert!(!env.work_path("out.wasm").exists());
    let mut larger = std::fs::read(other).unwrap();
    larger.extend_from_slice(&bytes);
    std::fs::write(&blob, larger).unwrap();
    let r = env.run(&[
        "run",
        "--mode",
        "tool",
        "--policy",
        &policy,
        &format!("{pinned} --name x"),
    ]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stdout.contains("more than the") && r.stdout.contains(&pinned),
        "{r:?}"
    );
    assert!(nothing_compiled(&env));
}

#[test]
fn the_local_cache_is_checked_at_every_load() {
    let (Some(reg), Some(wasm), Some(other)) =
        (OwnRegistry::start(false), greet(), other_component())
    else {
        return;
    };
    let env = Env::new();
    let policy = insecure_policy(&env, &reg, "");
    let pinned = published_ref(&publish(
        &env,
        &wasm,
        &format!("{}:0.1", reg.oci("team/greet")),
        &policy,
    ));
    let wf = wf(&env, &pinned);
    let run = || {
        env.run(&[
            "run",
            "--mode",
            "tool",
            "--policy",
            &policy,
            wf.to_str().unwrap(),
        ])
    };
    assert_eq!(run().code, 0);
    let cached = env.state.path().join("cache/oci/components").join(format!(
        "{}.wasm",
        blake3_hex(&std::fs::read(&wasm).unwrap())
    ));
    assert!(cached.is_file());
    std::fs::write(&cached, std::fs::read(other).unwrap()).unwrap();
    let r = run();
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stdout.contains("the cache was altered"), "{r:?}");
    assert!(!cached.exists(), "the altered file is removed");
    // The next run pulls it again.
    let r = run();
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("hello Ada!"));
}

#[test]
fn untrusted_policies_name_the_registries_a_workflow_may_use() {
    let (Some(reg), Some(wasm)) = (OwnRegistry::start(false), greet()) else {
        return;
    };
    let env = Env::new();
    let open = insecure_policy(&env, &reg, "");
    let pinned = published_ref(&publish(
        &env,
        &wasm,
        &format!("{}:0.1", reg.oci("team/greet")),
        &open,
    ));
    let wf = wf(&env, &pinned);
    let wf_s = wf.to_str().unwrap();
    write(
        &env,
        "closed.toml",
        &format!("trust = \"untrusted\"\nregistries = [\"ghcr.io/acme\"]\ninsecure_registries = [\"{}\"]\n", reg.addr),
    );
    let r = env.run(&["run", "--mode", "tool", "--policy", "closed.toml", wf_s]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stdout.contains("not among the policy's registries"),
        "{r:?}"
    );
    assert!(nothing_compiled(&env));
    let r = env.run(&["check", "--policy", "closed.toml", wf_s]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stdout.contains("registries"), "{r:?}");
    // A stage name is judged the same way.
    let r = env.run(&[
        "run",
        "--mode",
        "tool",
        "--policy",
        "closed.toml",
        &format!("{pinned} --name x"),
    ]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stdout.contains("not among the policy's registries"),
        "{r:?}"
    );
    // A templated `uses:` is decided only when the step loads: check can
    // but warn, and the load refuses it (the step named, nothing compiled).
    let templated = write(
        &env,
        "templated.lobster",
        &format!("name: t\nargs:\n  c:\n    default: {pinned}\nsteps:\n  - id: later\n    uses: ${{c}}\n    stdin: [1]\n"),
    );
    let templated = templated.to_str().unwrap();
    let r = env.run(&["check", "--policy", "closed.toml", templated]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("decided at run time"), "{r:?}");
    let r = env.run(&[
        "run",
        "--mode",
        "tool",
        "--policy",
        "closed.toml",
        templated,
    ]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stdout.contains("step later")
            && r.stdout
                .contains("not among the policy's registries [ghcr.io/acme]"),
        "{r:?}"
    );
    assert!(nothing_compiled(&env));
    // Listing the registry (with a repository prefix) lets it run.
    write(
        &env,
        "listed.toml",
        &format!(
            "trust = \"untrusted\"\nregistries = [\"{0}/team\"]\ninsecure_registries = [\"{0}\"]\n",
            reg.addr
        ),
    );
    let r = env.run(&["run", "--mode", "tool", "--policy", "listed.toml", wf_s]);
    assert_eq!(r.code, 0, "{r:?}");
}
