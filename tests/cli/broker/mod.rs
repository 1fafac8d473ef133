//! Brokered calls (`openclaw.invoke`, `llm.invoke`, `llm_task.invoke`)
//! against the loopback stand-ins of `lobster-stubs` (the gateway's
//! `/tools/invoke` contract and an OpenAI-compatible model). Every request
//! the stubs receive is logged, so tests count what was sent.

use crate::common::{Env, Run};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

mod gateway;
mod models;
mod workflows;

/// A running stub server; killed on drop.
pub struct Stub {
    child: Child,
    pub url: String,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Stub {
    pub fn start(kind: &str, secret: Option<&str>) -> Stub {
        Stub::start_with(kind, secret, &[])
    }

    /// Start with extra flags (`--tls --ca-out FILE`, …).
    pub fn start_with(kind: &str, secret: Option<&str>, extra: &[&str]) -> Stub {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("requests.jsonl");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_lobster-stubs"));
        cmd.arg(kind).arg("--log").arg(&log).args(extra);
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

    /// Every request received so far (whole lines only: a line the stub
    /// is still writing is counted on the next look).
    pub fn requests(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let whole = text.rfind('\n').map_or(0, |i| i + 1);
        text[..whole]
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

impl Drop for Stub {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Run `lobster run --mode tool <extra…> <pipeline>` with `vars` set and
/// every gateway/model variable of the outer environment removed.
pub fn run(env: &Env, vars: &[(&str, &str)], extra: &[&str], pipeline: &str) -> Run {
    let mut args = vec!["run", "--mode", "tool"];
    args.extend_from_slice(extra);
    args.push(pipeline);
    let mut c = env.command(&args);
    for k in [
        "OPENCLAW_URL",
        "CLAWD_URL",
        "OPENCLAW_TOKEN",
        "CLAWD_TOKEN",
        "LOBSTER_MAX_HTTP_RESPONSE_BYTES",
        "LOBSTER_LLM_PROVIDER",
        "LOBSTER_LLM_BASE_URL",
        "LOBSTER_LLM_API_KEY",
        "LOBSTER_LLM_MODEL",
        "LOBSTER_LLM_ADAPTER_URL",
        "LOBSTER_PI_LLM_ADAPTER_URL",
        "LOBSTER_CACHE_DIR",
        "LOBSTER_RUN_STATE_KEY",
        "LOBSTER_POLICY",
    ] {
        c.env_remove(k);
    }
    for (k, v) in vars {
        c.env(k, v);
    }
    crate::common::finish(c.output().unwrap())
}
