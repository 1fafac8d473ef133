//! Steps through a real OCI registry on loopback (Debian's docker-registry,
//! started by tests/registry.sh, plain and with TLS + htpasswd basic auth):
//! publish and pull, `oci://` stage names and `uses:`, lock pins, the local
//! cache, the operator's credentials and where they go, the policy's
//! registry list, and tampering (a blob swapped in the registry, a tag
//! moved after locking, the local cache altered), each refused before
//! anything is compiled, with the step named.

use crate::common::{guest, root, write, Env, Run};
use std::io::{Read, Write as _};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// A registry of this test's own (a directory, a port), stopped on drop.
pub struct OwnRegistry {
    dir: PathBuf,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    /// TLS: the CA file and the password of user `lobster`.
    pub tls: Option<(PathBuf, String)>,
}

impl OwnRegistry {
    /// Start one (`tls`: https with basic auth). `None` (skipped loudly)
    /// when docker-registry is missing and cannot be installed; under CI a
    /// missing registry fails instead.
    pub fn start(tls: bool) -> Option<OwnRegistry> {
        let dir = std::env::temp_dir().join(format!(
            "lobster-registry-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
        ));
        let out = std::process::Command::new("bash")
            .arg(root().join("tests/registry.sh"))
            .arg(if tls { "start-tls" } else { "start" })
            .arg(&dir)
            .output()
            .unwrap();
        if !out.status.success() {
            let msg = format!(
                "tests/registry.sh could not start a registry: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            if std::env::var_os("CI").is_some() {
                panic!("{msg}");
            }
            eprintln!("SKIPPED: {msg}");
            return None;
        }
        let addr = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let tls = tls.then(|| {
            let password = std::fs::read_to_string(dir.join("password")).unwrap();
            (dir.join("ca.pem"), password.trim().to_string())
        });
        Some(OwnRegistry { dir, addr, tls })
    }

    /// The blob file of `digest` (`sha256:…`) in the registry's storage.
    pub fn blob_file(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").unwrap();
        self.dir
            .join("data/docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }

    /// `oci://ADDR/REPO`.
    pub fn oci(&self, repo: &str) -> String {
        format!("oci://{}/{repo}", self.addr)
    }
}

static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl Drop for OwnRegistry {
    fn drop(&mut self) {
        let _ = std::process::Command::new("bash")
            .arg(root().join("tests/registry.sh"))
            .arg("stop")
            .arg(&self.dir)
            .output();
    }
}

/// A policy in the work dir: the plain registry reached over http.
pub fn insecure_policy(env: &Env, reg: &OwnRegistry, extra: &str) -> String {
    write(
        env,
        "policy.toml",
        &format!("insecure_registries = [\"{}\"]\n{extra}", reg.addr),
    );
    "policy.toml".into()
}

/// `lobster step publish FILE TARGET --policy POLICY`.
fn publish(env: &Env, file: &Path, target: &str, policy: &str) -> Run {
    let file = file.to_str().unwrap();
    env.run(&["step", "publish", file, target, "--policy", policy])
}

/// The reference with digest that `lobster step publish` printed.
pub fn published_ref(r: &Run) -> String {
    assert_eq!(r.code, 0, "{r:?}");
    r.stdout
        .split_whitespace()
        .find(|w| w.starts_with("oci://") && w.contains("@sha256:"))
        .unwrap_or_else(|| panic!("no reference in {r:?}"))
        .to_string()
}

fn greet() -> Option<PathBuf> {
    guest("examples/steps", "greet")
}

fn other_component() -> Option<PathBuf> {
    guest("examples/steps", "inbox_list")
}

/// Nothing was compiled in this state directory.
fn nothing_compiled(env: &Env) -> bool {
    let dir = env.state.path().join("cache/wasm");
    std::fs::read_dir(&dir).map_or(true, |d| {
        d.flatten()
            .all(|e| !e.file_name().to_string_lossy().ends_with(".cwasm"))
    })
}

fn wf(env: &Env, uses: &str) -> PathBuf {
    write(
        env,
        "wf.lobster",
        &format!("name: hi\nsteps:\n  - id: hello\n    uses: {uses}\n    with:\n      name: Ada\n    stdin: [1]\n"),
    )
}

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

#[test]
fn tls_and_basic_auth_with_the_operators_credentials_only() {
    let (Some(reg), Some(wasm)) = (OwnRegistry::start(true), greet()) else {
        return;
    };
    let (ca, password) = reg.tls.clone().unwrap();
    let env = Env::new();
    write(
        &env,
        "policy.toml",
        &format!("registry_ca_file = \"{}\"\n", ca.display()),
    );
    let target = format!("{}:0.1", reg.oci("team/greet"));
    let publish = |auth: Option<String>| {
        let mut c = env.command(&[
            "step",
            "publish",
            wasm.to_str().unwrap(),
            &target,
            "--policy",
            "policy.toml",
        ]);
        match auth {
            Some(a) => c.env("LOBSTER_REGISTRY_AUTH", a),
            None => c.env_remove("LOBSTER_REGISTRY_AUTH"),
        };
        c.env("HOME", env.work.path());
        crate::common::finish(c.output().unwrap())
    };
    let r = publish(None);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("refused access"), "{r:?}");
    // A credential for another registry is not offered to this one.
    let r = publish(Some(format!("127.0.0.1:1=lobster:{password}")));
    assert_eq!(r.code, 1, "{r:?}");
    let r = publish(Some(format!("{}=lobster:{password}", reg.addr)));
    let pinned = published_ref(&r);
    // Without the CA the registry's certificate is refused.
    let mut c = env.command(&["step", "pull", &pinned, "-o", "o.wasm"]);
    c.env(
        "LOBSTER_REGISTRY_AUTH",
        format!("{}=lobster:{password}", reg.addr),
    );
    let r = crate::common::finish(c.output().unwrap());
    assert_eq!(r.code, 1, "{r:?}");
    // docker's config.json, keyed by host, works as well.
    let docker = env.work_path("docker");
    std::fs::create_dir_all(&docker).unwrap();
    std::fs::write(
        docker.join("config.json"),
        format!(
            r#"{{"auths": {{"{}": {{"username": "lobster", "password": "{password}"}}}}}}"#,
            reg.addr
        ),
    )
    .unwrap();
    let mut c = env.command(&[
        "step",
        "pull",
        &pinned,
        "-o",
        "o.wasm",
        "--policy",
        "policy.toml",
    ]);
    c.env("DOCKER_CONFIG", &docker)
        .env_remove("LOBSTER_REGISTRY_AUTH");
    let r = crate::common::finish(c.output().unwrap());
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(
        std::fs::read(env.work_path("o.wasm")).unwrap(),
        std::fs::read(&wasm).unwrap()
    );
}

/// A stand-in registry that records every request's headers and answers
/// `answer` to each.
fn recording_registry(answer: String) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let mut buf = [0u8; 8192];
            let n = stream.read(&mut buf).unwrap_or(0);
            log.lock()
                .unwrap()
                .push(String::from_utf8_lossy(&buf[..n]).into_owned());
            let _ = stream.write_all(answer.as_bytes());
        }
    });
    (addr, seen)
}

#[test]
fn credentials_never_go_to_another_registry_or_a_foreign_token_realm() {
    let env = Env::new();
    // A registry that names a token realm on another host.
    let (realm, realm_seen) = recording_registry(
        "HTTP/1.1 200 OK\r\nContent-Length: 15\r\nConnection: close\r\n\r\n{\"token\":\"t\"}  "
            .into(),
    );
    let (addr, seen) = recording_registry(format!(
        "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer realm=\"http://{realm}/token\",service=\"x\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    ));
    write(
        &env,
        "policy.toml",
        &format!("insecure_registries = [\"{addr}\", \"{realm}\"]\n"),
    );
    let mut c = env.command(&[
        "step",
        "pull",
        &format!("oci://{addr}/a/b:1"),
        "--policy",
        "policy.toml",
    ]);
    c.env("LOBSTER_REGISTRY_AUTH", format!("{addr}=me:sekrit-token"));
    let r = crate::common::finish(c.output().unwrap());
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stderr
            .contains("lobster sends a registry's credentials only to that registry"),
        "{r:?}"
    );
    assert!(
        realm_seen.lock().unwrap().is_empty(),
        "the foreign realm got a request"
    );
    assert!(!r.stderr.contains("sekrit-token") && !r.stdout.contains("sekrit-token"));
    // A workflow naming another registry: the credential is not sent there.
    let (other, other_seen) = recording_registry(
        "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".into(),
    );
    write(
        &env,
        "policy2.toml",
        &format!("insecure_registries = [\"{other}\"]\n"),
    );
    let mut c = env.command(&[
        "step",
        "pull",
        &format!("oci://{other}/a/b:1"),
        "--policy",
        "policy2.toml",
    ]);
    c.env("LOBSTER_REGISTRY_AUTH", format!("{addr}=me:sekrit-token"));
    let r = crate::common::finish(c.output().unwrap());
    assert_ne!(r.code, 0, "{r:?}");
    let requests = other_seen.lock().unwrap().join("\n");
    assert!(!requests.is_empty(), "the other registry was asked");
    assert!(
        !requests.to_ascii_lowercase().contains("authorization"),
        "{requests}"
    );
    // A workflow naming that other registry (by digest, so the run fetches
    // it): the run's fetch offers it nothing either.
    let before = other_seen.lock().unwrap().len();
    let digest = "0".repeat(64);
    let wf = wf(&env, &format!("oci://{other}/a/b:1@sha256:{digest}"));
    let mut c = env.command(&[
        "run",
        "--mode",
        "tool",
        "--policy",
        "policy2.toml",
        wf.to_str().unwrap(),
    ]);
    c.env("LOBSTER_REGISTRY_AUTH", format!("{addr}=me:sekrit-token"));
    let r = crate::common::finish(c.output().unwrap());
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stdout.contains("hello"), "the step is named: {r:?}");
    let seen_now = other_seen.lock().unwrap();
    assert!(seen_now.len() > before, "the workflow's registry was asked");
    let requests = seen_now[before..].join("\n");
    assert!(
        !requests.to_ascii_lowercase().contains("authorization"),
        "{requests}"
    );
    assert!(!r.stdout.contains("sekrit-token") && !r.stderr.contains("sekrit-token"));
    drop(seen);
}

fn sha256_hex(bytes: &[u8]) -> String {
    // The registry's layer digest, computed the long way: the test must
    // not trust lobster's own hashing.
    let out = std::process::Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin.take().unwrap().write_all(bytes)?;
            c.wait_with_output()
        })
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

fn blake3_hex(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

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
