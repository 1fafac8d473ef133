//! Rust, Python and TypeScript steps side by side: the sample mail
//! categorised alike, a workflow mixing them, declared examples, exceptions
//! as step failures, console and log lines, state through the host, tools
//! and models through the broker, and `lobster step new|build|test` for each.

use super::{
    built, command, error_message, examples_dir, guests_dir, hostile_grants, mail, root, run,
    steps_args, tool,
};
use crate::broker::Stub;
use crate::common::{finish, Env, Run};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;

#[test]
fn rust_python_and_typescript_categorize_the_sample_mail_alike() {
    if !built() {
        return;
    }
    let env = Env::new();
    mail(&env);
    let outputs: Vec<serde_json::Value> = [
        "inbox.categorize",
        "inbox.categorize-py",
        "inbox.categorize-ts",
    ]
    .iter()
    .map(|step| {
        let r = tool(
            &env,
            &["--allow-read", "mail"],
            &format!("inbox.list | {step} | pick id,category"),
        );
        let v = r.json();
        assert_eq!(v["status"], "ok", "{step}: {r:?}");
        v["output"].clone()
    })
    .collect();
    let items = outputs[0].as_array().unwrap();
    assert_eq!(items.len(), 10);
    let mut categories: Vec<&str> = items
        .iter()
        .map(|i| i["category"].as_str().unwrap())
        .collect();
    categories.sort();
    categories.dedup();
    assert!(categories.len() >= 4, "{categories:?}");
    assert_eq!(outputs[0], outputs[1], "Python differs from Rust");
    assert_eq!(outputs[0], outputs[2], "TypeScript differs from Rust");
}

#[test]
fn a_workflow_mixes_rust_python_and_typescript_steps() {
    if !built() {
        return;
    }
    let env = Env::new();
    mail(&env);
    let wf = root().join("examples/workflows/polyglot.lobster");
    let r = run(
        &env,
        &[
            "run",
            "--mode",
            "tool",
            "--allow-read",
            "mail",
            wf.to_str().unwrap(),
        ],
    );
    let v = r.json();
    assert_eq!(v["status"], "ok", "{r:?}");
    let items = v["output"].as_array().unwrap();
    assert_eq!(items.len(), 10, "{r:?}");
    for item in items {
        assert_eq!(item["category"], item["category_ts"], "{item}");
        assert!(item.get("triage").is_some(), "{item}");
    }
}

#[test]
fn every_language_passes_its_declared_examples_in_the_sandbox() {
    if !built() {
        return;
    }
    let env = Env::new();
    for dir in [
        "inbox-categorize",
        "inbox-categorize-py",
        "inbox-categorize-ts",
    ] {
        let project = root().join("examples/steps").join(dir);
        let r = run(&env, &["step", "test", project.to_str().unwrap()]);
        assert_eq!(r.code, 0, "{dir}: {r:?}");
        assert!(r.stdout.ends_with("2 passed, 0 failed\n"), "{dir}: {r:?}");
    }
}

#[test]
fn a_failing_example_is_reported_with_expected_and_actual_items() {
    if !built() {
        return;
    }
    let env = Env::new();
    let project = env.work_path("bad");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(
        project.join("lobster-step.toml"),
        format!(
            "name = \"inbox.categorize-ts\"\nlang = \"js\"\nwasm = \"{}\"\n",
            examples_dir().join("inbox-categorize-ts.wasm").display()
        ),
    )
    .unwrap();
    std::fs::write(
        project.join("examples.json"),
        r#"[{"name": "wrong on purpose", "args": [], "input": [{"subject": "invoice"}], "output": [{"subject": "invoice", "category": "work"}]}]"#,
    )
    .unwrap();
    let r = run(&env, &["step", "test", project.to_str().unwrap()]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stdout.contains("FAILED  wrong on purpose"), "{r:?}");
    assert!(r.stdout.contains(r#""category":"finance""#), "{r:?}");
    assert!(r.stdout.ends_with("0 passed, 1 failed\n"), "{r:?}");
}

#[test]
fn python_and_js_exceptions_become_step_failures_with_the_message() {
    if !built() {
        return;
    }
    let env = Env::new();
    let msg = error_message(&tool(&env, &[], "hostile-py --do raise"));
    assert!(msg.contains("step hostile-py failed"), "{msg}");
    assert!(msg.contains("KeyError: 'missing'"), "{msg}");
    assert!(msg.contains("app.py"), "{msg}");
    let msg = error_message(&tool(
        &env,
        &[],
        &format!("{} | hostile-js --do raise", env.source(r#"[{"a":1}]"#)),
    ));
    assert!(msg.contains("step hostile-js failed"), "{msg}");
    assert!(msg.contains("TypeError"), "{msg}");
    let msg = error_message(&tool(&env, &[], "hostile-js --do throw-string"));
    assert!(msg.contains("plain string"), "{msg}");
}

#[test]
fn console_and_log_lines_reach_the_host_log() {
    if !built() {
        return;
    }
    let env = Env::new();
    let mut args: Vec<String> = vec!["run".into()];
    args.extend(steps_args());
    args.extend(hostile_grants(&env));
    args.push("hostile-js --do log | hostile-py --do log".into());
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = run(&env, &refs);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stderr.contains(r#"hello from js {"n":1}"#), "{r:?}");
    assert!(r.stderr.contains("hello from python"), "{r:?}");
}

/// `lobster step new` + `build` + `test` for one language, end to end.
fn new_build_test(lang: &str, name: &str, env_vars: &[(&str, PathBuf)], prepare: impl Fn(&Path)) {
    let env = Env::new();
    let r = env.run(&["step", "new", name, "--lang", lang]);
    assert_eq!(r.code, 0, "{r:?}");
    let dir = env.work_path(&name.replace('.', "-"));
    assert!(dir.join("README.md").is_file() && dir.join("examples.json").is_file());
    prepare(&dir);
    let mut c = command(&env, &["step", "build", dir.to_str().unwrap()]);
    for (k, v) in env_vars {
        c.env(k, v);
    }
    let r = finish(c.output().unwrap());
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains(&format!("name    {name}\n")), "{r:?}");
    assert!(r.stdout.contains("world   lobster:step"), "{r:?}");
    assert!(r.stdout.contains("digest  blake3:"), "{r:?}");
    let mut c = command(&env, &["step", "test", dir.to_str().unwrap()]);
    for (k, v) in env_vars {
        c.env(k, v);
    }
    let r = finish(c.output().unwrap());
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.ends_with("2 passed, 0 failed\n"), "{r:?}");
    // A second `new` into the same place is refused.
    let r = env.run(&["step", "new", name, "--lang", lang]);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("already exists"), "{r:?}");
}

#[test]
fn step_new_build_test_python() {
    if !built() {
        return;
    }
    let python = root().join("target/polyglot-tools/py/bin/python");
    new_build_test("python", "greet.py", &[("LOBSTER_PYTHON", python)], |_| {});
}

#[test]
fn step_new_build_test_js() {
    if !built() {
        return;
    }
    new_build_test("js", "greet.ts", &[], |dir| {
        // What the README says: `npm install` (the SDK is copied in, with its
        // pinned toolchain, from the local npm cache when warm).
        let st = Command::new("npm")
            .args([
                "install",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                "--prefer-offline",
            ])
            .current_dir(dir)
            .status()
            .unwrap();
        assert!(st.success());
    });
}

#[test]
fn step_new_build_test_rust() {
    if !built() {
        return;
    }
    // The example steps' target dir already holds the SDK's dependencies
    // built with the same profile; its lock file keeps the same versions.
    let target = root().join("examples/steps/target");
    new_build_test("rust", "greet.rs", &[("CARGO_TARGET_DIR", target)], |dir| {
        std::fs::copy(
            root().join("examples/steps/Cargo.lock"),
            dir.join("Cargo.lock"),
        )
        .unwrap();
    });
}

#[test]
fn step_new_refuses_bad_names_and_languages() {
    let env = Env::new();
    let r = env.run(&["step", "new", "../x", "--lang", "python"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("step name"), "{r:?}");
    let r = env.run(&["step", "new", "x", "--lang", "cobol"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains("--lang must be rust, python or js"),
        "{r:?}"
    );
    let r = env.run(&["step", "build", env.work_path("nothing").to_str().unwrap()]);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("lobster-step.toml"), "{r:?}");
}

#[test]
fn python_and_js_steps_keep_state_through_the_host() {
    if !built() {
        return;
    }
    let env = Env::new();
    for step in ["hostile-py", "hostile-js"] {
        let r = tool(&env, &[], &format!("{step} --do state"));
        assert_eq!(
            r.json()["output"],
            serde_json::json!([{"runs": 1}]),
            "{step}: {r:?}"
        );
    }
}

/// `tool-mode run` of `pipeline` with the guests on the step path, the
/// stubs' addresses in the environment, `hostile-py`'s dir and env grants,
/// and `grants`.
fn brokered(env: &Env, gw: &Stub, model: &Stub, grants: &[&str], pipeline: &str) -> Run {
    std::fs::create_dir_all(env.work_path("data")).unwrap();
    let mut args = vec!["run", "--mode", "tool", "--steps"];
    let dir = guests_dir().display().to_string();
    args.push(&dir);
    args.extend_from_slice(&["--allow-read", "data", "--allow-env", "GREETING"]);
    args.extend_from_slice(grants);
    args.push(pipeline);
    let mut c = command(env, &args);
    for k in ["OPENCLAW_TOKEN", "LOBSTER_POLICY"] {
        c.env_remove(k);
    }
    c.env("OPENCLAW_URL", &gw.url)
        .env("LOBSTER_LLM_PROVIDER", "openai")
        .env("LOBSTER_LLM_BASE_URL", format!("{}/v1", model.url))
        .env("LOBSTER_LLM_MODEL", "stub-violate-once");
    finish(c.output().unwrap())
}

/// The Python and TypeScript SDKs wrap `lobster:step@0.2.0`'s broker: a
/// described and granted tool call and model call reach the loopback stubs
/// (the model's schema-violating first answer is retried by the host); an
/// undescribed tool or a missing grant is refused and nothing is sent.
#[test]
fn python_and_typescript_steps_call_tools_and_models_through_the_broker() {
    if !built() {
        return;
    }
    // hostile-py's `--do broker` is the Python step (one Python component
    // fewer to build and compile); brokered-ts the TypeScript one.
    for step in ["hostile-py --do broker", "brokered-ts"] {
        let env = Env::new();
        let gw = Stub::start("gateway", None);
        let model = Stub::start("model", None);
        std::fs::write(env.work_path("mail.json"), r#"[{"subject":"Hello"}]"#).unwrap();
        let grant = ["--allow-tool", "echo", "--allow-llm"];
        // Granted: the tool's answer and the model's schema-checked answer.
        let r = brokered(
            &env,
            &gw,
            &model,
            &grant,
            &format!(
                "exec --json cat mail.json | {step} --tool echo --args '{{\"to\":\"x\"}}' --llm"
            ),
        );
        let v = r.json();
        assert_eq!(v["status"], "ok", "{step}: {r:?}");
        let out = v["output"].as_array().unwrap();
        assert_eq!(out.len(), 2, "{step}: {r:?}");
        assert_eq!(out[0]["args"], json!({"to": "x"}), "{step}: {r:?}");
        assert!(
            out[1]["intent"].is_string() && out[1]["draft"].is_string(),
            "{step}: {r:?}"
        );
        assert_eq!(gw.requests().len(), 1, "{step}");
        assert_eq!(gw.requests()[0]["body"]["tool"], "echo", "{step}");
        assert_eq!(model.requests().len(), 2, "{step}: violation, then retry");
        // A tool its describe does not ask for: refused at the call, the
        // step fails with the host's reason, nothing is sent.
        let r = brokered(&env, &gw, &model, &grant, &format!("{step} --tool message"));
        let msg = error_message(&r);
        assert!(
            msg.contains("called tool \"message\", which its describe does not ask for"),
            "{step}: {msg}"
        );
        assert_eq!(gw.requests().len(), 1, "{step}: a refused call was sent");
        // Described but not granted: the step does not run; nothing is sent.
        let r = brokered(
            &env,
            &gw,
            &model,
            &["--allow-llm"],
            &format!("{step} --tool echo"),
        );
        assert!(
            error_message(&r).contains("--allow-tool echo"),
            "{step}: {r:?}"
        );
        let r = brokered(
            &env,
            &gw,
            &model,
            &["--allow-tool", "echo"],
            &format!("{step} --llm"),
        );
        assert!(error_message(&r).contains("--allow-llm"), "{step}: {r:?}");
        assert_eq!(gw.requests().len(), 1, "{step}");
        assert_eq!(model.requests().len(), 2, "{step}");
    }
}
