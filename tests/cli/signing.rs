//! Step signatures through the binary: `lobster keys new`, `lobster step
//! sign`, verified by Debian's `minisign -V` (a verifier nobody here
//! wrote), and the policy's `[signers]`: unsigned, unknown-signer and
//! altered components refused before they are compiled by run, resume,
//! check and lock, with the step and the fix named; `help STEP` and
//! `doctor` show the signer.

use crate::common::{guest, token_of, write, Env, Run};
use std::path::{Path, PathBuf};
use std::process::Command;

fn minisign() -> Option<&'static str> {
    if Path::new("/usr/bin/minisign").is_file() {
        return Some("/usr/bin/minisign");
    }
    if std::env::var_os("CI").is_some() {
        panic!("minisign is not installed (.ci/run installs it)");
    }
    eprintln!("SKIPPED: minisign is not installed");
    None
}

/// `lobster keys new NAME` in the work dir; returns the key line.
pub fn new_key(env: &Env, name: &str) -> String {
    let r = env.run(&["keys", "new", name]);
    assert_eq!(r.code, 0, "{r:?}");
    let pubfile = std::fs::read_to_string(env.work_path(&format!("{name}.pub"))).unwrap();
    pubfile.lines().nth(1).unwrap().to_string()
}

fn steps_with(env: &Env, names: &[&str]) -> Option<PathBuf> {
    let dir = env.work_path("steps");
    std::fs::create_dir_all(&dir).unwrap();
    for name in names {
        let built = guest("examples/steps", name)?;
        std::fs::copy(built, dir.join(format!("{name}.wasm"))).unwrap();
    }
    Some(dir)
}

fn sign(env: &Env, key: &str, file: &str) -> Run {
    env.run(&["step", "sign", "--key", key, file])
}

fn nothing_compiled(env: &Env) -> bool {
    let dir = env.state.path().join("cache/wasm");
    std::fs::read_dir(&dir).map_or(true, |d| {
        d.flatten()
            .all(|e| !e.file_name().to_string_lossy().ends_with(".cwasm"))
    })
}

#[test]
fn keys_are_private_and_minisign_verifies_what_lobster_signs() {
    let Some(minisign) = minisign() else { return };
    let env = Env::new();
    let Some(steps) = steps_with(&env, &["greet"]) else {
        return;
    };
    let line = new_key(&env, "release");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(env.work_path("release.key"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    assert!(std::fs::read_to_string(env.work_path("release.pub"))
        .unwrap()
        .contains("lobster signer release"));
    // Never overwritten.
    let r = env.run(&["keys", "new", "release"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("refusing to overwrite"), "{r:?}");
    let r = sign(&env, "release.key", "steps/greet.wasm");
    assert_eq!(r.code, 0, "{r:?}");
    let wasm = steps.join("greet.wasm");
    let out = Command::new(minisign)
        .args(["-V", "-p"])
        .arg(env.work_path("release.pub"))
        .arg("-m")
        .arg(&wasm)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("signer:release"), "{text}");
    // Other bytes under the same signature: minisign refuses too.
    let copy = env.work_path("copy.wasm");
    let mut bytes = std::fs::read(&wasm).unwrap();
    bytes.push(0);
    std::fs::write(&copy, bytes).unwrap();
    std::fs::copy(
        steps.join("greet.wasm.minisig"),
        env.work_path("copy.wasm.minisig"),
    )
    .unwrap();
    let out = Command::new(minisign)
        .args(["-V", "-p"])
        .arg(env.work_path("release.pub"))
        .arg("-m")
        .arg(&copy)
        .output()
        .unwrap();
    assert!(!out.status.success());
    // The other way round: minisign signs (with a key of its own), and a
    // policy listing that key accepts the step.
    let out = Command::new(minisign)
        .args(["-G", "-W", "-p"])
        .arg(env.work_path("mk.pub"))
        .arg("-s")
        .arg(env.work_path("mk.key"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(minisign)
        .args(["-S", "-s"])
        .arg(env.work_path("mk.key"))
        .arg("-m")
        .arg(&wasm)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mk = std::fs::read_to_string(env.work_path("mk.pub")).unwrap();
    let mk_line = mk.lines().nth(1).unwrap();
    // The key id lobster shows is the one minisign wrote into its comment.
    let mk_id = mk
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("untrusted comment: minisign public key "))
        .unwrap_or_else(|| panic!("{mk}"))
        .trim();
    let r = env.run(&["help", "--steps", "steps", "greet"]);
    assert!(
        r.stdout.contains(&format!("signed by key {mk_id}")),
        "{mk_id}: {r:?}"
    );
    write(
        &env,
        "policy.toml",
        &format!("[signers]\nkeys = [\"{mk_line}\"]\nrequire_signed = true\n"),
    );
    let r = env.run(&[
        "run",
        "--mode",
        "tool",
        "--policy",
        "policy.toml",
        "--steps",
        "steps",
        "greet --name Ada",
    ]);
    assert_eq!(r.code, 0, "{r:?}");
    // And lobster's key is then not among the signers.
    write(
        &env,
        "policy.toml",
        &format!("[signers]\nkeys = [\"{line}\"]\nrequire_signed = true\n"),
    );
    let r = env.run(&[
        "run",
        "--mode",
        "tool",
        "--policy",
        "policy.toml",
        "--steps",
        "steps",
        "greet --name Ada",
    ]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(!line.is_empty());
}

#[test]
fn require_signed_refuses_unsigned_unknown_and_altered_steps_before_compile() {
    let env = Env::new();
    let Some(steps) = steps_with(&env, &["greet", "inbox_list"]) else {
        return;
    };
    let trusted = new_key(&env, "ci");
    new_key(&env, "stranger");
    write(
        &env,
        "policy.toml",
        &format!("[signers]\nkeys = [\"{trusted}\"]\nrequire_signed = true\n"),
    );
    let run = |env: &Env| {
        env.run(&[
            "run",
            "--mode",
            "tool",
            "--policy",
            "policy.toml",
            "--steps",
            "steps",
            "greet --name Ada",
        ])
    };
    // Unsigned.
    let r = run(&env);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stdout.contains("policy refuses step greet") && r.stdout.contains("is not signed"),
        "{r:?}"
    );
    assert!(
        r.stdout.contains("lobster step sign --key"),
        "the fix is named: {r:?}"
    );
    assert!(nothing_compiled(&env));
    // By a key the policy does not list.
    assert_eq!(sign(&env, "stranger.key", "steps/greet.wasm").code, 0);
    let r = run(&env);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stdout.contains("signed by stranger")
            && r.stdout.contains("not among the policy's [signers] keys"),
        "{r:?}"
    );
    assert!(nothing_compiled(&env));
    // By the trusted key: it runs.
    assert_eq!(sign(&env, "ci.key", "steps/greet.wasm").code, 0);
    let r = run(&env);
    assert_eq!(r.code, 0, "{r:?}");
    // A trusted signature over other bytes (moved onto another component):
    // refused, and so even without require_signed.
    std::fs::copy(
        steps.join("greet.wasm.minisig"),
        steps.join("inbox_list.wasm.minisig"),
    )
    .unwrap();
    write(
        &env,
        "lax.toml",
        &format!("[signers]\nkeys = [\"{trusted}\"]\n"),
    );
    for policy in ["policy.toml", "lax.toml"] {
        let r = env.run(&[
            "run",
            "--mode",
            "tool",
            "--policy",
            policy,
            "--steps",
            "steps",
            "inbox.list",
        ]);
        assert_eq!(r.code, 1, "{policy}: {r:?}");
        assert!(
            r.stdout.contains("policy refuses step inbox.list")
                && r.stdout.contains("over other bytes"),
            "{r:?}"
        );
    }
    // check and lock refuse alike.
    let r = env.run(&[
        "check",
        "--policy",
        "policy.toml",
        "--format",
        "json",
        "steps",
    ]);
    assert_eq!(r.code, 1, "{r:?}");
    let problems = r.json()["problems"].as_array().unwrap().len();
    assert_eq!(problems, 1, "{r:?}");
    assert!(r.stdout.contains("over other bytes"), "{r:?}");
    let r = env.run(&["lock", "--policy", "policy.toml", "--steps", "steps"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("inbox"), "{r:?}");
}

#[test]
fn a_resume_refuses_a_step_whose_signature_went_away() {
    let env = Env::new();
    let Some(_) = steps_with(&env, &["greet"]) else {
        return;
    };
    let trusted = new_key(&env, "ci");
    write(
        &env,
        "policy.toml",
        &format!("[signers]\nkeys = [\"{trusted}\"]\nrequire_signed = true\n"),
    );
    assert_eq!(sign(&env, "ci.key", "steps/greet.wasm").code, 0);
    let wf = write(
        &env,
        "wf.lobster",
        "name: gated\nsteps:\n  - id: ok\n    approval: go?\n  - id: hello\n    uses: steps/greet.wasm\n    stdin: [1]\n",
    );
    let r = env.run(&[
        "run",
        "--mode",
        "tool",
        "--policy",
        "policy.toml",
        wf.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{r:?}");
    let token = token_of(&r.json());
    std::fs::remove_file(env.work_path("steps/greet.wasm.minisig")).unwrap();
    let r = env.run(&[
        "resume",
        "--policy",
        "policy.toml",
        "--token",
        &token,
        "--approve",
        "yes",
    ]);
    assert_ne!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("is not signed"), "{r:?}");
}

#[test]
fn help_and_doctor_show_who_signed_a_step() {
    let env = Env::new();
    let Some(_) = steps_with(&env, &["greet"]) else {
        return;
    };
    let trusted = new_key(&env, "release");
    assert_eq!(sign(&env, "release.key", "steps/greet.wasm").code, 0);
    // The key's id, as minisign writes it into the public key's comment.
    let pubfile = std::fs::read_to_string(env.work_path("release.pub")).unwrap();
    let id = pubfile
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("untrusted comment: minisign public key "))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no key id in {pubfile}"))
        .to_string();
    assert!((1..=16).contains(&id.len()), "{pubfile}");
    let shown = format!("signed by release (key {id})");
    let r = env.run(&["help", "--steps", "steps", "greet"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains(&shown), "{r:?}");
    write(
        &env,
        "policy.toml",
        &format!("[signers]\nkeys = [\"{trusted}\"]\n"),
    );
    let out = env
        .command(&["doctor", "--steps", "steps"])
        .env("LOBSTER_POLICY", env.work_path("policy.toml"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&shown) && text.contains("trusted signer"),
        "{text}"
    );
}
