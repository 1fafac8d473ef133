//! `lobster call`: the agent tool call JSON in, one envelope out.

use crate::common::{token_of, Env};
use serde_json::json;

#[test]
fn run_and_resume_through_call() {
    let env = Env::new();
    // The seed's own example shape.
    let req = json!({"action":"run","pipeline":"exec --json --shell 'echo [1,2]' | approve --preview-from-stdin --limit 5 --prompt 'Apply changes?'","timeoutMs":30000});
    let v = env.run(&["call", &req.to_string()]).json();
    assert_eq!(v["status"], "needs_approval");
    assert_eq!(v["requiresApproval"]["preview"], "[\n  1,\n  2\n]");
    let resume = json!({"action":"resume","token":token_of(&v),"approve":true});
    let r = env.run_with_stdin(&["call"], &resume.to_string());
    assert_eq!(r.json()["output"], json!([1, 2]), "{r:?}");

    let v = env.run(&["call", &req.to_string()]).json();
    let by_id =
        json!({"action":"resume","approvalId":v["requiresApproval"]["approvalId"],"approve":false});
    assert_eq!(
        env.run(&["call", &by_id.to_string()]).json()["status"],
        "cancelled"
    );
    assert!(env.state_files().is_empty());
}

#[test]
fn contract_error_strings() {
    let env = Env::new();
    for (req, message) in [
        (json!({"action":"explode"}), "Unknown action: explode"),
        (json!({"action":"run"}), "pipeline required"),
        (
            json!({"action":"run","pipeline":"head","argsJson":"{oops"}),
            "run --args-json must be valid JSON",
        ),
        (
            json!({"action":"resume","approve":true}),
            "token or approvalId required",
        ),
        (json!({"action":"resume","token":"abc"}), "approve required"),
        (
            json!({"action":"run","pipeline":"head","cwd":"/etc"}),
            "cwd must be a relative path",
        ),
        (
            json!({"action":"run","pipeline":"head","cwd":"../.."}),
            "cwd must stay within the gateway working directory",
        ),
    ] {
        let r = env.run(&["call", &req.to_string()]);
        assert_eq!(r.code, 2, "{req}: {r:?}");
        assert_eq!(r.json()["error"]["message"], message, "{req}");
    }
    let r = env.run(&["call", "not json"]);
    assert_eq!(r.code, 2);
    assert_eq!(r.json()["error"]["type"], "parse_error");
}

#[test]
fn cwd_is_used_and_cannot_escape_by_symlink() {
    let env = Env::new();
    std::fs::create_dir(env.work_path("sub")).unwrap();
    std::os::unix::fs::symlink("/", env.work_path("out")).unwrap();
    let req = json!({"action":"run","pipeline":"exec --shell pwd"});
    let mut with_cwd = req.clone();
    with_cwd["cwd"] = json!("sub");
    let v = env.run(&["call", &with_cwd.to_string()]).json();
    assert!(v["output"][0].as_str().unwrap().ends_with("/sub"), "{v}");
    with_cwd["cwd"] = json!("out");
    let r = env.run(&["call", &with_cwd.to_string()]);
    assert_eq!(
        r.json()["error"]["message"],
        "cwd must stay within the gateway working directory"
    );
    let r = env.run(&["run", "--mode", "tool", "--cwd", "sub", "exec --shell pwd"]);
    assert!(r.json()["output"][0].as_str().unwrap().ends_with("/sub"));
}
