//! Signatures and bundles through the registry, and signatures refused when
//! made by unknown keys or over other bytes.

use super::{
    greet, insecure_policy, nothing_compiled, other_component, publish, published_ref, wf,
    OwnRegistry,
};
use crate::common::Env;
use std::path::Path;

#[test]
fn signatures_and_bundles_travel_through_the_registry() {
    let (Some(reg), Some(wasm)) = (OwnRegistry::start(false), greet()) else {
        return;
    };
    let env = Env::new();
    let line = crate::signing::new_key(&env, "release");
    let policy = insecure_policy(
        &env,
        &reg,
        &format!("[signers]\nkeys = [\"{line}\"]\nrequire_signed = true\n"),
    );
    // Published unsigned, then signed by reference.
    let target = format!("{}:0.1", reg.oci("team/greet"));
    let pinned = published_ref(&publish(&env, &wasm, &target, &policy));
    let use_it = |env: &Env| {
        let wf = wf(env, &pinned);
        env.run(&[
            "run",
            "--mode",
            "tool",
            "--policy",
            &policy,
            wf.to_str().unwrap(),
        ])
    };
    let r = use_it(&env);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stdout.contains("is not signed"), "{r:?}");
    let r = env.run(&[
        "step",
        "sign",
        "--key",
        "release.key",
        &target,
        "--policy",
        &policy,
    ]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains(".sig"), "{r:?}");
    // A fresh machine (state, cache) gets the signature with the step.
    let fresh = Env::new();
    std::fs::copy(env.work_path("policy.toml"), fresh.work_path("policy.toml")).unwrap();
    let r = use_it(&fresh);
    assert_eq!(r.code, 0, "{r:?}");
    let r = fresh.run(&["step", "pull", &target, "-o", "g.wasm", "--policy", &policy]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        r.stdout.contains("signed by release (key ") && r.stdout.contains("trusted signer"),
        "{r:?}"
    );
    if std::path::Path::new("/usr/bin/minisign").is_file() {
        let out = std::process::Command::new("/usr/bin/minisign")
            .args(["-V", "-p"])
            .arg(env.work_path("release.pub"))
            .arg("-m")
            .arg(fresh.work_path("g.wasm"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // A bundle publishes with its manifest and pulls back as a bundle.
    let src = env.work_path("src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::copy(&wasm, src.join("greet.wasm")).unwrap();
    let r = env.run(&["bundle", "build", "src", "--out", "greet.bundle"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(
        env.run(&["step", "sign", "--key", "release.key", "greet.bundle"])
            .code,
        0
    );
    assert!(env.work_path("greet.bundle/step.wasm.minisig").is_file());
    let btarget = format!("{}:0.2", reg.oci("team/greet-bundle"));
    let r = publish(&env, Path::new("greet.bundle"), &btarget, &policy);
    assert!(r.stdout.contains("signature by release"), "{r:?}");
    published_ref(&r);
    let r = fresh.run(&[
        "step",
        "pull",
        &btarget,
        "-o",
        "back.bundle",
        "--policy",
        &policy,
    ]);
    assert_eq!(r.code, 0, "{r:?}");
    for f in ["manifest.toml", "step.wasm", "step.wasm.minisig"] {
        assert_eq!(
            std::fs::read(fresh.work_path("back.bundle").join(f)).unwrap(),
            std::fs::read(env.work_path("greet.bundle").join(f)).unwrap(),
            "{f}"
        );
    }
    let r = fresh.run(&["bundle", "verify", "back.bundle"]);
    assert_eq!(r.code, 0, "{r:?}");
}

#[test]
fn registry_signatures_by_unknown_keys_or_over_other_bytes_are_refused_before_compile() {
    let (Some(reg), Some(wasm), Some(other)) =
        (OwnRegistry::start(false), greet(), other_component())
    else {
        return;
    };
    let env = Env::new();
    let trusted = crate::signing::new_key(&env, "ci");
    crate::signing::new_key(&env, "stranger");
    let policy = insecure_policy(
        &env,
        &reg,
        &format!("[signers]\nkeys = [\"{trusted}\"]\nrequire_signed = true\n"),
    );
    let steps = env.work_path("steps");
    std::fs::create_dir_all(&steps).unwrap();
    std::fs::copy(&wasm, steps.join("greet.wasm")).unwrap();
    std::fs::copy(&other, steps.join("list.wasm")).unwrap();
    let sign = |key: &str, what: &str| {
        let r = env.run(&["step", "sign", "--key", key, what, "--policy", &policy]);
        assert_eq!(r.code, 0, "{r:?}");
    };
    sign("ci.key", "steps/greet.wasm");
    // Published with the trusted signature, then signed over in the
    // registry by a key the policy does not list.
    let target = format!("{}:0.1", reg.oci("team/greet"));
    let r = publish(&env, Path::new("steps/greet.wasm"), &target, &policy);
    assert!(r.stdout.contains("signature by ci"), "{r:?}");
    let greet_ref = published_ref(&r);
    sign("stranger.key", &target);
    // A trusted signature over other bytes: greet's, moved onto list.
    std::fs::copy(
        steps.join("greet.wasm.minisig"),
        steps.join("list.wasm.minisig"),
    )
    .unwrap();
    let list_ref = published_ref(&publish(
        &env,
        Path::new("steps/list.wasm"),
        &format!("{}:0.1", reg.oci("team/list")),
        &policy,
    ));
    for (reference, lax, refusal) in [
        (&greet_ref, false, "signed by stranger"),
        (&list_ref, false, "over other bytes"),
        // A signature that does not verify is refused without require_signed.
        (&list_ref, true, "over other bytes"),
    ] {
        // A fresh machine: nothing cached, the signature from the registry.
        let fresh = Env::new();
        let policy = if lax {
            insecure_policy(
                &fresh,
                &reg,
                &format!("[signers]\nkeys = [\"{trusted}\"]\n"),
            )
        } else {
            std::fs::copy(env.work_path("policy.toml"), fresh.work_path("policy.toml")).unwrap();
            "policy.toml".to_string()
        };
        let wf = wf(&fresh, reference);
        let r = fresh.run(&[
            "run",
            "--mode",
            "tool",
            "--policy",
            &policy,
            wf.to_str().unwrap(),
        ]);
        assert_eq!(r.code, 1, "{r:?}");
        assert!(
            r.stdout.contains("step hello") && r.stdout.contains(refusal),
            "{reference} ({refusal}): {r:?}"
        );
        if refusal == "signed by stranger" {
            assert!(
                r.stdout.contains("not among the policy's [signers] keys"),
                "{r:?}"
            );
        }
        assert!(nothing_compiled(&fresh), "{reference}");
        let r = fresh.run(&["check", "--policy", &policy, wf.to_str().unwrap()]);
        assert_eq!(r.code, 1, "{r:?}");
        assert!(r.stdout.contains(refusal), "{r:?}");
    }
}
