//! The operator's registry credentials: TLS and basic auth, and where the
//! credentials go (never to another registry or a foreign token realm).

use super::{greet, published_ref, wf, OwnRegistry};
use crate::common::{write, Env};
use std::io::{Read, Write as _};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

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
