//! The runs API's doors as a client meets them: every handler that takes a
//! tenant token refuses a request without one, with a malformed one or with
//! a wrong one (401, `WWW-Authenticate: Bearer`, the same error body), before
//! its body is read; and every malformed request body gets a 400 naming the
//! field and what it takes, the paused run untouched.

use super::{setup, start, Server, ACME, GATED, SELF};
use serde_json::{json, Value};

/// `(method, path)` of every handler that authenticates with a tenant token.
fn tenant_doors(run_id: &str) -> Vec<(&'static str, String)> {
    vec![
        ("POST", "/v1/runs".into()),
        ("GET", "/v1/runs".into()),
        ("GET", format!("/v1/runs/{run_id}")),
        ("GET", format!("/v1/runs/{run_id}/journal")),
        ("POST", format!("/v1/runs/{run_id}/resume")),
        ("POST", "/v1/resume".into()),
        ("GET", "/v1/approvals".into()),
        ("POST", "/mcp".into()),
    ]
}

#[test]
fn every_tenant_door_refuses_a_missing_or_wrong_token() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(&setup(dir.path(), "", ""));
    let id = paused(&s, SELF);
    let cases: [(&[(&str, &str)], &str); 5] = [
        (&[], "missing Authorization: Bearer <tenant token>"),
        (
            &[("Authorization", "Basic YWNtZTp4")],
            "Authorization must be `Bearer <tenant token>`",
        ),
        (
            &[("Authorization", "Bearer ")],
            "Authorization must be `Bearer <tenant token>`",
        ),
        (&[("Authorization", "Bearer wrong-token")], "unknown token"),
        // Another tenant's approver token is not a tenant token.
        (
            &[("Authorization", "Bearer alice-approver-token")],
            "unknown token",
        ),
    ];
    // A body that would be refused (400) if it were read: the token is
    // checked first.
    let body = b"{not json";
    for (method, path) in tenant_doors(&id) {
        for (headers, message) in cases {
            let mut headers = headers.to_vec();
            headers.push(("Content-Type", "application/json"));
            headers.push(("Accept", "application/json, text/event-stream"));
            let r = s.raw(method, &path, &headers, body);
            assert_eq!(r.status, 401, "{method} {path} {headers:?}: {}", r.body);
            assert_eq!(
                r.header("www-authenticate"),
                Some("Bearer"),
                "{method} {path}"
            );
            assert_eq!(
                r.json(),
                json!({"error": {"type": "unauthorized", "message": message}}),
                "{method} {path} {headers:?}"
            );
        }
    }
    // Nothing was decided: the run is still paused.
    let r = s.get_run(SELF, &id);
    assert_eq!(r.json()["status"], "needs_approval", "{}", r.body);
}

/// A run of `token`'s tenant paused at its approval gate; its id.
fn paused(s: &Server, token: &str) -> String {
    let r = s.run(token, json!({ "pipeline": GATED }));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["status"], "needs_approval", "{}", r.body);
    r.json()["runId"].as_str().unwrap().to_string()
}

fn refused(r: &super::Resp) -> String {
    assert_eq!(r.status, 400, "{}", r.body);
    let v: Value = r.json();
    assert_eq!(v["error"]["type"], "bad_request", "{v}");
    v["error"]["message"].as_str().unwrap().to_string()
}

#[test]
fn malformed_bodies_are_refused_with_the_field_named() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(&setup(dir.path(), "", ""));
    let post = |path: &str, body: &[u8]| {
        let auth = format!("Bearer {SELF}");
        s.raw(
            "POST",
            path,
            &[
                ("Authorization", auth.as_str()),
                ("Content-Type", "application/json"),
            ],
            body,
        )
    };
    let runs = |body: Value| refused(&s.run(ACME, body));
    // Not JSON, not an object.
    let m = refused(&post("/v1/runs", b"{\"pipeline\": "));
    assert!(m.starts_with("the body is not valid JSON: "), "{m}");
    assert_eq!(
        refused(&post("/v1/runs", b"[1]")),
        "the body must be a JSON object"
    );
    // An empty body is `{}`: no target.
    assert_eq!(
        refused(&post("/v1/runs", b" \n")),
        "give one of pipeline, workflow (a catalog name) or workflowText"
    );
    assert_eq!(
        runs(json!({"pipeline": "exec --json --shell 'echo 1'", "cwd": "x"})),
        "unknown field cwd: POST /v1/runs takes pipeline, workflow, workflowText, args, timeoutMs, maxStdoutBytes, wait"
    );
    for field in ["pipeline", "workflow", "workflowText"] {
        for bad in [json!(""), json!("  "), json!(7), json!(["x"])] {
            assert_eq!(
                runs(json!({ (field): bad })),
                format!("{field} must be a non-empty string"),
                "{bad}"
            );
        }
    }
    assert_eq!(
        runs(json!({"pipeline": "a", "workflow": "b"})),
        "give only one of pipeline, workflow and workflowText"
    );
    assert_eq!(
        runs(json!({"workflow": "w", "args": [1]})),
        "args must be an object"
    );
    assert_eq!(
        runs(json!({"pipeline": "a", "timeoutMs": "soon"})),
        "timeoutMs must be a number"
    );
    assert_eq!(
        runs(json!({"pipeline": "a", "maxStdoutBytes": true})),
        "maxStdoutBytes must be a number"
    );
    for bad in [json!(-1), json!(1.5), json!("10")] {
        assert_eq!(
            runs(json!({"pipeline": "a", "wait": bad})),
            "wait must be a number of milliseconds",
            "{bad}"
        );
    }
    let r = s.call(
        "POST",
        "/v1/runs?wait=soon",
        ACME,
        Some(json!({"pipeline": "a"})),
    );
    assert_eq!(refused(&r), "wait must be a number of milliseconds");

    // Resume bodies, at a paused run of a tenant that may approve.
    let id = paused(&s, SELF);
    let resume = |body: &[u8]| post(&format!("/v1/runs/{id}/resume"), body);
    let m = refused(&resume(b"{\"approve\": tru"));
    assert!(m.starts_with("the body is not valid JSON: "), "{m}");
    assert_eq!(
        refused(&resume(b"\"yes\"")),
        "the body must be a JSON object"
    );
    let resume = |body: Value| resume(body.to_string().as_bytes());
    assert_eq!(refused(&resume(json!({}))), "approve required");
    assert_eq!(
        refused(&resume(json!({"approve": "yes"}))),
        "approve required"
    );
    assert_eq!(
        refused(&resume(json!({"approve": true, "timeoutMs": "soon"}))),
        "timeoutMs must be a number"
    );
    assert_eq!(
        refused(&resume(json!({"approve": true, "wait": -5}))),
        "wait must be a number of milliseconds"
    );
    assert!(refused(&resume(json!({"approve": true, "approver": null})))
        .starts_with("approver is not accepted here"));
    let by_token = |body: Value| refused(&post("/v1/resume", body.to_string().as_bytes()));
    assert_eq!(
        by_token(json!({"approve": true})),
        "token or approvalId required"
    );
    assert_eq!(
        by_token(json!({"token": "", "approvalId": 7, "approve": true})),
        "token or approvalId required"
    );
    // None of it decided the gate.
    assert_eq!(s.get_run(SELF, &id).json()["status"], "needs_approval");
}
