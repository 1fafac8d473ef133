//! `lobster mcp` driven as a child process by rmcp's own client: the MCP
//! handshake, the tool list and schemas, a gated pipeline and its resume, a
//! failing run (`isError`), a workflow tool with typed args (bad args
//! refused by name), cancellation, and `--approvals human` with a client that
//! cannot ask the human, concurrent calls, and step logs as
//! `notifications/message`.
//!
//! The client harness is here; the tests are in `session.rs` and
//! `operator.rs` beside this file.

// MCP logging (SEP-2577) is deprecated in rmcp, but clients still subscribe with it.
#![allow(deprecated)]

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

mod operator;
mod session;

type Client = RunningService<RoleClient, ()>;

struct Server {
    state: tempfile::TempDir,
    work: tempfile::TempDir,
}

impl Server {
    fn new() -> Self {
        let s = Server {
            state: tempfile::tempdir().unwrap(),
            work: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir(s.work.path().join("workflows")).unwrap();
        s
    }

    fn workflow(&self, file: &str, text: &str) {
        std::fs::write(self.work.path().join("workflows").join(file), text).unwrap();
    }

    async fn connect(&self, extra: &[&str]) -> Client {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_lobster"));
        cmd.arg("mcp")
            .args(["--workflows", "workflows"])
            .args(extra)
            .current_dir(self.work.path())
            .env("LOBSTER_STATE_DIR", self.state.path())
            .env_remove("LOBSTER_POLICY");
        let transport = TokioChildProcess::new(cmd).expect("spawn lobster mcp");
        ().serve(transport).await.expect("MCP handshake")
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

async fn call<H: ClientHandler>(
    client: &RunningService<RoleClient, H>,
    tool: &str,
    args: Value,
) -> CallToolResult {
    let params = CallToolRequestParams::new(tool.to_string())
        .with_arguments(args.as_object().cloned().expect("object args"));
    client.call_tool(params).await.expect("tools/call answered")
}

fn envelope(r: &CallToolResult) -> &Value {
    r.structured_content.as_ref().expect("structuredContent")
}

fn text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The `decision` events of every journal in the state directory `state`.
fn decisions(state: &Path) -> Vec<Value> {
    let mut out = Vec::new();
    for f in std::fs::read_dir(state.join("journal")).unwrap() {
        let path = f.unwrap().path();
        if !path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("seg-")
        {
            continue;
        }
        let body = std::fs::read_to_string(path).unwrap();
        out.extend(
            body.lines()
                .map(|l| serde_json::from_str::<Value>(l).unwrap()["event"].clone())
                .filter(|e| e["kind"] == "decision"),
        );
    }
    out
}

const GREET: &str = "name: greet\ndescription: Greet someone.\nargs:\n  who:\n    type: string\n    required: true\n    description: Whom to greet\n  times:\n    type: integer\n    default: 1\nsteps:\n  - id: hello\n    run: echo \"hello ${who} x${times}\"\n";

/// A built test guest; missing ones fail under CI / tests/run.sh and skip loudly elsewhere.
fn guest(name: &str) -> Option<std::path::PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/guests/target/wasm32-wasip2/release")
        .join(format!("{name}.wasm"));
    if p.is_file() {
        return Some(p);
    }
    if std::env::var_os("CI").is_some() || std::env::var_os("LOBSTER_REQUIRE_GUESTS").is_some() {
        panic!("{} is missing; run tests/build-guests.sh", p.display());
    }
    eprintln!(
        "SKIPPED: {} is not built (tests/build-guests.sh)",
        p.display()
    );
    None
}

async fn wait_for_pid(path: &Path) -> i32 {
    let start = Instant::now();
    loop {
        if let Some(pid) = std::fs::read_to_string(path)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            return pid;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the run never started"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn alive(pid: i32) -> bool {
    // A zombie is dead for our purposes: /proc/PID/stat's state is Z.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}
