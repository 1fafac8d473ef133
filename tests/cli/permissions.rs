//! What a WebAssembly step gets: the intersection of the run's grants, the
//! workflow's `permissions:`, the step's own `permissions:` and what its
//! component's `describe` asks for — in plain pipelines, in workflow
//! `pipeline:` steps, per step, and in sub-workflows.

use crate::common::{err_message, finish, test_guest, write, Env, Run};
use serde_json::{json, Value};

/// A work directory with `mail/`, `data/secret.txt` and the `capgrab`,
/// `probe` and `hostile` guests in `steps/`. `None`: guests not built.
fn setup() -> Option<Env> {
    let env = Env::new();
    std::fs::create_dir_all(env.work_path("steps")).unwrap();
    for name in ["capgrab", "probe", "hostile"] {
        std::fs::copy(
            test_guest(name)?,
            env.work_path(&format!("steps/{name}.wasm")),
        )
        .unwrap();
    }
    std::fs::create_dir_all(env.work_path("mail")).unwrap();
    write(&env, "data/secret.txt", "top secret");
    Some(env)
}

/// Run in tool mode granting more than capgrab describes: write to `mail`
/// and `data`, and the variables `API_TOKEN` and `OTHER`.
fn run_wide(env: &Env, tail: &[&str]) -> Run {
    let mut args = vec![
        "run",
        "--mode",
        "tool",
        "--allow-write",
        "mail",
        "--allow-write",
        "data",
        "--allow-env",
        "API_TOKEN",
        "--allow-env",
        "OTHER",
    ];
    args.extend_from_slice(tail);
    finish(
        env.command(&args)
            .env("API_TOKEN", "t")
            .env("OTHER", "o")
            .output()
            .unwrap(),
    )
}

/// Write `text` to `wf.lobster` and run it in tool mode with `extra` flags.
fn run_wf(env: &Env, text: &str, extra: &[&str]) -> Run {
    write(env, "wf.lobster", text);
    let mut args = vec!["run", "--mode", "tool"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--file", "wf.lobster"]);
    env.run(&args)
}

fn output(r: &Run) -> Value {
    let doc = r.json();
    assert_eq!(doc["ok"], true, "{r:?}");
    doc["output"].clone()
}

/// What capgrab reports when it sees exactly what it describes.
fn described() -> Value {
    json!({"API_TOKEN": "t", "OTHER": null, "data_readable": false, "mail_writable": true})
}

#[test]
fn pipeline_stages_get_only_what_their_describe_asks_for() {
    let Some(env) = setup() else { return };
    // capgrab asks for /mail (read-write) and API_TOKEN: it sees neither
    // /data nor OTHER although the run grants both.
    let r = run_wide(&env, &["capgrab see"]);
    assert_eq!(output(&r), json!([described()]));
    // probe asks for nothing, so it gets nothing of the run's grants.
    let r = run_wide(&env, &["probe env API_TOKEN"]);
    assert_eq!(output(&r), json!([{"value": null}]));
    let r = run_wide(&env, &["probe read /data/secret.txt"]);
    assert_eq!(r.code, 1, "{r:?}");
    let r = run_wide(&env, &["probe world"]);
    assert_eq!(output(&r)[0]["env"], json!([]));
    // The run grants mail, but probe describes no directory: not there.
    write(&env, "mail/x", "hi");
    let r = run_wide(&env, &["probe read /mail/x"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(err_message(&r).contains("step probe"), "{r:?}");
}

#[test]
fn workflow_pipeline_steps_are_narrowed_to_describe_too() {
    let Some(env) = setup() else { return };
    write(
        &env,
        "wf.lobster",
        "permissions:\n  write: [mail, data]\n  env: [API_TOKEN, OTHER]\nsteps:\n  - id: see\n    pipeline: capgrab see\n",
    );
    let r = run_wide(&env, &["--file", "wf.lobster"]);
    assert_eq!(output(&r), json!([described()]));
}

#[test]
fn a_steps_own_permissions_narrow_it_before_anything_runs() {
    let Some(env) = setup() else { return };
    let wf = |own: &str| {
        format!(
            "permissions:\n  write: [mail, data]\n  env: [API_TOKEN, OTHER]\nsteps:\n  - id: first\n    run: touch ran\n  - id: see\n    pipeline: capgrab see\n{own}"
        )
    };
    // Within the workflow's block and what capgrab asks for: it runs.
    write(
        &env,
        "wf.lobster",
        &wf("    permissions:\n      write: [mail]\n      env: [API_TOKEN]\n"),
    );
    let r = run_wide(&env, &["--file", "wf.lobster"]);
    assert_eq!(output(&r), json!([described()]));
    std::fs::remove_file(env.work_path("ran")).unwrap();
    // Read-only mail for this step: capgrab (which asks to write) is refused
    // when the workflow is planned, so the first step never runs either.
    write(
        &env,
        "wf.lobster",
        &wf("    permissions:\n      read: [mail]\n      env: [API_TOKEN]\n"),
    );
    let r = run_wide(&env, &["--file", "wf.lobster"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(err_message(&r).contains("write access to /mail"), "{r:?}");
    assert!(!env.work_path("ran").exists());
    // No env for this step: refused for API_TOKEN.
    write(
        &env,
        "wf.lobster",
        &wf("    permissions:\n      write: [mail]\n"),
    );
    let r = run_wide(&env, &["--file", "wf.lobster"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(err_message(&r).contains("API_TOKEN"), "{r:?}");
    assert!(!env.work_path("ran").exists());
}

#[test]
fn a_steps_own_limits_apply_to_that_step_only() {
    let Some(env) = setup() else { return };
    let r = run_wf(&env, "steps:\n  - id: calm\n    pipeline: probe args\n    permissions:\n      limits: { fuel: 100000000 }\n  - id: spin\n    pipeline: hostile loop\n    permissions:\n      limits: { fuel: 1000000 }\n", &[]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        err_message(&r).contains("step hostile ran out of fuel (limit 1000000)"),
        "{r:?}"
    );
}

#[test]
fn step_host_exec_false_refuses_that_steps_host_commands_at_plan_time() {
    let env = Env::new();
    let r = run_wf(&env, "steps:\n  - id: ok\n    run: touch ran\n  - id: sealed\n    pipeline: exec --shell 'touch sealed'\n    permissions:\n      host_exec: false\n", &[]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        err_message(&r).contains(
            "wf.lobster:4:5: step sealed stage 1 (exec) runs host processes, which the step's permissions forbid (host_exec: false)"
        ),
        "{r:?}"
    );
    assert!(!env.work_path("ran").exists());
    assert!(!env.work_path("sealed").exists());
}

#[test]
fn a_step_block_wider_than_the_workflows_is_refused_with_each_excess() {
    let env = Env::new();
    write(
        &env,
        "wf.lobster",
        "permissions:\n  read: [data]\n  write: [out]\n  env: [LANG]\n  host_exec: false\n  limits: { fuel: 1000 }\nsteps:\n  - id: greedy\n    pipeline: head\n    permissions:\n      read: [data/sub, secrets]\n      write: [data]\n      env: [LANG, API_TOKEN]\n      host_exec: true\n      tools: [git]\n      limits: { fuel: 5000 }\n",
    );
    let r = env.run(&["check", "wf.lobster"]);
    assert_eq!(r.code, 1, "{r:?}");
    for excess in [
        "wf.lobster:11: Workflow step greedy permissions: read \"secrets\" is not inside the workflow's permissions (read or write: [data, out])",
        "wf.lobster:12: Workflow step greedy permissions: write \"data\" is not inside the workflow's permissions.write [out]",
        "wf.lobster:13: Workflow step greedy permissions: env \"API_TOKEN\" is not in the workflow's permissions.env [LANG]",
        "wf.lobster:14: Workflow step greedy permissions: host_exec: true, but the workflow's permissions say host_exec: false",
        "wf.lobster:15: Workflow step greedy permissions: tools \"git\" is not in the workflow's permissions.tools []",
        "wf.lobster:16: Workflow step greedy permissions: limits.fuel 5000 is above the workflow's 1000",
    ] {
        assert!(r.stdout.contains(excess), "missing {excess:?} in\n{}", r.stdout);
    }
    assert!(!r.stdout.contains("data/sub"), "{}", r.stdout);
    assert!(
        r.stdout.contains("1 file checked, 6 problems"),
        "{}",
        r.stdout
    );
    // Spelling does not matter: `.` holds everything, `./data/` is `data`.
    write(
        &env,
        "ok.lobster",
        "permissions:\n  read: [.]\nsteps:\n  - id: a\n    pipeline: head\n    permissions:\n      read: [./data/]\n",
    );
    let ok = env.run(&["check", "ok.lobster"]);
    assert_eq!(ok.code, 0, "{ok:?}");
    // The run refuses the same file before anything runs.
    let r = env.run(&["run", "--mode", "tool", "--file", "wf.lobster"]);
    assert_eq!(r.code, 2, "{r:?}");
}

#[test]
fn a_sub_workflows_permissions_apply_when_called() {
    let Some(env) = setup() else { return };
    // The child forbids host processes: refused from the parent's plan.
    write(
        &env,
        "child.lobster",
        "permissions:\n  host_exec: false\nsteps:\n  - id: sh\n    run: touch child-ran\n",
    );
    write(
        &env,
        "parent.lobster",
        "steps:\n  - id: first\n    run: touch ran\n  - id: call\n    workflow: child.lobster\n",
    );
    let r = env.run(&["run", "--mode", "tool", "--file", "parent.lobster"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        err_message(&r).contains("child.lobster:4:5: step sh runs a host shell command, which the workflow's permissions forbid"),
        "{r:?}"
    );
    assert!(!env.work_path("ran").exists());
    // The child's block narrows what its steps get below the parent's.
    write(
        &env,
        "child.lobster",
        "permissions:\n  write: [mail]\nsteps:\n  - id: see\n    pipeline: capgrab see\n",
    );
    write(
        &env,
        "parent.lobster",
        "steps:\n  - id: call\n    workflow: child.lobster\n",
    );
    let r = run_wide(&env, &["--file", "parent.lobster"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(err_message(&r).contains("API_TOKEN"), "{r:?}");
}

#[test]
fn templated_pipelines_are_checked_before_anything_runs() {
    let Some(env) = setup() else { return };
    // A wasm stage in a templated pipeline is still preflighted at plan
    // time: capgrab's missing grants refuse the run before `first` runs.
    let r = run_wf(&env, "args:\n  tag: { default: x }\nsteps:\n  - id: first\n    run: touch ran\n  - id: see\n    pipeline: capgrab see ${tag}\n", &[]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(err_message(&r).contains("write access to /mail"), "{r:?}");
    assert!(!env.work_path("ran").exists());
    // A stage name that comes from a template cannot be checked before it
    // runs, so where host processes are forbidden it is refused outright.
    write(&env, "policy.toml", "trust = \"untrusted\"\n");
    let r = run_wf(&env, "args:\n  tool: { default: exec }\nsteps:\n  - id: first\n    pipeline: head\n  - id: sneaky\n    pipeline: ${tool} --shell 'touch sneaky'\n", &["--policy", "policy.toml"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        err_message(&r).contains(
            "step sneaky stage 1 takes its command name from a template (${tool}), which the untrusted policy forbids"
        ),
        "{r:?}"
    );
    assert!(!env.work_path("sneaky").exists());
}

#[test]
fn declared_timeouts_bound_host_steps_too() {
    let env = Env::new();
    // The step's ceiling is below the workflow's and below its timeout_ms.
    let r = run_wf(&env, "permissions:\n  limits: { timeout_ms: 5000 }\nsteps:\n  - id: nap\n    run: sleep 5\n    timeout_ms: 4000\n    permissions:\n      limits: { timeout_ms: 300 }\n", &[]);
    assert_eq!(r.code, 1, "{r:?}");
    assert_eq!(err_message(&r), "Step 'nap' timed out after 300ms");
    // Without a step block, the workflow's ceiling applies.
    let r = run_wf(&env, "permissions:\n  limits: { timeout_ms: 400 }\nsteps:\n  - id: nap\n    pipeline: exec --shell 'sleep 5'\n", &[]);
    assert_eq!(r.code, 1, "{r:?}");
    assert_eq!(err_message(&r), "Step 'nap' timed out after 400ms");
}

#[test]
fn declared_permissions_beyond_the_policy_are_refused_with_each_excess() {
    let env = Env::new();
    write(
        &env,
        "policy.toml",
        "trust = \"untrusted\"\nroots = [\"data\"]\nenv = [\"LANG\"]\n[max]\nfuel = 1000000000\n",
    );
    write(
        &env,
        "wf.lobster",
        "permissions:\n  read: [data]\n  write: [secrets]\n  env: [LANG, API_TOKEN]\n  host_exec: true\n  limits: { fuel: 5000000000 }\nsteps:\n  - id: a\n    pipeline: head\n    permissions:\n      read: [data/sub]\n",
    );
    let excesses = [
        "wf.lobster:1:1: permissions.write secrets is outside the allowed roots [data]",
        "wf.lobster:1:1: permissions.env API_TOKEN is not among the allowed variables [LANG]",
        "wf.lobster:1:1: permissions.host_exec: true asks for host processes, which the untrusted policy forbids",
        "wf.lobster:1:1: permissions.limits.fuel 5000000000 is above the maximum 1000000000",
    ];
    let r = env.run(&["run", "--mode=tool", "--policy=policy.toml", "wf.lobster"]);
    assert_eq!(r.code, 1, "{r:?}");
    let msg = err_message(&r);
    for excess in excesses {
        assert!(msg.contains(excess), "missing {excess:?} in {msg}");
    }
    assert!(!msg.contains("data/sub"), "{msg}");
    // `lobster check --policy` reports the same, one finding each.
    let r = env.run(&["check", "--policy", "policy.toml", "wf.lobster"]);
    assert_eq!(r.code, 1, "{r:?}");
    for excess in excesses {
        let line = excess.replacen(":1:1:", ":1:", 1);
        assert!(
            r.stdout.contains(&line),
            "missing {line:?} in\n{}",
            r.stdout
        );
    }
    assert!(r.stdout.contains("4 problems"), "{}", r.stdout);
    // Without a policy the same file is fine.
    let r = env.run(&["check", "wf.lobster"]);
    assert_eq!(r.code, 0, "{r:?}");
    // LOBSTER_POLICY works for check as for run.
    let r = finish(
        env.command(&["check", "wf.lobster"])
            .env("LOBSTER_POLICY", "policy.toml")
            .output()
            .unwrap(),
    );
    assert_eq!(r.code, 1, "{r:?}");
}

#[test]
fn check_reports_host_steps_a_workflow_forbids_itself() {
    let env = Env::new();
    write(
        &env,
        "wf.lobster",
        "permissions:\n  host_exec: false\nsteps:\n  - id: sh\n    run: echo hi\n",
    );
    let r = env.run(&["check", "wf.lobster"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stdout.contains("wf.lobster:4: step sh runs a host shell command, which the workflow's permissions forbid (host_exec: false)"),
        "{}",
        r.stdout
    );
    // The same in a sub-workflow that also names a step on the step path.
    write(
        &env,
        "child.lobster",
        "permissions:\n  host_exec: false\nsteps:\n  - id: see\n    pipeline: capgrab see\n  - id: sh\n    run: echo hi\n",
    );
    write(
        &env,
        "parent.lobster",
        "steps:\n  - id: call\n    workflow: child.lobster\n",
    );
    let r = env.run(&["check", "parent.lobster"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stdout
            .contains("child.lobster:6: step sh runs a host shell command"),
        "{}",
        r.stdout
    );
}

#[test]
fn dry_run_shows_permissions_and_refuses_what_a_run_would() {
    let Some(env) = setup() else { return };
    let wf = "permissions:\n  write: [mail]\n  env: [API_TOKEN]\n  host_exec: false\nsteps:\n  - id: see\n    pipeline: capgrab see\n    permissions:\n      write: [mail]\n      env: [API_TOKEN]\n      limits: { timeout_ms: 2000 }\n";
    write(&env, "wf.lobster", wf);
    let r = run_wide(&env, &["--dry-run", "--file", "wf.lobster"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        r.stderr
            .contains("  permissions: read [], write [mail], env [API_TOKEN], host_exec: false\n"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains(
            "     permissions: read [], write [mail], env [API_TOKEN], limits: timeout_ms 2000\n"
        ),
        "{}",
        r.stderr
    );
    // The workflow's block leaves out API_TOKEN: the dry run refuses, as a
    // run would, and names the capability.
    write(
        &env,
        "wf.lobster",
        &wf.replacen("  env: [API_TOKEN]\n  host_exec", "  host_exec", 1)
            .replace("      env: [API_TOKEN]\n", ""),
    );
    let r = run_wide(&env, &["--dry-run", "--file", "wf.lobster"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains("API_TOKEN") || r.stdout.contains("API_TOKEN"),
        "{r:?}"
    );
}

#[test]
fn an_approval_shows_the_permissions_of_the_steps_after_it() {
    let env = Env::new();
    let r = run_wf(
        &env,
        "steps:\n  - id: review\n    approval: Go?\n  - id: apply\n    run: echo applied\n    permissions:\n      read: [mail]\n      limits: { timeout_ms: 2000 }\n",
        &[],
    );
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(
        r.json()["requiresApproval"]["capabilities"],
        json!([
            "step apply: within its permissions: read [mail], write [], env [], limits: timeout_ms 2000",
            "step apply: runs a host shell command"
        ])
    );
}

#[test]
fn malformed_permission_blocks_are_named_at_their_keys() {
    let env = Env::new();
    write(
        &env,
        "wf.lobster",
        "permissions:\n  read: mail\n  write: [/etc, ../up, \"\"]\n  host_exec: sometimes\n  limits: { fuel: -1, memory: 5 }\nsteps:\n  - id: a\n    pipeline: head\n    permissions: [read]\n",
    );
    let r = env.run(&["check", "wf.lobster"]);
    assert_eq!(r.code, 1, "{r:?}");
    for problem in [
        "wf.lobster:2: Workflow permissions: read must be a list of strings",
        "wf.lobster:3: Workflow permissions: directory \"/etc\" must be relative to the working directory, without `..`",
        "wf.lobster:3: Workflow permissions: directory \"../up\" must be relative to the working directory, without `..`",
        "wf.lobster:3: Workflow permissions: directory \"\" must be relative to the working directory, without `..`",
        "wf.lobster:4: Workflow permissions: host_exec must be true or false",
        "wf.lobster:5: Workflow permissions: limits.fuel must be a positive integer",
        "wf.lobster:5: unknown field `memory` in Workflow permissions.limits",
        "wf.lobster:9: Workflow step a permissions must be an object",
    ] {
        assert!(r.stdout.contains(problem), "missing {problem:?} in\n{}", r.stdout);
    }
    assert!(r.stdout.contains("8 problems"), "{}", r.stdout);
}

#[test]
fn an_unparsable_templated_pipeline_is_refused_where_host_processes_are_forbidden() {
    let env = Env::new();
    // The template hides the unbalanced quote from validation; under
    // host_exec: false nothing may run that cannot be checked first.
    let r = run_wf(
        &env,
        "args:\n  x: { default: a }\npermissions:\n  host_exec: false\nsteps:\n  - id: odd\n    pipeline: \"head --n '${x}\"\n",
        &[],
    );
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        err_message(&r).contains("step odd has a pipeline that cannot be checked before it runs, which the workflow's permissions forbid (host_exec: false)"),
        "{r:?}"
    );
}

#[test]
fn check_names_a_policy_file_it_cannot_read() {
    let env = Env::new();
    write(
        &env,
        "wf.lobster",
        "steps:\n  - id: a\n    pipeline: head\n",
    );
    let r = env.run(&["check", "--policy", "nope.toml", "wf.lobster"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("cannot read policy file"), "{r:?}");
    assert!(r.stderr.contains("nope.toml"), "{r:?}");
}

#[test]
fn a_pipeline_step_resumed_after_ask_keeps_its_permissions() {
    let Some(env) = setup() else { return };
    let r = run_wf(
        &env,
        "steps:\n  - id: spin\n    pipeline: ask --prompt 'Go?' | hostile loop\n    permissions:\n      limits: { fuel: 1000000 }\n",
        &[],
    );
    let doc = r.json();
    assert_eq!(doc["status"], "needs_input", "{r:?}");
    let token = crate::common::token_of(&doc);
    // The rest of the pipeline runs in the resuming process, still under
    // the step's own fuel ceiling (the default is 10^10).
    let r = env.run(&[
        "resume",
        "--token",
        &token,
        "--response-json",
        "{\"decision\": \"approve\"}",
    ]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        err_message(&r).contains("step hostile ran out of fuel (limit 1000000)"),
        "{r:?}"
    );
}
