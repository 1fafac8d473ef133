//! What the operator decides and a client cannot change: the policy on every
//! call, colliding workflow names refused at start-up, a lone workflow path
//! kept in the working directory, and `--approvals human` (a client that
//! cannot ask is refused; an elicited yes carries the operator's name).

use super::{call, envelope, rt, text, Server};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient};
use serde_json::json;

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
        // The journal's decision event names the operator's approver, and
        // the operator (the human in the form), not their agent.
        let decisions = super::decisions(server.state.path());
        assert_eq!(decisions.len(), 1, "{decisions:?}");
        assert_eq!(decisions[0]["approver"], "carol", "{decisions:?}");
        assert_eq!(decisions[0]["decided_by"], "the operator", "{decisions:?}");
        assert_eq!(decisions[0]["door"], "mcp", "{decisions:?}");
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
