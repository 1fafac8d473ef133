//! One MCP session over stdio: the tool list and schemas, a gated pipeline
//! and its resume, failing runs, workflow tools with typed args,
//! cancellation, concurrent calls, and step logs as `notifications/message`.

use super::{alive, call, envelope, guest, rt, text, wait_for_pid, Server, GREET};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, LoggingMessageNotificationParam,
    SetLevelRequestParams,
};
use rmcp::service::{NotificationContext, PeerRequestOptions};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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
        // The journal says the agent decided (it relayed the yes), over MCP.
        let decisions = super::decisions(server.state.path());
        assert_eq!(decisions.len(), 1, "{decisions:?}");
        assert_eq!(
            (&decisions[0]["decided_by"], &decisions[0]["door"]),
            (&json!("the operator's agent"), &json!("mcp")),
            "{decisions:?}"
        );
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
