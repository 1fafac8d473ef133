//! `lobster mcp` driven as a child process by rmcp's own client: the MCP
//! handshake, the tool list and schemas, a gated pipeline and its resume, a
//! failing run (`isError`), a workflow tool with typed args (bad args
//! refused by name), cancellation, and `--approvals human` with a client that
//! cannot ask the human, concurrent calls, and step logs as
//! `notifications/message`.

// MCP logging (SEP-2577) is deprecated in rmcp, but clients still subscribe with it.
#![allow(deprecated)]

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest,
    LoggingMessageNotificationParam, SetLevelRequestParams,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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

const GREET: &str = "name: greet\ndescription: Greet someone.\nargs:\n  who:\n    type: string\n    required: true\n    description: Whom to greet\n  times:\n    type: integer\n    default: 1\nsteps:\n  - id: hello\n    run: echo \"hello ${who} x${times}\"\n";

#[test]
fn tools_gates_resume_errors_and_workflow_tools() {
    let server = Server::new();
    server.workflow("greet.lobster", GREET);
    rt().block_on(async {
        let client = server.connect(&[]).await;
        let info = client.peer_info().expect("initialize result");
        assert_eq!(info.server_info.as_ref().unwrap().name, "lobster");

        // The tool list: the three built-ins plus the workflow, each with a
        // description, annotations, an object input schema and an output schema.
        let tools = client.list_all_tools().await.unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(
            names,
            [
                "lobster_run",
                "lobster_resume",
                "lobster_workflows",
                "greet"
            ]
        );
        for t in &tools {
            assert!(t.description.as_deref().is_some_and(|d| d.len() > 20));
            assert!(t.annotations.is_some(), "{} has annotations", t.name);
            assert_eq!(t.input_schema.get("type"), Some(&json!("object")));
            assert!(t.output_schema.is_some(), "{} has an outputSchema", t.name);
            let schema = serde_json::to_string(&*t.input_schema).unwrap();
            assert!(!schema.contains("uint"), "no format noise: {schema}");
        }
        let greet = tools.iter().find(|t| t.name == "greet").unwrap();
        assert_eq!(
            Value::Object((*greet.input_schema).clone()),
            json!({"type":"object","properties":{
                "who":{"type":"string","description":"Whom to greet"},
                "times":{"type":"integer","default":1}},
                "required":["who"],"additionalProperties":false})
        );

        // A gated pipeline pauses; the text tells the model what to do next.
        let r = call(
            &client,
            "lobster_run",
            json!({"pipeline": "exec --json --shell 'echo [1,2]' | approve --prompt 'Ship it?'"}),
        )
        .await;
        assert_eq!(r.is_error, Some(false));
        let env = envelope(&r).clone();
        assert_eq!(env["status"], "needs_approval");
        assert!(text(&r).contains("lobster_resume"), "{}", text(&r));
        let token = env["requiresApproval"]["resumeToken"].as_str().unwrap();

        // Resuming it with the approval gives the items.
        let r = call(
            &client,
            "lobster_resume",
            json!({"token": token, "approve": true}),
        )
        .await;
        assert_eq!(envelope(&r)["status"], "ok", "{}", text(&r));
        assert_eq!(envelope(&r)["output"], json!([1, 2]));
        // A token works once.
        let r = call(
            &client,
            "lobster_resume",
            json!({"token": token, "approve": true}),
        )
        .await;
        assert_eq!(r.is_error, Some(true));

        // A failing run is a tool result with isError and the error envelope.
        let r = call(&client, "lobster_run", json!({"pipeline": "nosuchcommand"})).await;
        assert_eq!(r.is_error, Some(true));
        assert_eq!(envelope(&r)["ok"], false);
        assert_eq!(
            envelope(&r)["error"]["message"],
            "Unknown command: nosuchcommand"
        );
        // A mistyped flag is refused before anything runs, with the nearest.
        let r = call(
            &client,
            "lobster_run",
            json!({"pipeline": "exec --json --shell 'echo [1,2,3]' | head --nn 1"}),
        )
        .await;
        assert_eq!(r.is_error, Some(true));
        assert_eq!(
            envelope(&r)["error"],
            json!({"type": "parse_error", "message": "Unknown flag --nn for head (did you mean --n?)"})
        );
        let r = call(
            &client,
            "lobster_run",
            json!({"pipeline": "head", "workflow": "x"}),
        )
        .await;
        assert_eq!(r.is_error, Some(true));
        assert_eq!(
            envelope(&r)["error"]["message"],
            "lobster_run takes pipeline or workflow, not both"
        );
        let r = call(
            &client,
            "lobster_run",
            json!({"pipeline": "head", "bogus": 1}),
        )
        .await;
        assert!(
            envelope(&r)["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("lobster_run does not take bogus"),
            "{}",
            text(&r)
        );

        // The workflow as a tool, with typed args.
        let r = call(&client, "greet", json!({"who": "Ada", "times": 2})).await;
        assert_eq!(envelope(&r)["status"], "ok", "{}", text(&r));
        assert!(text(&r).contains("hello Ada x2"), "{}", text(&r));
        // Bad args are refused, named.
        let r = call(&client, "greet", json!({"who": 5})).await;
        assert_eq!(r.is_error, Some(true));
        assert_eq!(
            envelope(&r)["error"]["message"],
            "Workflow arg who must be a string (got number)"
        );
        let r = call(&client, "greet", json!({"who": "Ada", "whom": "x"})).await;
        assert_eq!(
            envelope(&r)["error"]["message"],
            "Workflow greet does not take arg whom (it takes only who, times)"
        );
        let r = call(&client, "greet", json!({})).await;
        assert_eq!(
            envelope(&r)["error"]["message"],
            "Workflow arg who is required"
        );
        // The same workflow by name or by path through lobster_run.
        let r = call(
            &client,
            "lobster_run",
            json!({"workflow": "workflows/greet.lobster", "args": {"who": "Bo"}}),
        )
        .await;
        assert!(text(&r).contains("hello Bo x1"), "{}", text(&r));
        let r = call(
            &client,
            "lobster_run",
            json!({"workflow": "../../etc/passwd"}),
        )
        .await;
        assert_eq!(r.is_error, Some(true));

        // The catalog.
        let r = call(&client, "lobster_workflows", json!({})).await;
        let list = &envelope(&r)["workflows"];
        assert_eq!(list[0]["name"], "greet");
        assert_eq!(list[0]["args"]["required"], json!(["who"]));
        assert_eq!(
            list[0]["capabilities"],
            json!(["step hello: runs a host shell command"])
        );

        // An unknown tool is a protocol error.
        let err = client
            .call_tool(CallToolRequestParams::new("nope"))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("unknown tool: nope"), "{err}");
        client.cancel().await.unwrap();
    });
}

#[test]
fn cancellation_stops_the_run_and_the_session_goes_on() {
    let server = Server::new();
    rt().block_on(async {
        let client = server.connect(&[]).await;
        let pid_file = server.work.path().join("pid");
        let params = CallToolRequestParams::new("lobster_run").with_arguments(
            json!({"pipeline": "exec --shell 'echo $$ > pid; exec sleep 30'", "timeoutMs": 60000})
                .as_object()
                .cloned()
                .unwrap(),
        );
        let handle = client
            .send_cancellable_request(
                ClientRequest::CallToolRequest(CallToolRequest::new(params)),
                PeerRequestOptions::no_options(),
            )
            .await
            .unwrap();
        let pid = wait_for_pid(&pid_file).await;
        assert!(alive(pid), "the run's child is running");
        handle
            .cancel(Some("user pressed stop".into()))
            .await
            .unwrap();
        let start = Instant::now();
        while alive(pid) && start.elapsed() < Duration::from_secs(5) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(
            !alive(pid),
            "notifications/cancelled killed the run's child"
        );
        // The session still answers.
        let r = call(
            &client,
            "lobster_run",
            json!({"pipeline": "exec --json --shell 'echo [3]'"}),
        )
        .await;
        assert_eq!(envelope(&r)["output"], json!([3]));
        // The call's deadline is the server's to keep.
        let r = call(
            &client,
            "lobster_run",
            json!({"pipeline": "exec --shell 'sleep 5'", "timeoutMs": 300}),
        )
        .await;
        assert_eq!(r.is_error, Some(true));
        assert_eq!(
            envelope(&r)["error"]["message"],
            "lobster runtime timed out"
        );
        client.cancel().await.unwrap();
    });
}

#[test]
fn calls_on_one_session_run_concurrently() {
    let server = Server::new();
    rt().block_on(async {
        let client = server.connect(&[]).await;
        // The first call can only finish once the second has run: served one
        // at a time, it would time out.
        let waiter = {
            let peer = client.peer().clone();
            let params = CallToolRequestParams::new("lobster_run").with_arguments(
                json!({
                    "pipeline": "exec --json --shell 'while [ ! -f b ]; do sleep 0.01; done; echo [1]'",
                    "timeoutMs": 10000
                })
                .as_object()
                .cloned()
                .unwrap(),
            );
            tokio::spawn(async move { peer.call_tool(params).await })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        let r = call(
            &client,
            "lobster_run",
            json!({"pipeline": "exec --json --shell 'touch b; echo [2]'"}),
        )
        .await;
        assert_eq!(envelope(&r)["output"], json!([2]));
        let r = waiter.await.unwrap().unwrap();
        assert_eq!(envelope(&r)["output"], json!([1]), "{}", text(&r));
        client.cancel().await.unwrap();
    });
}

#[test]
fn human_approvals_refuse_a_client_that_cannot_ask() {
    let server = Server::new();
    rt().block_on(async {
        let client = server.connect(&["--approvals", "human"]).await;
        let r = call(
            &client,
            "lobster_run",
            json!({"pipeline": "exec --json --shell 'echo [1]' | approve --prompt 'Ship?'"}),
        )
        .await;
        let id = envelope(&r)["requiresApproval"]["approvalId"]
            .as_str()
            .unwrap()
            .to_string();
        let r = call(
            &client,
            "lobster_resume",
            json!({"approvalId": id, "approve": true}),
        )
        .await;
        assert_eq!(r.is_error, Some(true));
        let msg = envelope(&r)["error"]["message"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(msg.starts_with("approve: true is refused"), "{msg}");
        // Rejecting is still the agent's to relay, and the refusal spent nothing.
        let r = call(
            &client,
            "lobster_resume",
            json!({"approvalId": id, "approve": false}),
        )
        .await;
        assert_eq!(envelope(&r)["status"], "cancelled", "{}", text(&r));
        client.cancel().await.unwrap();
    });
}

/// A lone workflow path as `pipeline` is contained exactly like
/// `workflow:` (issue 22): `..`, an absolute path and a symlink out of the
/// working directory are refused and nothing runs, under the default
/// (trusted) policy and an untrusted one; a file inside still runs.
#[test]
fn a_lone_workflow_path_stays_in_the_working_directory() {
    let server = Server::new();
    let work = server.work.path().canonicalize().unwrap();
    let elsewhere = work.parent().unwrap().join(format!(
        "elsewhere-{}",
        work.file_name().unwrap().to_string_lossy()
    ));
    std::fs::create_dir_all(&elsewhere).unwrap();
    let canary = elsewhere.join("pwned");
    let evil = format!("steps:\n  - id: x\n    run: touch {}\n", canary.display());
    std::fs::write(elsewhere.join("x.lobster"), &evil).unwrap();
    std::os::unix::fs::symlink(elsewhere.join("x.lobster"), work.join("link.lobster")).unwrap();
    std::fs::write(
        work.join("inside.lobster"),
        "steps:\n  - id: x\n    pipeline: exec --json --shell 'echo [7]'\n",
    )
    .unwrap();
    std::fs::write(work.join("untrusted.toml"), "trust = \"untrusted\"\n").unwrap();
    let name = elsewhere
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let dotdot = format!("../{name}/x.lobster");
    let absolute = elsewhere.join("x.lobster").display().to_string();
    rt().block_on(async {
        for extra in [&[][..], &["--policy", "untrusted.toml"][..]] {
            let client = server.connect(extra).await;
            for (key, path, says) in [
                (
                    "pipeline",
                    dotdot.as_str(),
                    "must stay within the working directory",
                ),
                (
                    "workflow",
                    dotdot.as_str(),
                    "must stay within the working directory",
                ),
                (
                    "pipeline",
                    "link.lobster",
                    "must stay within the working directory",
                ),
                (
                    "workflow",
                    "link.lobster",
                    "must stay within the working directory",
                ),
                (
                    "pipeline",
                    absolute.as_str(),
                    "relative to the working directory",
                ),
                (
                    "workflow",
                    absolute.as_str(),
                    "relative to the working directory",
                ),
            ] {
                let r = call(&client, "lobster_run", json!({ key: path })).await;
                assert_eq!(
                    r.is_error,
                    Some(true),
                    "{extra:?} {key} {path}: {}",
                    text(&r)
                );
                let msg = envelope(&r)["error"]["message"].to_string();
                assert!(msg.contains(says), "{extra:?} {key} {path}: {msg}");
                assert!(!canary.exists(), "{extra:?} {key} {path} ran");
            }
            if extra.is_empty() {
                let r = call(
                    &client,
                    "lobster_run",
                    json!({"pipeline": "inside.lobster"}),
                )
                .await;
                assert_eq!(envelope(&r)["output"], json!([7]), "{}", text(&r));
            }
            client.cancel().await.unwrap();
        }
    });
    let _ = std::fs::remove_dir_all(&elsewhere);
}

#[test]
fn the_operator_policy_applies_to_every_call() {
    let server = Server::new();
    std::fs::write(
        server.work.path().join("policy.toml"),
        "trust = \"untrusted\"\n",
    )
    .unwrap();
    rt().block_on(async {
        let client = server.connect(&["--policy", "policy.toml"]).await;
        let r = call(
            &client,
            "lobster_run",
            json!({"pipeline": "exec --json --shell 'echo [1]'"}),
        )
        .await;
        assert_eq!(r.is_error, Some(true));
        assert_eq!(
            envelope(&r)["error"]["message"],
            "policy refuses this run: stage 1 (exec) runs host processes, which the untrusted policy forbids"
        );
        client.cancel().await.unwrap();
    });
}

#[test]
fn start_up_refuses_colliding_workflow_names() {
    let server = Server::new();
    server.workflow(
        "a.lobster",
        "name: same thing\nsteps:\n  - id: a\n    run: echo a\n",
    );
    server.workflow(
        "b.lobster",
        "name: same_thing\nsteps:\n  - id: b\n    run: echo b\n",
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lobster"))
        .args(["mcp", "--workflows", "workflows"])
        .current_dir(server.work.path())
        .env("LOBSTER_STATE_DIR", server.state.path())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "stdout stays the protocol's");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("workflow tool name same_thing is used by both"),
        "{err}"
    );
}

/// A client that records `notifications/message`.
#[derive(Clone, Default)]
struct LogRecorder(Arc<Mutex<Vec<LoggingMessageNotificationParam>>>);

impl ClientHandler for LogRecorder {
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.0.lock().unwrap().push(params);
    }
}

#[test]
fn step_logs_reach_a_subscribed_client() {
    let Some(probe) = guest("probe") else {
        return;
    };
    let server = Server::new();
    let steps = server.work.path().join("steps");
    std::fs::create_dir(&steps).unwrap();
    std::fs::copy(&probe, steps.join("probe.wasm")).unwrap();
    rt().block_on(async {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_lobster"));
        cmd.args(["mcp", "--steps", "steps"])
            .current_dir(server.work.path())
            .env("LOBSTER_STATE_DIR", server.state.path())
            .stderr(std::process::Stdio::null());
        let recorder = LogRecorder::default();
        let client = recorder
            .clone()
            .serve(TokioChildProcess::new(cmd).unwrap())
            .await
            .unwrap();
        // Not subscribed: nothing arrives (the line goes to stderr).
        let r = call(
            &client,
            "lobster_run",
            json!({"pipeline": "probe log --loud"}),
        )
        .await;
        assert_eq!(r.is_error, Some(false), "{}", text(&r));
        assert!(recorder.0.lock().unwrap().is_empty());
        // Subscribed at warning: only the warning.
        let level: SetLevelRequestParams =
            serde_json::from_value(json!({"level": "warning"})).unwrap();
        client.set_level(level).await.unwrap();
        let r = call(
            &client,
            "lobster_run",
            json!({"pipeline": "probe log --loud"}),
        )
        .await;
        assert_eq!(r.is_error, Some(false), "{}", text(&r));
        let logs = recorder.0.lock().unwrap().clone();
        assert_eq!(logs.len(), 1, "{logs:?}");
        assert_eq!(logs[0].data, json!("loud"));
        assert_eq!(logs[0].logger.as_deref(), Some("probe"));
        client.cancel().await.unwrap();
    });
}

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

/// A 2026-07-28 client whose user answers every approval form with yes.
struct SaysYes;

impl ClientHandler for SaysYes {
    async fn create_elicitation(
        &self,
        _request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        Ok(
            rmcp::model::ElicitResult::new(rmcp::model::ElicitationAction::Accept)
                .with_content(json!({"approve": true})),
        )
    }

    fn get_info(&self) -> rmcp::model::ClientInfo {
        serde_json::from_value(json!({
            "protocolVersion": "2026-07-28",
            "capabilities": {"elicitation": {"form": {}}},
            "clientInfo": {"name": "says-yes", "version": "1"}
        }))
        .unwrap()
    }
}

/// Stdio `lobster mcp --approvals human`: the operator runs the process, so
/// a yes the human gave through the client's form is the operator's, named
/// by the operator's `LOBSTER_APPROVAL_APPROVED_BY` at start — a gate that
/// requires that approver opens, and the name lands in the step's result
/// and the run's journal. A gate requiring someone else stays refused.
#[test]
fn an_elicited_yes_over_stdio_carries_the_operators_name() {
    use rmcp::{ClientLifecycleMode, ClientServiceExt};
    let server = Server::new();
    server.workflow(
        "ship.lobster",
        "name: ship\nsteps:\n  - id: gate\n    approval:\n      prompt: Ship it?\n      required_approver: carol\n  - id: done\n    run: echo \"by $gate.approvedBy\"\n",
    );
    server.workflow(
        "other.lobster",
        "name: other\nsteps:\n  - id: gate\n    approval:\n      prompt: Ship it?\n      required_approver: dave\n  - id: done\n    run: echo never\n",
    );
    rt().block_on(async {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_lobster"));
        cmd.arg("mcp")
            .args(["--workflows", "workflows", "--approvals", "human"])
            .current_dir(server.work.path())
            .env("LOBSTER_STATE_DIR", server.state.path())
            .env("LOBSTER_APPROVAL_APPROVED_BY", "carol")
            .env_remove("LOBSTER_POLICY");
        let transport = TokioChildProcess::new(cmd).expect("spawn lobster mcp");
        let client = SaysYes
            .serve_with_lifecycle(
                transport,
                ClientLifecycleMode::Discover {
                    preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
                },
            )
            .await
            .expect("MCP discovery");
        let r = call(&client, "ship", json!({})).await;
        assert_eq!(envelope(&r)["status"], "needs_approval", "{}", text(&r));
        let token = envelope(&r)["requiresApproval"]["resumeToken"]
            .as_str()
            .unwrap()
            .to_string();
        let r = call(
            &client,
            "lobster_resume",
            json!({"token": token, "approve": true}),
        )
        .await;
        assert_ne!(r.is_error, Some(true), "{}", text(&r));
        assert_eq!(envelope(&r)["status"], "ok", "{}", text(&r));
        assert!(text(&r).contains("by carol"), "{}", text(&r));
        // The journal's decision event names the operator's approver.
        let mut decisions = Vec::new();
        for f in std::fs::read_dir(server.state.path().join("journal")).unwrap() {
            let body = std::fs::read_to_string(f.unwrap().path()).unwrap();
            decisions.extend(
                body.lines()
                    .map(|l| serde_json::from_str::<Value>(l).unwrap()["event"].clone())
                    .filter(|e| e["kind"] == "decision"),
            );
        }
        assert_eq!(decisions.len(), 1, "{decisions:?}");
        assert_eq!(decisions[0]["approver"], "carol", "{decisions:?}");
        // The operator's name is not anyone's: a gate for dave refuses it.
        let r = call(&client, "other", json!({})).await;
        let token = envelope(&r)["requiresApproval"]["resumeToken"]
            .as_str()
            .unwrap()
            .to_string();
        let r = call(
            &client,
            "lobster_resume",
            json!({"token": token, "approve": true}),
        )
        .await;
        assert_eq!(r.is_error, Some(true), "{}", text(&r));
        assert!(
            text(&r).contains("requires approver 'dave', got 'carol'"),
            "{}",
            text(&r)
        );
        client.cancel().await.unwrap();
    });
}
