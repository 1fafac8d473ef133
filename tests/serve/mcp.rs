//! MCP over HTTP (`/mcp`): the tools, runs that are the gateway's runs, and
//! elicitation, which counts as a human's only where the tenant says so.

use super::{mcp_call, mcp_raw, metric, setup, sha, start, Server, ACME, ALICE, BETA, GATED, SELF};
use serde_json::{json, Value};

#[test]
fn mcp_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(&setup(dir.path(), "", ""));
    let mcp = |token: &str, body: Value| mcp_raw(&s, token, &body);
    let r = mcp(
        "wrong",
        json!({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}),
    );
    assert_eq!(r.status, 401);
    let r = mcp(
        ACME,
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["result"]["serverInfo"]["name"], "lobster");
    let r = mcp(
        ACME,
        json!({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}),
    );
    let names: Vec<String> = r.json()["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    assert!(names.contains(&"lobster_run".to_string()), "{names:?}");
    let r = mcp(
        BETA,
        json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"lobster_run","arguments":{"pipeline":"exec --shell 'echo hi'"}}}),
    );
    let v = r.json();
    assert_eq!(v["result"]["isError"], true, "{v}");
    assert!(v.to_string().contains("untrusted policy forbids"), "{v}");
    let r = mcp(
        ACME,
        json!({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"lobster_run","arguments":{"pipeline":"exec --json --shell 'echo [3]'"}}}),
    );
    assert_eq!(
        r.json()["result"]["structuredContent"]["output"],
        json!([3]),
        "{}",
        r.body
    );
}

#[test]
fn mcp_runs_are_the_gateways_runs() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(&setup(dir.path(), "", ""));
    // acme: self_approve = false, so its MCP server takes approvals from
    // the human; a paused MCP run is listed with a link for them.
    let r = mcp_call(&s, ACME, "lobster_run", json!({"pipeline": GATED}));
    let env = &r["structuredContent"];
    assert_eq!(env["status"], "needs_approval", "{r}");
    let token = env["requiresApproval"]["resumeToken"].as_str().unwrap();
    let approval = env["requiresApproval"]["approvalId"].clone();
    let listed = s.approvals(ACME);
    let entry = listed
        .iter()
        .find(|a| a["approvalId"] == approval)
        .unwrap_or_else(|| panic!("the MCP run is not listed: {listed:?}"));
    let run_id = entry["runId"].as_str().unwrap().to_string();
    assert_eq!(s.get_run(ACME, &run_id).json()["status"], "needs_approval");
    // The agent cannot approve; it is told where the human can.
    let r = mcp_call(
        &s,
        ACME,
        "lobster_resume",
        json!({"token": token, "approve": true}),
    );
    assert_eq!(r["isError"], true, "{r}");
    let text = r.to_string();
    assert!(text.contains("send the human this approval link"), "{text}");
    assert!(text.contains(&format!("{}/a/", s.base)), "{text}");
    // The human approves through the link; the run completes.
    let link = s.link_for(ACME, &run_id);
    let page = s.decide_as(&link, ALICE, "approve");
    assert!(page.body.contains("<h1>Approved</h1>"), "{}", page.body);
    let rec = s.get_run(ACME, &run_id).json();
    assert_eq!(rec["envelope"]["output"], json!([1, 2]), "{rec}");
    // Its journal names each door: started over /mcp, decided on the page.
    let events = journal_events(&s, ACME, &run_id);
    assert_eq!(events[0]["door"], "serve-mcp", "{events:?}");
    let decision = events.iter().find(|e| e["kind"] == "decision").unwrap();
    assert_eq!(
        (&decision["door"], &decision["decided_by"]),
        (&json!("serve-page"), &json!("approver alice")),
        "{decision}"
    );
    assert!(s
        .approvals(ACME)
        .iter()
        .all(|a| a["runId"] != run_id.as_str()));
    let r = mcp_call(
        &s,
        ACME,
        "lobster_resume",
        json!({"token": token, "approve": false}),
    );
    assert_eq!(r["isError"], true, "{r}");
    // selfy: self_approve = true; the agent decides through MCP, exactly once.
    let r = mcp_call(&s, SELF, "lobster_run", json!({"pipeline": GATED}));
    let token = r["structuredContent"]["requiresApproval"]["resumeToken"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(s.approvals(SELF).len(), 1);
    let run_id = s.approvals(SELF)[0]["runId"].as_str().unwrap().to_string();
    let r = mcp_call(
        &s,
        SELF,
        "lobster_resume",
        json!({"token": token, "approve": true}),
    );
    assert_eq!(r["structuredContent"]["output"], json!([1, 2]), "{r}");
    let events = journal_events(&s, SELF, &run_id);
    let decision = events.iter().find(|e| e["kind"] == "decision").unwrap();
    assert_eq!(
        (&decision["door"], &decision["decided_by"]),
        (&json!("serve-mcp"), &json!("tenant selfy's agent")),
        "{decision}"
    );
    assert!(s.approvals(SELF).is_empty());
    let again = s.call(
        "POST",
        "/v1/resume",
        SELF,
        Some(json!({"token": token, "approve": true})),
    );
    assert_eq!(again.status, 409, "{}", again.body);
    assert!(metric(&s, "lobster_runs_total{tenant=\"selfy\",status=\"ok\"}") >= 1);
}

/// The events of run `id`'s journal, read as tenant `token`.
fn journal_events(s: &Server, token: &str, id: &str) -> Vec<Value> {
    let r = s.call("GET", &format!("/v1/runs/{id}/journal"), token, None);
    assert_eq!(r.status, 200, "{}", r.body);
    r.body
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["event"].clone())
        .collect()
}

/// A `tools/call` through `/mcp` as a 2026-07-28 client that can ask its
/// user ("input required" with elicitation), with `extra` params
/// (`requestState`, `inputResponses` of a retried call): the JSON-RPC result.
fn mcp_modern(s: &Server, token: &str, name: &str, args: Value, extra: Value) -> Value {
    let mut params = json!({
        "name": name,
        "arguments": args,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}
        }
    });
    if let (Some(p), Some(e)) = (params.as_object_mut(), extra.as_object()) {
        p.extend(e.clone());
    }
    let body = json!({"jsonrpc":"2.0","id":9,"method":"tools/call","params": params});
    let auth = format!("Bearer {token}");
    let r = s.raw(
        "POST",
        "/mcp",
        &[
            ("Authorization", auth.as_str()),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", name),
        ],
        body.to_string().as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()["result"].clone()
}

/// MCP "input required" answers count as a human's only where the tenant
/// says so: with `elicitation_is_human = false` (the default) an agent that
/// can answer its own elicitation is refused with the link to forward, a
/// retried call carrying an answer is refused too, and naming an approver
/// is refused; with `elicitation_is_human = true` the client asks, and the
/// answer decides (recorded as the elicited human's).
#[test]
fn mcp_elicitation_counts_only_where_the_tenant_says_it_is_a_human() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("trusted.toml"), "trust = \"trusted\"\n").unwrap();
    let config = dir.path().join("serve.toml");
    std::fs::write(
        &config,
        format!(
            "state = \"state\"\n\
[[tenant]]\nname = \"linky\"\ntoken_sha256 = \"{}\"\npolicy = \"trusted.toml\"\n\
[[tenant.approver]]\nname = \"alice\"\ntoken_sha256 = \"{}\"\n\
[[tenant]]\nname = \"asky\"\ntoken_sha256 = \"{}\"\npolicy = \"trusted.toml\"\nelicitation_is_human = true\n\
[[tenant.approver]]\nname = \"alice\"\ntoken_sha256 = \"{}\"\n",
            sha(ACME),
            sha(ALICE.1),
            sha(SELF),
            sha(ALICE.1)
        ),
    )
    .unwrap();
    let s = start(&config);
    // linky: the agent can elicit, but its answers are not a human's.
    let r = mcp_modern(
        &s,
        ACME,
        "lobster_run",
        json!({"pipeline": GATED}),
        json!({}),
    );
    let token = r["structuredContent"]["requiresApproval"]["resumeToken"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_string();
    let run_id = s.approvals(ACME)[0]["runId"].as_str().unwrap().to_string();
    let r = mcp_modern(
        &s,
        ACME,
        "lobster_resume",
        json!({"token": token, "approve": true}),
        json!({}),
    );
    assert_eq!(r["isError"], true, "{r}");
    assert!(r.get("inputRequests").is_none(), "{r}");
    assert!(r.to_string().contains(&format!("{}/a/", s.base)), "{r}");
    // A retried call with an "answer" (and a made-up state) decides nothing.
    let answer = json!({
        "requestState": "e30.00",
        "inputResponses": {"approval": {"action": "accept", "content": {"approve": true}}}
    });
    let r = mcp_modern(
        &s,
        ACME,
        "lobster_resume",
        json!({"token": token, "approve": true}),
        answer.clone(),
    );
    assert_eq!(r["isError"], true, "{r}");
    let r = mcp_modern(
        &s,
        ACME,
        "lobster_resume",
        json!({"token": token, "approve": false, "approver": "alice"}),
        json!({}),
    );
    assert_eq!(r["isError"], true, "{r}");
    assert!(
        r.to_string().contains("approver is not accepted here"),
        "{r}"
    );
    assert_eq!(s.get_run(ACME, &run_id).json()["status"], "needs_approval");
    // asky: the client asks its human; the answer decides.
    let r = mcp_modern(
        &s,
        SELF,
        "lobster_run",
        json!({"pipeline": GATED}),
        json!({}),
    );
    let token = r["structuredContent"]["requiresApproval"]["resumeToken"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_string();
    let run_id = s.approvals(SELF)[0]["runId"].as_str().unwrap().to_string();
    let asked = mcp_modern(
        &s,
        SELF,
        "lobster_resume",
        json!({"token": token, "approve": true}),
        json!({}),
    );
    let state = asked["requestState"]
        .as_str()
        .unwrap_or_else(|| panic!("no input required: {asked}"))
        .to_string();
    assert!(asked["inputRequests"]["approval"].is_object(), "{asked}");
    let r = mcp_modern(
        &s,
        SELF,
        "lobster_resume",
        json!({"token": token, "approve": true}),
        json!({
            "requestState": state,
            "inputResponses": {"approval": {"action": "accept", "content": {"approve": true}}}
        }),
    );
    assert_eq!(r["structuredContent"]["output"], json!([1, 2]), "{r}");
    let rec = s.get_run(SELF, &run_id).json();
    assert_eq!(rec["decidedBy"], "a human through the MCP client", "{rec}");
    // The agent cannot name the elicited human either: a call's `approver`
    // leaves the decision nameless.
    let r = mcp_modern(
        &s,
        SELF,
        "lobster_run",
        json!({"pipeline": GATED}),
        json!({}),
    );
    let token = r["structuredContent"]["requiresApproval"]["resumeToken"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_string();
    let run_id = s.approvals(SELF)[0]["runId"].as_str().unwrap().to_string();
    let args = json!({"token": token, "approve": true, "approver": "alice"});
    let asked = mcp_modern(&s, SELF, "lobster_resume", args.clone(), json!({}));
    let state = asked["requestState"]
        .as_str()
        .unwrap_or_else(|| panic!("no input required: {asked}"))
        .to_string();
    let r = mcp_modern(
        &s,
        SELF,
        "lobster_resume",
        args,
        json!({
            "requestState": state,
            "inputResponses": {"approval": {"action": "accept", "content": {"approve": true}}}
        }),
    );
    assert_eq!(r["structuredContent"]["output"], json!([1, 2]), "{r}");
    let rec = s.get_run(SELF, &run_id).json();
    assert_eq!(rec["decidedBy"], "a human through the MCP client", "{rec}");
    // Its REST door still refuses the agent's own yes.
    let r = s.run(SELF, json!({"pipeline": GATED})).json();
    let id = r["runId"].as_str().unwrap().to_string();
    let r = s.call(
        "POST",
        &format!("/v1/runs/{id}/resume"),
        SELF,
        Some(json!({"approve": true})),
    );
    assert_eq!(r.status, 403, "{}", r.body);
}
