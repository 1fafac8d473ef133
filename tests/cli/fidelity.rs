//! Fidelity with the current reference release (`@clawdbot/lobster@2026.9.13`,
//! issue 11): `exec --json` as a switch, the key sets of every envelope
//! shape, `LOBSTER_MAX_OUTPUT_BYTES`, and Ajv's wording of schema errors.

use crate::common::{keys, token_of, Env};

#[test]
fn exec_json_is_a_switch() {
    let env = Env::new();
    std::fs::write(env.work_path("items.json"), r#"[{"n":1},{"n":2}]"#).unwrap();
    let r = env.tool("exec --json cat items.json");
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.json()["output"], serde_json::json!([{"n": 1}, {"n": 2}]));
    // The reference's own examples: `--stdin json --json cat` round-trips, and
    // a later `--json` of the child is the switch again (the value stays a
    // positional, as in the reference's parser).
    let r = env.tool(&format!(
        "{} | exec --stdin json --json cat",
        env.source("[1,[2]]")
    ));
    assert_eq!(r.json()["output"], serde_json::json!([1, [2]]), "{r:?}");
    let r = env.tool("exec --json echo --json [3]");
    assert_eq!(r.json()["output"], serde_json::json!([3]), "{r:?}");
    // Every other flag stays greedy: `--stdin` takes the next word.
    let r = env.tool("exec --stdin cat items.json");
    assert_eq!(
        r.json()["error"]["message"],
        "exec --stdin must be raw, json, or jsonl (got cat)"
    );
    // The help says so.
    let r = env.run(&["help", "exec"]);
    assert!(r.stdout.contains("--json is a switch"), "{r:?}");
}

/// Every envelope shape, key by key, in the reference's order. Lobster's own
/// additions are `planDigest` and `capabilities` on approval requests only.
#[test]
fn envelope_shapes_match_the_reference() {
    let env = Env::new();
    let top = [
        "protocolVersion",
        "ok",
        "status",
        "output",
        "requiresApproval",
        "requiresInput",
    ];
    let approval = [
        "type",
        "prompt",
        "items",
        "preview",
        "resumeToken",
        "approvalId",
        "planDigest",
        "capabilities",
    ];

    // Pipeline, tool mode: ok, approval (with preview), input with and without subject.
    let ok = env.tool("exec --json --shell 'echo [1]'").json();
    assert_eq!(keys(&ok), top);
    let a = env
        .tool("exec --json --shell 'echo [1]' | approve --preview-from-stdin --prompt ok?")
        .json();
    assert_eq!(keys(&a), top);
    assert_eq!(keys(&a["requiresApproval"]), approval);
    assert!(a["requiresInput"].is_null());
    let i = env.tool("ask --prompt hi").json();
    assert_eq!(keys(&i), top);
    assert_eq!(
        keys(&i["requiresInput"]),
        ["type", "prompt", "responseSchema", "resumeToken"]
    );
    let i = env
        .tool("exec --json --shell 'echo [1]' | ask --prompt hi --subject-from-stdin")
        .json();
    assert_eq!(
        keys(&i["requiresInput"]),
        ["type", "prompt", "responseSchema", "subject", "resumeToken"]
    );
    // Cancelled (resume --approve no) and error envelopes.
    let c = env
        .run(&["resume", "--token", &token_of(&a), "--approve", "no"])
        .json();
    assert_eq!(keys(&c), top);
    assert_eq!(c["status"], "cancelled");
    let e = env.tool("nosuchcommand").json();
    assert_eq!(keys(&e), ["protocolVersion", "ok", "error"]);
    assert_eq!(keys(&e["error"]), ["type", "message"]);

    // Workflow, tool mode: an input step with no subject prints `"subject": null`.
    std::fs::write(
        env.work_path("input.lobster"),
        "steps:\n  - id: q\n    input:\n      prompt: Name?\n      defaults: {name: x}\n      responseSchema: {type: object, required: [name]}\n",
    )
    .unwrap();
    let w = env.run(&["run", "--mode", "tool", "input.lobster"]).json();
    assert_eq!(keys(&w), top);
    assert_eq!(
        keys(&w["requiresInput"]),
        [
            "type",
            "prompt",
            "responseSchema",
            "defaults",
            "subject",
            "resumeToken"
        ]
    );
    assert!(w["requiresInput"]["subject"].is_null(), "{w}");
    // … and the previous step's output when there is one.
    std::fs::write(
        env.work_path("input2.lobster"),
        "steps:\n  - id: a\n    run: echo '{\"k\":1}'\n  - id: q\n    input:\n      prompt: Name?\n      responseSchema: {type: object}\n",
    )
    .unwrap();
    let w = env.run(&["run", "--mode", "tool", "input2.lobster"]).json();
    assert_eq!(w["requiresInput"]["subject"], serde_json::json!({"k": 1}));
    // A workflow approval.
    std::fs::write(
        env.work_path("approve.lobster"),
        "steps:\n  - id: a\n    run: echo '{\"x\":1}'\n    approval: Go?\n",
    )
    .unwrap();
    let w = env
        .run(&["run", "--mode", "tool", "approve.lobster"])
        .json();
    assert_eq!(keys(&w), top);
    assert_eq!(keys(&w["requiresApproval"]), approval);
    // Human mode, workflow: the reference prints `{status, output,
    // requiresApproval, requiresInput}` (no protocolVersion/ok).
    let h = env.run(&["run", "input.lobster"]);
    let h: serde_json::Value = serde_json::from_str(&h.stdout).unwrap();
    assert_eq!(
        keys(&h),
        ["status", "output", "requiresApproval", "requiresInput"]
    );
    assert!(h["requiresInput"]["subject"].is_null(), "{h}");
    // Human mode, pipeline (no terminal): the halted item as the reference
    // prints it (an `ask` item carries the input `items`), plus the token
    // (and approval id, digest, capabilities) so the run is not lost.
    let h = env.run(&["exec --json --shell 'echo [1,2]' | ask --prompt hi"]);
    let h: serde_json::Value = serde_json::from_str(&h.stdout).unwrap();
    assert_eq!(
        keys(&h[0]),
        ["type", "prompt", "responseSchema", "items", "resumeToken"]
    );
    assert_eq!(h[0]["items"], serde_json::json!([1, 2]));
    let h = env.run(&["exec --json --shell 'echo [1]' | approve --prompt ok?"]);
    let h: serde_json::Value = serde_json::from_str(&h.stdout).unwrap();
    assert_eq!(
        keys(&h[0]),
        [
            "type",
            "prompt",
            "items",
            "resumeToken",
            "approvalId",
            "planDigest",
            "capabilities"
        ]
    );
}

/// `LOBSTER_MAX_OUTPUT_BYTES` caps each child exactly, as in the reference
/// (no 1024 floor: that belongs to `--max-stdout-bytes`), from the process
/// environment or a workflow step's `env:`.
#[test]
fn lobster_max_output_bytes_caps_each_child_exactly() {
    let env = Env::new();
    let run = |pipeline: &str, value: &str| {
        crate::common::finish(
            env.command(&["run", "--mode", "tool", pipeline])
                .env("LOBSTER_MAX_OUTPUT_BYTES", value)
                .output()
                .unwrap(),
        )
    };
    // 16 bytes pass, 17 do not.
    let r = run("exec --shell 'printf 0123456789abcdef'", "16");
    assert_eq!(r.json()["output"], serde_json::json!(["0123456789abcdef"]));
    let r = run("exec --shell 'printf 0123456789abcdefg'", "16");
    assert_eq!(r.code, 1, "{r:?}");
    assert_eq!(
        r.json()["error"]["message"],
        "Process output exceeded 16 bytes"
    );
    // stderr too.
    let r = run("exec --shell 'seq 100 >&2'", "16");
    assert_eq!(
        r.json()["error"]["message"],
        "Process output exceeded 16 bytes"
    );
    // The reference's check of the value.
    for bad in ["0", "abc", "-5", "1.5"] {
        let r = run("exec --shell 'true'", bad);
        assert_eq!(
            r.json()["error"]["message"],
            "LOBSTER_MAX_OUTPUT_BYTES must be a positive safe integer (bytes)",
            "{bad}"
        );
    }
    // A smaller --max-stdout-bytes still wins with its own message.
    let r = crate::common::finish(
        env.command(&[
            "run",
            "--mode",
            "tool",
            "--max-stdout-bytes",
            "1024",
            "exec --shell 'seq 1000'",
        ])
        .env("LOBSTER_MAX_OUTPUT_BYTES", "100000")
        .output()
        .unwrap(),
    );
    assert_eq!(
        r.json()["error"]["message"],
        "lobster stdout exceeded maxStdoutBytes"
    );
    // A workflow step's env caps that step only.
    std::fs::write(
        env.work_path("cap.lobster"),
        "steps:\n  - id: small\n    run: echo tiny\n    env: {LOBSTER_MAX_OUTPUT_BYTES: \"16\"}\n  - id: big\n    run: seq 100\n    env: {LOBSTER_MAX_OUTPUT_BYTES: \"16\"}\n",
    )
    .unwrap();
    let r = env.run(&["run", "--mode", "tool", "cap.lobster"]);
    assert_eq!(r.code, 1, "{r:?}");
    let msg = r.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(msg.contains("Process output exceeded 16 bytes"), "{msg}");
}

/// Input responses that fail their schema are reported in Ajv's words, with
/// the JSON pointer, at every gate kind.
#[test]
fn schema_errors_use_ajv_wording() {
    let env = Env::new();
    let schema = r#"{"type":"object","properties":{"name":{"type":"string","minLength":2},"n":{"type":"integer","minimum":1}},"required":["name"],"additionalProperties":false}"#;
    let paused = env
        .tool(&format!("ask --prompt hi --schema '{schema}'"))
        .json();
    let token = token_of(&paused);
    let answer = |response: &str| {
        env.run(&["resume", "--token", &token, "--response-json", response])
            .json()["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    let prefix = "pipeline input response failed schema validation at";
    assert_eq!(
        answer("{}"),
        format!("{prefix} /: must have required property 'name'")
    );
    assert_eq!(
        answer(r#"{"name":5}"#),
        format!("{prefix} /name: must be string")
    );
    assert_eq!(
        answer(r#"{"name":"a"}"#),
        format!("{prefix} /name: must NOT have fewer than 2 characters")
    );
    assert_eq!(
        answer(r#"{"name":"ab","n":0}"#),
        format!("{prefix} /n: must be >= 1")
    );
    assert_eq!(
        answer(r#"{"name":"ab","x":1}"#),
        format!("{prefix} /: must NOT have additional properties")
    );
    // The default schema of `ask`: enum.
    let paused = env.tool("ask --prompt hi").json();
    let r = env.run(&[
        "resume",
        "--token",
        &token_of(&paused),
        "--response-json",
        r#"{"decision":"maybe"}"#,
    ]);
    assert_eq!(
        r.json()["error"]["message"],
        format!("{prefix} /decision: must be equal to one of the allowed values")
    );
    // A workflow input step.
    std::fs::write(
        env.work_path("input.lobster"),
        "steps:\n  - id: q\n    input:\n      prompt: Name?\n      responseSchema: {type: object, required: [name]}\n",
    )
    .unwrap();
    let w = env.run(&["run", "--mode", "tool", "input.lobster"]).json();
    let r = env.run(&["resume", "--token", &token_of(&w), "--response-json", "{}"]);
    assert_eq!(
        r.json()["error"]["message"],
        "Workflow input step q response failed schema validation at /: must have required property 'name'"
    );
}

/// `lobster help <step>` prints the step's describe; `lobster help` and
/// `commands.list` list the steps on the step path after the built-ins.
#[test]
fn help_and_commands_list_know_the_steps() {
    let env = Env::new();
    if env.copy_examples("steps").is_none() {
        return;
    }
    let r = env.run(&["help", "inbox.list"]);
    assert_eq!(r.code, 0, "{r:?}");
    for part in [
        "inbox.list — ",
        "version 0.1.0",
        "--folder (text)",
        "--limit (number)",
        "Needs:",
        "/mail",
        "--allow-read",
        "Component: blake3 ",
    ] {
        assert!(r.stdout.contains(part), "{part:?} in {}", r.stdout);
    }
    // By file name on an explicit --steps directory too.
    std::fs::rename(env.work_path("steps"), env.work_path("elsewhere")).unwrap();
    let r = env.run(&["help", "inbox.list"]);
    assert_eq!(r.code, 2, "{r:?}");
    let r = env.run(&["help", "--steps", "elsewhere", "email.triage"]);
    assert!(r.stdout.starts_with("email.triage — "), "{r:?}");
    std::fs::rename(env.work_path("elsewhere"), env.work_path("steps")).unwrap();

    let r = env.run(&["help"]);
    let tail = r
        .stdout
        .split("Steps on the step path")
        .nth(1)
        .unwrap_or_default();
    for step in [
        "inbox.list",
        "inbox.categorize",
        "inbox.apply",
        "email.triage",
    ] {
        assert!(tail.contains(step), "{step} in {}", r.stdout);
    }
    let r = env.tool("commands.list | pick name");
    let names: Vec<String> = r.json()["output"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap().to_string())
        .collect();
    let first_step = names.iter().position(|n| n == "email.triage").unwrap();
    assert!(names.iter().position(|n| n == "commands.list").unwrap() < first_step);
    assert!(names.contains(&"inbox.apply".to_string()), "{names:?}");
    let r = env.tool("commands.list | where name==inbox.list");
    assert_eq!(
        r.json()["output"][0]["sideEffects"],
        serde_json::json!(["wasm_step"])
    );
}

/// The main help names the trust subcommands and the sandbox flags.
#[test]
fn main_help_shows_the_sandbox() {
    let env = Env::new();
    let r = env.run(&["help"]);
    for word in [
        "lobster check",
        "lobster bundle",
        "lobster lock",
        "lobster doctor",
        "--steps DIR",
        "--allow-read",
        "--allow-write",
        "--allow-env",
        "--policy FILE",
    ] {
        assert!(r.stdout.contains(word), "{word:?} in {}", r.stdout);
    }
    assert!(r.stdout.contains("Steps: none on the step path"), "{r:?}");
}

fn doctor_checks(r: &crate::common::Run) -> Vec<serde_json::Value> {
    assert_eq!(r.code, 0, "{r:?}");
    let report = r.json()["output"][0].clone();
    assert_eq!(report["toolMode"], true, "{report}");
    report["checks"].as_array().cloned().unwrap_or_default()
}

fn check<'a>(checks: &'a [serde_json::Value], name: &str) -> &'a serde_json::Value {
    checks
        .iter()
        .find(|c| c["check"] == name)
        .unwrap_or_else(|| panic!("no {name} check in {checks:?}"))
}

/// `lobster doctor` checks the state dir, the step path, the cache, the
/// policy and the engine, and says what to fix.
#[test]
fn doctor_checks_the_sandbox_and_says_what_to_fix() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    // A healthy set-up: a pause made the state dir (0700) and its key.
    env.tool("exec --json --shell 'echo [1]' | approve --prompt ok?");
    std::fs::set_permissions(env.state.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let checks = doctor_checks(&env.run(&["doctor"]));
    let names: Vec<&str> = checks.iter().filter_map(|c| c["check"].as_str()).collect();
    assert_eq!(
        names,
        [
            "state directory",
            "wasm engine",
            "step path",
            "compiled cache",
            "policy"
        ]
    );
    let state = check(&checks, "state directory");
    assert_eq!(state["ok"], true, "{state}");
    assert!(state["detail"]
        .as_str()
        .unwrap()
        .contains("token key present"));
    assert!(check(&checks, "policy")["detail"]
        .as_str()
        .unwrap()
        .starts_with("none"));

    // A state dir others can read: a problem, with the fix.
    std::fs::set_permissions(env.state.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let checks = doctor_checks(&env.run(&["doctor"]));
    let state = check(&checks, "state directory");
    assert_eq!(state["ok"], false, "{state}");
    assert_eq!(
        state["fix"],
        format!("chmod 700 {}", env.state.path().display())
    );
    std::fs::set_permissions(env.state.path(), std::fs::Permissions::from_mode(0o700)).unwrap();

    // Components on the step path: each one named, with world, digest and
    // cache state; a broken one is a problem with a fix.
    if env.copy_examples("steps").is_some() {
        std::fs::write(env.work_path("steps/broken.wasm"), b"not a component").unwrap();
        let r = env.run(&["doctor"]);
        let checks = doctor_checks(&r);
        let steps = check(&checks, "step path");
        let detail = steps["detail"].as_str().unwrap();
        assert!(
            detail.contains("inbox.list (inbox_list.wasm): lobster:step, blake3 "),
            "{detail}"
        );
        assert!(detail.contains("broken.wasm: does not load"), "{detail}");
        assert_eq!(steps["ok"], false);
        assert!(
            steps["fix"].as_str().unwrap().contains("broken.wasm"),
            "{steps}"
        );
        assert_eq!(r.json()["output"][0]["problems"], 1);
        // Compiled now, so cached the second time.
        let checks = doctor_checks(&env.run(&["doctor"]));
        let detail = check(&checks, "step path")["detail"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(detail.contains(", cached"), "{detail}");
        let cache = check(&checks, "compiled cache")["detail"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(cache.contains("4 compiled component(s)"), "{cache}");
    }

    // The policy in force.
    std::fs::write(
        env.work_path("policy.toml"),
        "trust = \"untrusted\"\nroots = [\"mail\"]\n[max]\ntimeout_ms = 5000\n",
    )
    .unwrap();
    let checks = doctor_checks(&env.run(&["doctor", "--policy", "policy.toml"]));
    let detail = check(&checks, "policy")["detail"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        detail
            .ends_with("policy.toml: trust untrusted, roots [mail], env none, max timeout_ms=5000"),
        "{detail}"
    );

    // A policy that cannot be read: a problem with its fix, the other checks still run.
    std::fs::write(env.work_path("bad.toml"), "trust = \"sometimes\"\n").unwrap();
    let checks = doctor_checks(&env.run(&["doctor", "--policy", "bad.toml"]));
    let policy = check(&checks, "policy");
    assert_eq!(policy["ok"], false, "{policy}");
    assert!(
        policy["detail"]
            .as_str()
            .unwrap()
            .contains("invalid policy file"),
        "{policy}"
    );
    assert!(
        policy["fix"]
            .as_str()
            .unwrap()
            .starts_with("fix the policy file"),
        "{policy}"
    );
    assert_eq!(check(&checks, "state directory")["ok"], true);

    // The reserved allocator under a small address-space limit.
    let r = crate::common::finish(
        std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(format!(
                "ulimit -v 4000000; exec {} doctor",
                crate::common::bin()
            ))
            .current_dir(env.work.path())
            .env("LOBSTER_STATE_DIR", env.state.path())
            .env("LOBSTER_WASM_ALLOCATOR", "reserved")
            .output()
            .unwrap(),
    );
    let checks = doctor_checks(&r);
    let engine = check(&checks, "wasm engine");
    assert_eq!(engine["ok"], false, "{engine}");
    assert!(engine["detail"]
        .as_str()
        .unwrap()
        .contains("reservation is refused"));
    assert!(engine["fix"]
        .as_str()
        .unwrap()
        .contains("LOBSTER_WASM_ALLOCATOR=compact"));
}
