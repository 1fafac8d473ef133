//! Brokered calls over `https://` against `lobster-stubs … --tls` (a fresh
//! CA per stub, its PEM trusted through the policy's `[gateway] ca_file`):
//! verification is always on, nothing is sent when the handshake fails, and
//! the deadline and size caps bound TLS reads like plain ones.

use crate::broker::{run, Stub};
use crate::common::{err_message, Env};
use serde_json::Value;
use std::net::TcpListener;
use std::time::{Duration, Instant};

/// A TLS stub whose CA PEM is written into the test's work directory as
/// `ca_name`.
fn tls_stub(env: &Env, kind: &str, secret: Option<&str>, ca_name: &str, extra: &[&str]) -> Stub {
    let ca = env.work_path(ca_name);
    let mut args = vec!["--tls", "--ca-out", ca.to_str().unwrap()];
    args.extend_from_slice(extra);
    Stub::start_with(kind, secret, &args)
}

/// A policy trusting `ca` (relative to the policy file), returned as
/// `--policy FILE` arguments.
fn trusting(env: &Env, ca: &str) -> String {
    let p = crate::common::write(
        env,
        "tls-policy.toml",
        &format!("[gateway]\nca_file = \"{ca}\"\n"),
    );
    p.to_str().unwrap().to_string()
}

#[test]
fn https_gateway_through_the_operator_ca_file() {
    let env = Env::new();
    let gw = tls_stub(&env, "gateway", Some("tok"), "ca.pem", &[]);
    assert!(gw.url.starts_with("https://127.0.0.1:"), "{}", gw.url);
    let policy = trusting(&env, "ca.pem");
    // By IP address and by DNS name (SNI), with the environment token
    // (loopback, so the reference's token rule lets it go).
    let by_name = gw.url.replace("127.0.0.1", "localhost");
    for url in [gw.url.as_str(), by_name.as_str()] {
        let r = run(
            &env,
            &[("OPENCLAW_URL", url), ("OPENCLAW_TOKEN", "tok")],
            &["--policy", &policy],
            "openclaw.invoke --tool sessions_list --action list",
        );
        assert_eq!(r.code, 0, "{r:?}");
        assert_eq!(
            r.json()["output"][0]["details"]["sessions"],
            Value::Array(vec![])
        );
    }
    let seen = gw.requests();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0]["auth"], "Bearer tok");
    assert_eq!(seen[0]["path"], "/tools/invoke");
    // The policy's [gateway] url may be https too (its token from token_env).
    let p = crate::common::write(
        &env,
        "gw-policy.toml",
        &format!(
            "[gateway]\nurl = \"{by_name}\"\ntoken_env = \"GW_TOKEN\"\nca_file = \"ca.pem\"\n"
        ),
    );
    let r = run(
        &env,
        &[("GW_TOKEN", "tok")],
        &["--policy", p.to_str().unwrap()],
        "openclaw.invoke --tool sessions_list --action list",
    );
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(gw.requests().len(), 3);
    // Oversize answers hit the cap over TLS exactly as over plain HTTP.
    let r = run(
        &env,
        &[
            ("OPENCLAW_URL", gw.url.as_str()),
            ("OPENCLAW_TOKEN", "tok"),
            ("LOBSTER_MAX_HTTP_RESPONSE_BYTES", "1000"),
        ],
        &["--policy", &policy],
        r#"openclaw.invoke --tool big --action x --args-json '{"bytes": 5000}'"#,
    );
    assert_eq!(
        err_message(&r),
        "HTTP response body exceeded 1000 bytes",
        "{r:?}"
    );
}

#[test]
fn https_openai_model_plain_and_streamed() {
    let env = Env::new();
    let model = tls_stub(&env, "model", Some("sk-test"), "model-ca.pem", &[]);
    let policy = trusting(&env, "model-ca.pem");
    let base = format!("{}/v1", model.url);
    let schema =
        r#"{"type":"object","properties":{"intent":{"type":"string"}},"required":["intent"]}"#;
    for stream in ["0", "1"] {
        let r = run(
            &env,
            &[
                ("LOBSTER_LLM_BASE_URL", base.as_str()),
                ("LOBSTER_LLM_API_KEY", "sk-test"),
                ("LOBSTER_LLM_MODEL", "stub-model"),
                ("LOBSTER_LLM_STREAM", stream),
            ],
            &["--policy", &policy],
            &format!(
                "llm.invoke --provider openai --prompt 'Classify' --disable-cache --output-schema '{schema}'"
            ),
        );
        assert_eq!(r.code, 0, "stream={stream}: {r:?}");
        assert!(
            r.json()["output"][0]["output"]["data"]["intent"].is_string(),
            "{r:?}"
        );
    }
    let seen = model.requests();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[1]["body"]["stream"], true);
    assert_eq!(seen[0]["auth"], "Bearer sk-test");
}

#[test]
fn an_unknown_ca_is_refused_with_the_fix_and_nothing_is_sent() {
    let env = Env::new();
    let gw = tls_stub(&env, "gateway", None, "ca.pem", &[]);
    // No CA file: the built-in roots do not know the stub's CA.
    let r = run(
        &env,
        &[
            ("OPENCLAW_URL", gw.url.as_str()),
            ("OPENCLAW_TOKEN", "secret"),
        ],
        &[],
        "openclaw.invoke --tool sessions_list --action list",
    );
    assert_eq!(r.code, 1, "{r:?}");
    let msg = err_message(&r);
    assert!(
        msg.starts_with("openclaw.invoke request failed: TLS with https://127.0.0.1:"),
        "{msg}"
    );
    assert!(msg.contains("not signed by a trusted CA"), "{msg}");
    assert!(msg.contains("[gateway] ca_file"), "{msg}");
    // Another stub's CA does not vouch for this one either.
    let _other = tls_stub(&env, "model", None, "other-ca.pem", &[]);
    let policy = trusting(&env, "other-ca.pem");
    let r = run(
        &env,
        &[
            ("OPENCLAW_URL", gw.url.as_str()),
            ("OPENCLAW_TOKEN", "secret"),
        ],
        &["--policy", &policy],
        "openclaw.invoke --tool sessions_list --action list",
    );
    assert!(
        err_message(&r).contains("not signed by a trusted CA"),
        "{r:?}"
    );
    // A CA file that cannot be read is named.
    let policy = trusting(&env, "missing.pem");
    let r = run(
        &env,
        &[("OPENCLAW_URL", gw.url.as_str())],
        &["--policy", &policy],
        "openclaw.invoke --tool sessions_list --action list",
    );
    let msg = err_message(&r);
    assert!(
        msg.contains("cannot use the policy's [gateway] ca_file") && msg.contains("missing.pem"),
        "{msg}"
    );
    // Nothing (no request, no token) went past a handshake.
    assert!(gw.requests().is_empty(), "{:?}", gw.requests());
    // https to a plain-http server: said so, with the fix.
    let plain = Stub::start("gateway", None);
    let r = run(
        &env,
        &[("OPENCLAW_URL", &plain.url.replace("http://", "https://"))],
        &[],
        "openclaw.invoke --tool sessions_list --action list",
    );
    assert!(
        err_message(&r).contains("(is it plain http on this port? then use an http:// URL)"),
        "{r:?}"
    );
    // The environment token rule holds for https: a non-loopback URL gets
    // no environment token, and nothing is sent.
    let remote = gw.url.replace("127.0.0.1", "127.0.0.2");
    let r = run(
        &env,
        &[
            ("OPENCLAW_URL", remote.as_str()),
            ("OPENCLAW_TOKEN", "secret"),
        ],
        &[],
        "openclaw.invoke --tool sessions_list --action list",
    );
    assert!(
        err_message(&r).contains("refuses to send OPENCLAW_TOKEN"),
        "{r:?}"
    );
    assert!(gw.requests().is_empty());
}

#[test]
fn a_certificate_for_another_host_name_is_refused() {
    let env = Env::new();
    let gw = tls_stub(
        &env,
        "gateway",
        None,
        "ca.pem",
        &["--tls-name", "wrong.example"],
    );
    let policy = trusting(&env, "ca.pem");
    let r = run(
        &env,
        &[("OPENCLAW_URL", gw.url.as_str())],
        &["--policy", &policy],
        "openclaw.invoke --tool sessions_list --action list",
    );
    assert_eq!(r.code, 1, "{r:?}");
    let msg = err_message(&r);
    assert!(msg.contains("not valid for this host name"), "{msg}");
    assert!(gw.requests().is_empty());
}

#[test]
fn a_stalled_tls_server_hits_the_deadline() {
    let env = Env::new();
    // Accepts and never answers the ClientHello.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // It waits a bounded time for the connection: a loaded machine may end
    // the 400 ms run before lobster connects, and then no one ever will.
    listener.set_nonblocking(true).unwrap();
    let holder = std::thread::spawn(move || {
        let until = Instant::now() + Duration::from_secs(6);
        let mut held = Vec::new();
        while Instant::now() < until {
            match listener.accept() {
                Ok((conn, _)) => held.push(conn),
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
        drop(held);
    });
    let url = format!("https://127.0.0.1:{port}");
    let start = Instant::now();
    let r = run(
        &env,
        &[("OPENCLAW_URL", url.as_str())],
        &["--timeout-ms", "400"],
        "openclaw.invoke --tool sessions_list --action list",
    );
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(err_message(&r), "lobster runtime timed out", "{r:?}");
    // A server that completes the handshake and then stalls: same.
    let gw = tls_stub(&env, "gateway", None, "ca.pem", &[]);
    let policy = trusting(&env, "ca.pem");
    let start = Instant::now();
    let r = run(
        &env,
        &[("OPENCLAW_URL", gw.url.as_str())],
        &["--timeout-ms", "600", "--policy", &policy],
        r#"openclaw.invoke --tool slow --action x --args-json '{"ms": 10000}'"#,
    );
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(err_message(&r), "lobster runtime timed out", "{r:?}");
    assert_eq!(gw.requests().len(), 1, "the request was in flight");
    holder.join().unwrap();
}

#[test]
fn a_wasm_step_reaches_an_https_gateway_through_the_policy() {
    let env = Env::new();
    let Some(guest) = crate::common::test_guest("brokered") else {
        return;
    };
    let steps = env.work_path("steps");
    std::fs::create_dir_all(&steps).unwrap();
    std::fs::copy(guest, steps.join("brokered.wasm")).unwrap();
    let steps = steps.to_str().unwrap().to_string();
    let gw = tls_stub(&env, "gateway", Some("optok"), "ca.pem", &[]);
    // The operator's policy names the https gateway, its token variable and
    // the CA; the step never picks any of them.
    let untrusted = |ca: &str| {
        let p = crate::common::write(
            &env,
            "untrusted.toml",
            &format!(
                "trust = \"untrusted\"\ntools = [\"echo\"]\nllm = true\n[gateway]\nurl = \"{}\"\ntoken_env = \"GW_TOKEN\"\nca_file = \"{ca}\"\n",
                gw.url
            ),
        );
        p.to_str().unwrap().to_string()
    };
    let grant = |policy: &str| {
        vec![
            "--steps".to_string(),
            steps.clone(),
            "--allow-tool".into(),
            "echo".into(),
            "--allow-llm".into(),
            "--policy".into(),
            policy.to_string(),
        ]
    };
    let p = untrusted("ca.pem");
    let args = grant(&p);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = run(
        &env,
        &[("GW_TOKEN", "optok")],
        &args,
        "brokered --tool echo --args '{\"to\":\"x\"}'",
    );
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.json()["output"][0]["args"]["to"], "x", "{r:?}");
    assert_eq!(gw.requests().len(), 1);
    assert_eq!(gw.requests()[0]["auth"], "Bearer optok");
    // Without the CA the step's call fails the handshake: nothing is sent.
    let _other = tls_stub(&env, "model", None, "other-ca.pem", &[]);
    let p = untrusted("other-ca.pem");
    let args = grant(&p);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = run(
        &env,
        &[("GW_TOKEN", "optok")],
        &args,
        "brokered --tool echo --args '{\"to\":\"y\"}'",
    );
    assert_ne!(r.code, 0, "{r:?}");
    assert!(
        err_message(&r).contains("not signed by a trusted CA"),
        "{r:?}"
    );
    assert_eq!(gw.requests().len(), 1);
}

#[test]
fn doctor_names_an_unusable_ca_file_before_any_run() {
    let env = Env::new();
    let policy = trusting(&env, "missing.pem");
    let r = env.run(&["doctor", "--policy", &policy]);
    assert_eq!(r.code, 0, "{r:?}");
    let checks = r.json()["output"][0]["checks"].clone();
    let check = checks
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "policy")
        .cloned()
        .unwrap();
    assert_eq!(check["ok"], false, "{check}");
    assert!(
        check["detail"].as_str().unwrap().contains("missing.pem"),
        "{check}"
    );
    assert!(
        check["fix"].as_str().unwrap().contains("[gateway] ca_file"),
        "{check}"
    );
    // A usable bundle passes.
    let _gw = tls_stub(&env, "gateway", None, "ca.pem", &[]);
    let policy = trusting(&env, "ca.pem");
    let r = env.run(&["doctor", "--policy", &policy]);
    let checks = r.json()["output"][0]["checks"].clone();
    assert!(
        checks
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["check"] == "policy" && c["ok"] == true),
        "{checks}"
    );
}
