//! Python and JavaScript steps in the same sandbox as Rust's: the deadline,
//! the memory cap, only the granted dirs and env, a thousand items in time,
//! fuel off under a trusted policy, and `check`, `bundle` and untrusted runs.

use super::{
    built, command, error_message, examples_dir, hostile_grants, mail, run, rust_examples_dir,
    steps_args, tool,
};
use crate::common::{finish, Env};

#[test]
fn a_python_loop_is_stopped_by_the_deadline() {
    if !built() {
        return;
    }
    let env = Env::new();
    let r = tool(&env, &["--timeout-ms", "300"], "hostile-py --do loop");
    let msg = error_message(&r);
    assert!(msg.contains("timed out"), "{r:?}");
}

#[test]
fn a_python_step_allocating_past_the_cap_gets_a_clear_error() {
    if !built() {
        return;
    }
    let env = Env::new();
    let r = tool(&env, &[], "hostile-py --do alloc");
    let msg = error_message(&r);
    assert!(msg.contains("hostile-py"), "{r:?}");
    assert!(msg.contains("memory"), "{r:?}");
}

#[test]
fn python_steps_get_only_the_granted_dirs_and_env() {
    if !built() {
        return;
    }
    let env = Env::new();
    std::fs::create_dir_all(env.work_path("data")).unwrap();
    std::fs::write(env.work_path("data/a.txt"), "hello").unwrap();
    // Without the grants its describe asks for, the plan refuses.
    let mut args: Vec<String> = vec!["run".into(), "--mode".into(), "tool".into()];
    args.extend(steps_args());
    args.push("hostile-py --do read".into());
    let r = run(&env, &args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(
        error_message(&r).contains("--allow-read DIR:/data"),
        "{r:?}"
    );
    let grants = hostile_grants(&env);
    let mut c = command(&env, &[]);
    let mut args: Vec<String> = vec!["run".into(), "--mode".into(), "tool".into()];
    args.extend(steps_args());
    args.extend(grants);
    args.push("hostile-py --do read".into());
    c.args(&args).env("GREETING", "hi").env("HOME", "/root");
    let r = finish(c.output().unwrap());
    assert_eq!(
        r.json()["output"],
        serde_json::json!([{"file": "a.txt", "text": "hello"}]),
        "{r:?}"
    );
    let mut c = command(&env, &[]);
    args.pop();
    args.push("hostile-py --do env".into());
    c.args(&args).env("GREETING", "hi").env("HOME", "/root");
    let r = finish(c.output().unwrap());
    assert_eq!(
        r.json()["output"],
        serde_json::json!([{"GREETING": "hi", "HOME": null}]),
        "{r:?}"
    );
    args.pop();
    args.push("hostile-py --do escape".into());
    let r = finish(command(&env, &[]).args(&args).output().unwrap());
    assert!(
        error_message(&r).contains("step hostile-py failed"),
        "{r:?}"
    );
}

#[test]
fn a_python_step_runs_a_thousand_items_within_the_default_limits() {
    if !built() {
        return;
    }
    let env = Env::new();
    let r = tool(
        &env,
        &[],
        "hostile-py --do count --n 1000 | hostile-js --do count",
    );
    let v = r.json();
    assert_eq!(v["status"], "ok", "{r:?}");
    assert_eq!(v["output"].as_array().unwrap().len(), 1000);
    assert_eq!(v["output"][999]["words"], 2);
}

#[test]
fn a_trusted_policy_can_turn_fuel_off_leaving_the_deadline() {
    if !built() {
        return;
    }
    let env = Env::new();
    // With fuel, a loop runs out of it long before a 20 s deadline.
    let msg = error_message(&tool(
        &env,
        &["--timeout-ms", "20000"],
        "hostile-js --do loop",
    ));
    assert!(msg.contains("ran out of fuel"), "{msg}");
    // Without fuel (a trusted policy), the deadline stops it.
    std::fs::write(
        env.work_path("p.toml"),
        "trust = \"trusted\"\nfuel = false\n",
    )
    .unwrap();
    let msg = error_message(&tool(
        &env,
        &["--policy", "p.toml", "--timeout-ms", "1500"],
        "hostile-js --do loop",
    ));
    assert!(msg.contains("timed out"), "{msg}");
    // An untrusted policy may not.
    std::fs::write(
        env.work_path("u.toml"),
        "trust = \"untrusted\"\nfuel = false\n",
    )
    .unwrap();
    let r = tool(&env, &["--policy", "u.toml"], "hostile-js --do count");
    assert!(
        error_message(&r).contains("fuel = false needs trust"),
        "{r:?}"
    );
}

/// Every componentize-py component imports `wasi:sockets` (CPython links its
/// `socket` module). The host links sockets with every use refused, so a
/// Python step passes `lobster check`, builds into a bundle that verifies,
/// and runs under the untrusted policy.
#[test]
fn a_python_step_passes_check_bundle_and_untrusted_runs() {
    if !built() {
        return;
    }
    let env = Env::new();
    mail(&env);
    let py = examples_dir().join("inbox-categorize-py.wasm");
    let r = run(&env, &["check", py.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{r:?}");
    let src = env.work_path("src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::copy(&py, src.join("inbox-categorize-py.wasm")).unwrap();
    let r = run(&env, &["bundle", "build", "src", "--out", "py.bundle"]);
    assert_eq!(r.code, 0, "{r:?}");
    let r = run(&env, &["bundle", "verify", "py.bundle"]);
    assert_eq!(r.code, 0, "{r:?}");
    let r = run(&env, &["check", "py.bundle"]);
    assert_eq!(r.code, 0, "{r:?}");

    let steps = env.work_path("steps");
    std::fs::create_dir_all(&steps).unwrap();
    std::fs::copy(&py, steps.join("inbox-categorize-py.wasm")).unwrap();
    std::fs::copy(
        rust_examples_dir().join("inbox_list.wasm"),
        steps.join("inbox_list.wasm"),
    )
    .unwrap();
    std::fs::write(
        env.work_path("p.toml"),
        "trust = \"untrusted\"\nroots = [\"mail\"]\n",
    )
    .unwrap();
    let r = run(
        &env,
        &[
            "run",
            "--mode",
            "tool",
            "--policy",
            "p.toml",
            "--steps",
            "steps",
            "--allow-read",
            "mail",
            "inbox.list | inbox.categorize-py | pick id,category",
        ],
    );
    let v = r.json();
    assert_eq!(v["status"], "ok", "{r:?}");
    assert_eq!(v["output"].as_array().map(Vec::len), Some(10), "{r:?}");
}
