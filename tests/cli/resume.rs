//! The resume protocol: yes / no / cancel, by token and by id, exactly once,
//! forged tokens, concurrent resumers, and no state left behind.

use crate::common::{token_of, Env};
use base64::Engine as _;
use serde_json::{json, Value};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;

pub(crate) fn paused(env: &Env, effect_file: &std::path::Path) -> Value {
    let pipeline = format!(
        "{} | approve --prompt 'Write?' | exec --stdin raw --shell 'cat >> {}; echo ok'",
        env.source(r#"["x"]"#),
        effect_file.display()
    );
    let v = env.tool(&pipeline).json();
    assert_eq!(v["status"], "needs_approval", "{v}");
    v
}

#[test]
fn approve_yes_runs_the_rest_once_and_cleans_up() {
    let env = Env::new();
    let effect = env.work_path("effect");
    let v = paused(&env, &effect);
    assert!(!effect.exists(), "nothing after the gate ran");
    assert_eq!(
        env.state_files().len(),
        2,
        "state + approval index: {:?}",
        env.state_files()
    );
    let r = env.run(&["resume", "--token", &token_of(&v), "--approve", "yes"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.json()["output"], json!(["ok"]));
    assert_eq!(crate::common::read(&effect), "x");
    assert!(env.state_files().is_empty(), "{:?}", env.state_files());

    let again = env.run(&["resume", "--token", &token_of(&v), "--approve", "yes"]);
    assert_eq!(again.code, 1);
    assert_eq!(
        again.json()["error"],
        json!({"type":"runtime_error","message":"Pipeline resume state not found"})
    );
    assert_eq!(
        crate::common::read(&effect),
        "x",
        "the effect ran exactly once"
    );
}

/// Gated items holding whole-number floats (`commands.list`'s schemas) are
/// saved as integers; the plan digest checked on resume must not see that as
/// a changed plan.
#[test]
fn items_with_whole_number_floats_resume() {
    let env = Env::new();
    let v = env
        .tool("commands.list | approve --prompt ok? | pick name")
        .json();
    assert_eq!(v["status"], "needs_approval", "{v}");
    let r = env.run(&["resume", "--token", &token_of(&v), "--approve", "yes"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.json()["output"]
        .as_array()
        .unwrap()
        .contains(&json!({"name": "approve"})));
}

#[test]
fn approve_no_and_cancel_give_cancelled() {
    for intent in [&["--approve", "no"][..], &["--cancel"], &["--approve", "N"]] {
        let env = Env::new();
        let effect = env.work_path("effect");
        let v = paused(&env, &effect);
        let mut args = vec!["resume", "--token"];
        let token = token_of(&v);
        args.push(&token);
        args.extend_from_slice(intent);
        let r = env.run(&args);
        assert_eq!(r.code, 0, "{intent:?}: {r:?}");
        assert_eq!(
            r.json(),
            json!({"protocolVersion":1,"ok":true,"status":"cancelled","output":[],"requiresApproval":null,"requiresInput":null})
        );
        assert!(!effect.exists());
        assert!(env.state_files().is_empty(), "{:?}", env.state_files());
    }
}

#[test]
fn cancel_of_a_spent_token_is_an_error() {
    let env = Env::new();
    let v = paused(&env, &env.work_path("e"));
    let t = token_of(&v);
    assert_eq!(env.run(&["resume", "--token", &t, "--cancel"]).code, 0);
    let r = env.run(&["resume", "--token", &t, "--cancel"]);
    assert_eq!(r.code, 1);
    assert_eq!(r.json()["error"]["message"], "Resume state not found");
}

#[test]
fn resume_by_approval_id() {
    let env = Env::new();
    let effect = env.work_path("effect");
    let v = paused(&env, &effect);
    let id = v["requiresApproval"]["approvalId"].as_str().unwrap();
    let r = env.run(&["resume", "--id", id, "--approve", "yes"]);
    assert_eq!(r.json()["status"], "ok", "{r:?}");
    assert_eq!(crate::common::read(&effect), "x");
    let r = env.run(&["resume", "--id", id, "--approve", "yes"]);
    assert_eq!(r.code, 2);
    assert_eq!(
        r.json()["error"]["message"],
        format!("Approval ID \"{id}\" not found or expired")
    );
    assert!(env.state_files().is_empty());
}

#[test]
fn forged_edited_and_truncated_tokens_run_nothing() {
    let env = Env::new();
    let effect = env.work_path("effect");
    let v = paused(&env, &effect);
    let token = token_of(&v);
    let mut payload: Value = serde_json::from_slice(&B64.decode(&token).unwrap()).unwrap();
    let honest_key = payload["stateKey"].clone();

    // A token for another (made-up) state key, with the old tag.
    payload["stateKey"] = json!("pipeline_resume_00000000-0000-4000-8000-000000000000");
    let forged = B64.encode(serde_json::to_vec(&payload).unwrap());
    // The reference's legacy inline workflow token.
    let legacy = B64.encode(
        serde_json::to_vec(&json!({"protocolVersion":1,"v":1,"kind":"workflow-file","filePath":"/etc/passwd","resumeAtIndex":0,"steps":{},"args":{}}))
            .unwrap(),
    );
    // The honest token in other spellings (the reference accepted them
    // all): padding, spaces, the same JSON with its keys reordered or spaced.
    let obj: serde_json::Map<String, Value> =
        serde_json::from_slice(&B64.decode(&token).unwrap()).unwrap();
    let reordered: serde_json::Map<String, Value> = obj.clone().into_iter().rev().collect();
    let reordered = B64.encode(serde_json::to_vec(&reordered).unwrap());
    let spaced = B64.encode(serde_json::to_string_pretty(&obj).unwrap());
    let (padded, spaced_out) = (format!("{token}="), format!(" {token} "));
    for bad in [
        forged.as_str(),
        &token[..token.len() - 5],
        "not-a-token",
        legacy.as_str(),
        padded.as_str(),
        spaced_out.as_str(),
        reordered.as_str(),
        spaced.as_str(),
    ] {
        let r = env.run(&["resume", "--token", bad, "--approve", "yes"]);
        assert_eq!(r.code, 2, "{bad}: {r:?}");
        assert_eq!(
            r.json()["error"],
            json!({"type":"parse_error","message":"Invalid token"})
        );
    }
    assert!(!effect.exists());
    // The honest token still works afterwards.
    payload["stateKey"] = honest_key;
    let r = env.run(&["resume", "--token", &token, "--approve", "yes"]);
    assert_eq!(r.json()["status"], "ok");
}

#[test]
fn many_concurrent_resumers_exactly_one_wins() {
    // The same race against PostgreSQL: tests/cli/store.rs.
    crate::store::race_resumers(None, 12);
}

#[test]
fn resume_argument_errors_are_parse_errors() {
    let env = Env::new();
    for (args, message) in [
        (
            &["resume", "--approve", "yes"][..],
            "resume requires --token or --id",
        ),
        (
            &["resume", "--token", "t"],
            "resume requires --approve yes|no, --response-json, or --cancel",
        ),
        (
            &["resume", "--token", "t", "--approve", "ok"],
            "resume --approve must be yes or no",
        ),
        (
            &["resume", "--token", "t", "--approve", "yes", "--cancel"],
            "resume accepts only one of --approve, --response-json, or --cancel",
        ),
        (
            &["resume", "--token", "t", "--response-json", "{"],
            "resume --response-json must be valid JSON",
        ),
        (
            &["resume", "--token", "t", "--cancel", "maybe"],
            "resume --cancel must be true or false",
        ),
    ] {
        let r = env.run(args);
        assert_eq!(r.code, 2, "{args:?}");
        assert_eq!(
            r.json()["error"],
            json!({"type":"parse_error","message":message})
        );
    }
}
