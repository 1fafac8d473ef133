//! Approval and input gates as the agent sees them.

use crate::common::{token_of, Env};
use serde_json::json;

#[test]
fn approval_gate_halts_with_token_id_and_preview() {
    let env = Env::new();
    let r = env.tool(&format!(
        "{} | approve --preview-from-stdin --limit 2 --prompt 'Apply?'",
        env.source(r#"["a","b","c"]"#)
    ));
    assert_eq!(r.code, 0, "{r:?}");
    let v = r.json();
    assert_eq!(v["status"], "needs_approval");
    assert_eq!(v["output"], json!([]));
    let req = &v["requiresApproval"];
    let keys = crate::common::keys(req);
    assert_eq!(
        keys,
        [
            "type",
            "prompt",
            "items",
            "preview",
            "resumeToken",
            "approvalId",
            // Lobster extensions (docs/COMPATIBILITY.md): what runs after the gate.
            "planDigest",
            "capabilities",
        ]
    );
    assert_eq!(req["prompt"], "Apply?");
    assert_eq!(req["items"], json!(["a", "b", "c"]));
    assert_eq!(req["preview"], "a\nb");
    let id = req["approvalId"].as_str().unwrap();
    assert!(
        id.len() == 8
            && id
                .chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()),
        "{id}"
    );
    assert_eq!(v["requiresInput"], json!(null));
}

#[test]
fn human_mode_without_a_terminal_saves_state_and_prints_the_token() {
    let env = Env::new();
    let r = env.run(&["exec --json --shell 'echo [1]' | approve --prompt go"]);
    assert_eq!(r.code, 0, "{r:?}");
    let items = r.json();
    assert_eq!(items[0]["type"], "approval_request");
    assert_eq!(items[0]["items"], json!([1]));
    let token = items[0]["resumeToken"].as_str().unwrap().to_string();
    let id = items[0]["approvalId"].as_str().unwrap().to_string();
    assert!(
        r.stderr
            .contains(&format!("lobster resume --id {id} --approve yes")),
        "{r:?}"
    );
    let r = env.run(&["resume", "--token", &token, "--approve", "yes"]);
    assert_eq!(r.json()["output"], json!([1]));
}

#[test]
fn input_gate_validates_and_passes_the_response_on() {
    let env = Env::new();
    let schema = r#"{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}"#;
    let r = env.tool(&format!(
        "{} | ask --prompt 'How many?' --subject-from-stdin --schema '{schema}' | map --wrap answer",
        env.source(r#"["draft"]"#)
    ));
    let v = r.json();
    assert_eq!(v["status"], "needs_input", "{r:?}");
    let req = &v["requiresInput"];
    let keys = crate::common::keys(req);
    assert_eq!(
        keys,
        ["type", "prompt", "responseSchema", "subject", "resumeToken"]
    );
    assert_eq!(req["subject"], json!({"text": "draft"}));
    assert!(req.get("approvalId").is_none());
    let token = token_of(&v);

    // A response that fails the schema is a parse error and keeps the token usable.
    let bad = env.run(&[
        "resume",
        "--token",
        &token,
        "--response-json",
        r#"{"n":"x"}"#,
    ]);
    assert_eq!(bad.code, 2, "{bad:?}");
    assert!(bad.json()["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("pipeline input response failed schema validation at /n: "));
    let wrong = env.run(&["resume", "--token", &token, "--approve", "yes"]);
    assert_eq!(
        wrong.json()["error"]["message"],
        "pipeline input resumes require response"
    );

    let ok = env.run(&["resume", "--token", &token, "--response-json", r#"{"n":3}"#]);
    assert_eq!(ok.json()["output"], json!([{"answer": {"n": 3}}]), "{ok:?}");
    assert!(env.state_files().is_empty(), "{:?}", env.state_files());
}

#[test]
fn approval_gate_refuses_a_response() {
    let env = Env::new();
    let v = env.tool("exec --json --shell 'echo [1]' | approve").json();
    let r = env.run(&["resume", "--token", &token_of(&v), "--response-json", "{}"]);
    assert_eq!(r.code, 2);
    assert_eq!(
        r.json()["error"]["message"],
        "approval resumes require approved=true|false, not response"
    );
}

#[test]
fn successive_gates_each_issue_a_new_token() {
    let env = Env::new();
    let log = env.work_path("log");
    let pipeline = format!(
        "exec --json --shell 'echo [1]' | approve --prompt first | exec --stdin json --shell 'cat >> {0}; echo [2]' --json | approve --prompt second | exec --shell 'echo done >> {0}'",
        log.display()
    );
    let first = env.tool(&pipeline).json();
    assert_eq!(first["requiresApproval"]["prompt"], "first");
    let second = env
        .run(&["resume", "--token", &token_of(&first), "--approve", "yes"])
        .json();
    assert_eq!(second["status"], "needs_approval", "{second}");
    assert_eq!(second["requiresApproval"]["prompt"], "second");
    assert_eq!(second["requiresApproval"]["items"], json!([2]));
    assert_ne!(token_of(&first), token_of(&second));
    assert_ne!(
        first["requiresApproval"]["approvalId"],
        second["requiresApproval"]["approvalId"]
    );
    let done = env.run(&[
        "resume",
        "--id",
        second["requiresApproval"]["approvalId"].as_str().unwrap(),
        "--approve",
        "yes",
    ]);
    assert_eq!(done.json()["status"], "ok", "{done:?}");
    assert_eq!(crate::common::read(&log), "[1]done\n");
    assert!(env.state_files().is_empty(), "{:?}", env.state_files());
}
