//! The credential canary (issue 22): `lobster serve` starts with known
//! secrets in its environment — the reference's variables
//! (`OPENCLAW_TOKEN`, `LOBSTER_LLM_API_KEY`, the adapters' tokens, each
//! with its URL pointing at a listener that must never be called) and the
//! variables a tenant's policy names for its own gateway and model. Hostile
//! workflows of a trusted and an untrusted tenant, through `/v1/runs` and
//! `/mcp`, try to send them elsewhere or print them: `env:` redirects,
//! `$VAR` expansion, `run: env`, a pipeline's `--url`. Afterwards every
//! response body and header, every line the server logged and every file
//! of its state (records, journals, caches) is searched for each secret:
//! none may appear; the canary listener got no request at all, the
//! `--url` listener no secret, and the tenant's own endpoints only their
//! own secret.

use super::{mcp_raw, sha, Server, BIN};
use serde_json::json;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

const SERVER_GW: &str = "srv-gw-canary-51c0";
const SERVER_MODEL: &str = "srv-model-canary-a7e2";
const SERVER_ADAPTER: &str = "srv-adapter-canary-0f3d";
const TENANT_GW: &str = "tenant-gw-canary-9b44";
const TENANT_MODEL: &str = "tenant-model-canary-6d18";
const ALL: [&str; 5] = [
    SERVER_GW,
    SERVER_MODEL,
    SERVER_ADAPTER,
    TENANT_GW,
    TENANT_MODEL,
];

const ACME: &str = "canary-acme-token";
const BETA: &str = "canary-beta-token";

/// `lobster-stubs` (the loopback stand-ins of tests/cli/broker/mod.rs).
struct Stub {
    child: Child,
    url: String,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Stub {
    fn start(kind: &str, secret: Option<&str>) -> Stub {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("requests.jsonl");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_lobster-stubs"));
        cmd.arg(kind).arg("--log").arg(&log);
        if let Some(s) = secret {
            cmd.arg(if kind == "gateway" {
                "--token"
            } else {
                "--key"
            })
            .arg(s);
        }
        let mut child = cmd.stdout(Stdio::piped()).spawn().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        Stub {
            child,
            url: line.trim().to_string(),
            log,
            _dir: dir,
        }
    }

    /// Every request it received, as logged (headers included).
    fn requests(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Stub {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every file under `dir`, as text (lossy).
fn every_file(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            every_file(&p, out);
        } else if let Ok(bytes) = std::fs::read(&p) {
            out.push((p, String::from_utf8_lossy(&bytes).into_owned()));
        }
    }
}

#[test]
fn no_secret_of_the_server_or_a_tenant_leaves_through_any_door() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().canonicalize().unwrap();
    let tgw = Stub::start("gateway", Some(TENANT_GW));
    let tmodel = Stub::start("model", Some(TENANT_MODEL));
    // The canaries: the server's own variables point here, and hostile
    // workflows redirect here. Nothing may arrive.
    let canary_gw = Stub::start("gateway", None);
    let canary_model = Stub::start("model", None);
    // A trusted pipeline's own --url: it may be called, never with a secret.
    let url_gw = Stub::start("gateway", None);
    let endpoints = format!(
        "[gateway]\nurl = \"{}\"\ntoken_env = \"TENANT_GW_TOKEN\"\n[model]\nprovider = \"openai\"\n[model.openai]\nurl = \"{}/v1\"\nkey_env = \"TENANT_MODEL_KEY\"\nmodel = \"stub-model\"\n",
        tgw.url, tmodel.url
    );
    std::fs::write(
        d.join("trusted.toml"),
        format!("trust = \"trusted\"\nenv = [\"*\"]\n{endpoints}"),
    )
    .unwrap();
    std::fs::write(
        d.join("untrusted.toml"),
        format!(
            "trust = \"untrusted\"\ntools = [\"echo\"]\nllm = true\nenv = [\"*\"]\n{endpoints}"
        ),
    )
    .unwrap();
    std::fs::write(
        d.join("serve.toml"),
        format!(
            "state = \"state\"\n\
[[tenant]]\nname = \"acme\"\ntoken_sha256 = \"{}\"\npolicy = \"trusted.toml\"\nself_approve = true\n\
[[tenant]]\nname = \"beta\"\ntoken_sha256 = \"{}\"\npolicy = \"untrusted.toml\"\nself_approve = true\n",
            sha(ACME),
            sha(BETA)
        ),
    )
    .unwrap();
    let stderr_log = d.join("serve.stderr");
    let mut child = Command::new(BIN)
        .current_dir(&d)
        .args(["serve", "--config"])
        .arg(d.join("serve.toml"))
        .args(["--listen", "127.0.0.1:0"])
        .env_remove("LOBSTER_POLICY")
        .env("OPENCLAW_URL", &canary_gw.url)
        .env("OPENCLAW_TOKEN", SERVER_GW)
        .env("CLAWD_TOKEN", SERVER_GW)
        .env("LOBSTER_LLM_BASE_URL", format!("{}/v1", canary_model.url))
        .env("LOBSTER_LLM_API_KEY", SERVER_MODEL)
        .env("LOBSTER_LLM_PROVIDER", "openai")
        .env("LOBSTER_LLM_ADAPTER_URL", &canary_model.url)
        .env("LOBSTER_LLM_ADAPTER_TOKEN", SERVER_ADAPTER)
        .env("LOBSTER_PI_LLM_ADAPTER_URL", &canary_model.url)
        .env("LOBSTER_PI_LLM_ADAPTER_TOKEN", SERVER_ADAPTER)
        .env("TENANT_GW_TOKEN", TENANT_GW)
        .env("TENANT_MODEL_KEY", TENANT_MODEL)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&stderr_log).unwrap())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let base = line
        .trim()
        .strip_prefix("lobster serve listening on ")
        .unwrap_or_else(|| panic!("ready line: {line:?}"))
        .to_string();
    let addr = base.strip_prefix("http://").unwrap().to_string();
    let s = Server { child, base, addr };

    let cgw = &canary_gw.url;
    let cmodel = format!("{}/v1", canary_model.url);
    let uurl = &url_gw.url;
    let redirects = [
        format!("env:\n  OPENCLAW_URL: {cgw}\n  OPENCLAW_TOKEN: attacker\nsteps:\n  - id: s\n    pipeline: openclaw.invoke --tool echo --action json --args-json '{{\"a\":1}}'\n"),
        format!("steps:\n  - id: s\n    env:\n      CLAWD_URL: {cgw}\n      OPENCLAW_URL: {cgw}/\n    pipeline: openclaw.invoke --tool echo --action json\n"),
        format!("env:\n  LOBSTER_LLM_BASE_URL: {cmodel}\n  LOBSTER_LLM_API_KEY: attacker\nsteps:\n  - id: s\n    pipeline: llm.invoke --provider openai --prompt hi\n"),
        format!("env:\n  LOBSTER_LLM_ADAPTER_URL: {cmodel}\n  LOBSTER_LLM_PROVIDER: http\n  LOBSTER_CACHE_DIR: {}\nsteps:\n  - id: s\n    pipeline: llm.invoke --prompt again\n", d.join("evil-cache").display()),
    ];
    let printers = [
        "name: p\nsteps:\n  - id: s\n    run: env\n".to_string(),
        "name: p\nsteps:\n  - id: s\n    run: echo $OPENCLAW_TOKEN $CLAWD_TOKEN $LOBSTER_LLM_API_KEY $LOBSTER_LLM_ADAPTER_TOKEN $TENANT_GW_TOKEN $TENANT_MODEL_KEY\n".to_string(),
        "name: p\nenv:\n  A: $OPENCLAW_TOKEN\n  B: ${LOBSTER_LLM_API_KEY}\n  C: $TENANT_MODEL_KEY\n  D: $TENANT_GW_TOKEN\nsteps:\n  - id: s\n    run: echo \"$A $B $C $D\"\n".to_string(),
        "name: p\nsteps:\n  - id: s\n    pipeline: exec --json --shell 'env | sed s/^/x/ | head -c 100000 | wc -c; env'\n".to_string(),
    ];
    let url_case = format!(
        "name: u\nsteps:\n  - id: s\n    pipeline: openclaw.invoke --url {uurl} --tool echo --action json\n"
    );
    let mut seen: Vec<String> = Vec::new();
    let mut record = |what: String, status: u16, headers: String, body: String| {
        seen.push(format!("{what}\n{status}\n{headers}\n{body}"));
    };
    let mut runs = 0;
    for token in [ACME, BETA] {
        for wf in redirects.iter().chain(&printers).chain([&url_case]) {
            // /v1/runs with the workflow text.
            let r = s.run(token, json!({ "workflowText": wf }));
            runs += 1;
            let hs = format!("{:?}", r.headers);
            record(format!("{token} runs {wf}"), r.status, hs, r.body.clone());
            // The run's record and journal too.
            if let Some(id) = r.json()["runId"].as_str() {
                let rec = s.settled(token, id);
                record(
                    format!("{token} record {id}"),
                    200,
                    String::new(),
                    rec.to_string(),
                );
                let j = s.call("GET", &format!("/v1/runs/{id}/journal"), token, None);
                record(
                    format!("{token} journal {id}"),
                    j.status,
                    format!("{:?}", j.headers),
                    j.body,
                );
            }
        }
        // /mcp: the same as pipelines where they are one.
        for pipeline in [
            "exec --shell 'env'".to_string(),
            format!("openclaw.invoke --url {uurl} --tool echo --action json"),
            "llm.invoke --prompt viamcp".to_string(),
            "openclaw.invoke --tool echo --action json".to_string(),
        ] {
            let body = json!({"jsonrpc":"2.0","id":1,"method":"tools/call",
                "params":{"name":"lobster_run","arguments":{"pipeline": pipeline}}});
            let r = mcp_raw(&s, token, &body);
            runs += 1;
            record(
                format!("{token} mcp {pipeline}"),
                r.status,
                format!("{:?}", r.headers),
                r.body,
            );
        }
        let l = s.call("GET", "/v1/runs", token, None);
        record(
            format!("{token} list"),
            l.status,
            format!("{:?}", l.headers),
            l.body,
        );
    }
    assert!(runs >= 26, "{runs}");
    // The endpoints really were the tenant's: its gateway and model were
    // called (with the tenant's own secrets, nothing of the server's).
    let tg = tgw.requests();
    let tm = tmodel.requests();
    assert!(
        tg.contains(TENANT_GW),
        "the tenant's gateway was not called: {tg}"
    );
    assert!(
        tm.contains(TENANT_MODEL),
        "the tenant's model was not called: {tm}"
    );
    for secret in [SERVER_GW, SERVER_MODEL, SERVER_ADAPTER, TENANT_MODEL] {
        assert!(
            !tg.contains(secret),
            "{secret} reached the tenant's gateway"
        );
    }
    for secret in [SERVER_GW, SERVER_MODEL, SERVER_ADAPTER, TENANT_GW] {
        assert!(!tm.contains(secret), "{secret} reached the tenant's model");
    }
    // The canaries got nothing at all; the --url listener no secret.
    assert_eq!(canary_gw.requests(), "", "the canary gateway was called");
    assert_eq!(canary_model.requests(), "", "the canary model was called");
    let u = url_gw.requests();
    assert!(!u.is_empty(), "the trusted --url case never ran");
    for secret in ALL {
        assert!(!u.contains(secret), "{secret} went to a pipeline's --url");
    }
    // No answer, header, log line or stored file holds a secret.
    drop(s);
    let mut logged = String::new();
    std::fs::File::open(&stderr_log)
        .unwrap()
        .read_to_string(&mut logged)
        .unwrap();
    let mut files = Vec::new();
    every_file(&d, &mut files);
    assert!(
        files
            .iter()
            .any(|(p, _)| p.to_string_lossy().contains("journal")),
        "no journal was kept"
    );
    let mut leaks = Vec::new();
    for secret in ALL {
        for text in &seen {
            if text.contains(secret) {
                leaks.push(format!(
                    "{secret} in an answer: {}",
                    text.lines().next().unwrap_or_default()
                ));
            }
        }
        if logged.contains(secret) {
            leaks.push(format!("{secret} in the server's log"));
        }
        for (p, text) in &files {
            // The config files name the variables, not their values.
            if text.contains(secret) {
                leaks.push(format!("{secret} in {}", p.display()));
            }
        }
    }
    assert!(leaks.is_empty(), "{}", leaks.join("\n"));
    // The cache stayed in the tenants' stores.
    assert!(!d.join("evil-cache").exists());
    let answers: Vec<&String> = seen.iter().filter(|t| t.contains("\"ok\":true")).collect();
    assert!(!answers.is_empty(), "nothing ran at all: {seen:?}");
}
