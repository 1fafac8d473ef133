//! The store on the command line: `--store` / `LOBSTER_STORE`, `lobster
//! store migrate`, and the resume protocol across processes against
//! PostgreSQL (`LOBSTER_TEST_PG_URL`, e.g. `export LOBSTER_TEST_PG_URL=$(bash
//! tests/pg.sh start)`; those tests fail under `CI=true` without it and skip
//! loudly elsewhere). The race runs against both stores.

use crate::common::{finish, on_both_stores, read, token_of, Env};
use crate::own_pg::pg_url;
use crate::psql::psql;
use serde_json::json;

/// The newest schema version: one SQL file per migration.
fn latest_schema() -> String {
    let n = std::fs::read_dir(crate::common::root().join("runtime/migrations"))
        .unwrap()
        .count();
    format!("schema version {n}")
}

/// `n` concurrent `lobster resume` processes on one token, with the store at
/// `store` (`None`: files): exactly one wins, the step after the gate runs
/// once, and no state is left.
pub fn race_resumers(store: Option<&str>, n: usize) {
    let env = Env::with_store(store);
    let effect = env.work_path("effect");
    let v = crate::resume::paused(&env, &effect);
    let token = token_of(&v);
    let children: Vec<_> = (0..n)
        .map(|_| env.spawn(&["resume", "--token", &token, "--approve", "yes"]))
        .collect();
    let runs: Vec<_> = children
        .into_iter()
        .map(|c| finish(c.wait_with_output().unwrap()))
        .collect();
    let winners = runs.iter().filter(|r| r.code == 0).count();
    assert_eq!(winners, 1, "{runs:#?}");
    for loser in runs.iter().filter(|r| r.code != 0) {
        // While the winner runs, a loser is told so (by its interrupted-run
        // record, or the claimed row); after it finished, the state is gone.
        let msg = loser.json()["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(
            msg == "Pipeline resume state not found"
                || msg.starts_with("this run is being resumed right now (after approval at stage"),
            "{loser:?}"
        );
    }
    assert_eq!(read(&effect), "x", "the effect ran once");
    assert!(env.state_files().is_empty(), "{:?}", env.state_files());
    let again = env.run(&["resume", "--token", &token, "--approve", "yes"]);
    assert_eq!(
        again.json()["error"]["message"],
        "Pipeline resume state not found"
    );
}

on_both_stores!(
    race_resumers(50) =>
    fifty_concurrent_resumers_one_winner_files,
    fifty_concurrent_resumers_one_winner_postgres
);

#[test]
fn paused_in_one_process_resumed_in_another_with_its_own_state_dir() {
    let Some(url) = pg_url() else { return };
    // Two "nodes": separate local directories, one database.
    let a = Env::with_store(Some(&url));
    let b = Env::with_store(Some(&url));
    let effect = a.work_path("effect");
    let v = crate::resume::paused(&a, &effect);
    assert!(!effect.exists());
    // Nothing of the paused run is on node A's disk.
    assert!(a.state_files().is_empty(), "{:?}", a.state_files());
    let id = v["requiresApproval"]["approvalId"].as_str().unwrap();
    let r = b.run(&["resume", "--id", id, "--approve", "yes"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.json()["output"], json!(["ok"]));
    assert_eq!(read(&effect), "x");
    // Spent everywhere: on A by token, on B by id.
    let again = a.run(&["resume", "--token", &token_of(&v), "--approve", "yes"]);
    assert_eq!(
        again.json()["error"]["message"],
        "Pipeline resume state not found"
    );
    let again = b.run(&["resume", "--id", id, "--approve", "yes"]);
    assert_eq!(again.code, 2, "{again:?}");
    // The global flag picks the same store as the variable.
    let files = Env::new();
    let r = files.run(&["--store", &url, "resume", "--id", id, "--approve", "no"]);
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not found or expired"),
        "{r:?}"
    );
}

#[test]
fn store_migrate_reports_the_schema() {
    let Some(url) = pg_url() else { return };
    let env = Env::new();
    let r = env.run(&["--store", &url, "store", "migrate"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        r.stdout.contains("PostgreSQL at ") && r.stdout.contains(&latest_schema()),
        "{r:?}"
    );
    assert!(r.stdout.contains("0001_init"), "{r:?}");
    // Again: nothing new to apply.
    let r = env.run(&["--store", &url, "store", "migrate"]);
    assert!(r.stdout.contains("(up to date)"), "{r:?}");
}

#[test]
fn files_store_migrate_and_store_flag_errors() {
    let env = Env::new();
    let r = env.run(&["store", "migrate"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("nothing to migrate"), "{r:?}");
    let r = env.run(&["--store"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("--store requires a URL"), "{r:?}");
    let r = env.run(&["store", "frobnicate"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("unknown store subcommand"), "{r:?}");
    let r = env.run(&[
        "--store",
        "mysql://u:pw@h/db",
        "run",
        "--mode",
        "tool",
        "json",
    ]);
    assert_eq!(r.code, 2, "{r:?}");
    let msg = r.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(
        msg.starts_with("unknown store \"mysql://u:***@h/db\""),
        "{msg}"
    );
    assert!(env
        .run(&["help", "store"])
        .stdout
        .contains("lobster store migrate"));
}

#[test]
fn an_unreachable_database_refuses_the_run_before_any_step() {
    let env = Env::with_store(Some("postgres://app:s3cret@127.0.0.1:1/lobster"));
    let effect = env.work_path("before-gate");
    let pipeline = format!(
        "exec --shell 'touch {}; echo [1]' --json | approve --prompt ok?",
        effect.display()
    );
    let r = env.tool(&pipeline);
    assert_eq!(r.code, 1, "{r:?}");
    let msg = r.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(
        msg.starts_with(
            "cannot connect to the PostgreSQL store at postgres://app:***@127.0.0.1:1/lobster"
        ),
        "{msg}"
    );
    assert!(msg.contains("LOBSTER_STORE"), "{msg}");
    assert!(!r.stdout.contains("s3cret") && !r.stderr.contains("s3cret"));
    assert!(!effect.exists(), "no step ran");
    assert!(env.state_files().is_empty(), "{:?}", env.state_files());
}

#[test]
fn a_killed_resumer_leaves_the_run_interrupted_once_its_lease_expires() {
    let Some(url) = pg_url() else { return };
    let env = Env::with_store(Some(&url));
    let started = env.work_path("started");
    let pipeline = format!(
        "exec --json --shell 'echo [1]' | approve --prompt ok? | exec --shell 'echo $$ > {}; exec sleep 30'",
        started.display()
    );
    let v = env.tool(&pipeline).json();
    assert_eq!(v["status"], "needs_approval", "{v}");
    let token = token_of(&v);
    let mut resumer = env
        .command(&["resume", "--token", &token, "--approve", "yes"])
        .env("LOBSTER_STORE_LEASE_MS", "1000")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while read_or_empty(&started).trim().is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the step never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // Two leases later, the heartbeat still holds the claim.
    std::thread::sleep(std::time::Duration::from_millis(2000));
    let busy = env.run(&["resume", "--token", &token, "--approve", "yes"]);
    let msg = busy.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        msg.starts_with("this run is being resumed right now (after approval at stage"),
        "{msg}"
    );
    // kill -9: no release, no more heartbeats.
    resumer.kill().unwrap();
    resumer.wait().unwrap();
    let step: i32 = read(&started).trim().parse().unwrap();
    // SAFETY: signalling the orphaned `sleep` the killed run started.
    unsafe { libc::kill(step, libc::SIGKILL) };
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let after = env.run(&["resume", "--token", &token, "--approve", "yes"]);
    assert_eq!(after.code, 1, "{after:?}");
    let msg = after.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        msg.starts_with("this run was interrupted after approval at stage")
            && msg.contains("its lease expired"),
        "{msg}"
    );
    // A bad lease setting is refused, naming the variable.
    let r = env
        .command(&["resume", "--token", &token, "--approve", "yes"])
        .env("LOBSTER_STORE_LEASE_MS", "10")
        .output()
        .unwrap();
    let r = finish(r);
    assert!(r.stdout.contains("LOBSTER_STORE_LEASE_MS must be"), "{r:?}");
}

fn read_or_empty(path: &std::path::Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

#[test]
fn doctor_checks_the_database_store() {
    // Down: doctor says so, naming the database (password hidden) and the fix.
    let down = Env::with_store(Some("postgres://app:s3cret@127.0.0.1:1/lobster"));
    let r = down.run(&["doctor"]);
    let msg = r.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(
        msg.starts_with(
            "cannot connect to the PostgreSQL store at postgres://app:***@127.0.0.1:1/lobster"
        ) && msg.contains("start the database"),
        "{msg}"
    );
    assert!(!r.stdout.contains("s3cret"));
    let Some(url) = pg_url() else { return };
    let r = Env::with_store(Some(&url)).run(&["doctor"]);
    let checks = r.json()["output"][0]["checks"].clone();
    let store = checks
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "state store")
        .unwrap_or_else(|| panic!("{r:?}"))
        .clone();
    assert_eq!(store["ok"], true, "{store}");
    assert!(
        store["detail"].as_str().unwrap().contains(&latest_schema()),
        "{store}"
    );
}

/// Pause a run whose only step after the gate is a slow pure one (a plain
/// command component granted nothing), start its resume, SIGKILL that
/// resume once it holds the claim, and resume the token again: every step
/// after the gate is pure, so the run is claimed again (PostgreSQL: once the
/// dead claimer's lease ends) and finishes — exactly once, the second time.
fn a_killed_pure_resume_runs_again(store: Option<&str>) {
    let Some(echo) = crate::common::test_guest("cmd-echo") else {
        return;
    };
    let env = Env::with_store(store);
    std::fs::create_dir(env.work_path("steps")).unwrap();
    std::fs::copy(echo, env.work_path("steps/cmd-echo.wasm")).unwrap();
    let v = env
        .run(&[
            "run",
            "--mode",
            "tool",
            "--allow-env",
            "CMD_ECHO_SLEEP_MS",
            "exec --json --shell 'echo [7]' | approve --prompt ok | cmd-echo sleep",
        ])
        .json();
    assert_eq!(v["status"], "needs_approval", "{v}");
    let token = token_of(&v);
    // The resume that is killed holds a 1 s lease, so it ends soon after;
    // the others hold a long one, which a loaded machine cannot let lapse
    // between two heartbeats.
    let resume_leased = |sleep_ms: &str, lease_ms: &str| {
        let mut c = env.command(&["resume", "--token", &token, "--approve", "yes"]);
        c.env("LOBSTER_STORE_LEASE_MS", lease_ms)
            .env("CMD_ECHO_SLEEP_MS", sleep_ms);
        c
    };
    let resume = |sleep_ms: &str| resume_leased(sleep_ms, "30000");
    let mut child = resume_leased("60000", "1000")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Claimed: the files store's interrupted record exists, or the row names
    // this process as its claimer.
    let pid = child.id();
    let start = std::time::Instant::now();
    while !match store {
        None => env
            .state_files()
            .iter()
            .any(|n| n.starts_with("interrupted_pipeline_resume_")),
        Some(url) => psql(url, &format!(
            "SELECT count(*) FROM lobster_runs WHERE status = 'resuming' AND claimed_by LIKE '% pid {pid}'"
        )) == "1",
    } {
        assert!(start.elapsed().as_secs() < 30, "the resume never claimed the run");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // While the claimer lives, the run is its own.
    let r = finish(resume("0").output().unwrap());
    assert_eq!(r.code, 1, "{r:?}");
    let msg = r.json()["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        msg.starts_with("this run is being resumed right now"),
        "{msg}"
    );
    child.kill().unwrap(); // SIGKILL mid-step: nothing of ours runs
    child.wait().unwrap();
    if store.is_some() {
        std::thread::sleep(std::time::Duration::from_millis(1300)); // the lease ends
    }
    // The second resume runs the same pure step (told not to wait) to its end.
    let r = finish(resume("0").output().unwrap());
    let v = r.json();
    assert_eq!(v["status"], "ok", "{r:?}");
    assert_eq!(v["output"], json!([7]), "{v}");
    // Exactly once: the token is spent now, whatever the store.
    let again = finish(resume("0").output().unwrap());
    assert_eq!(again.code, 1, "{again:?}");
    let left: Vec<_> = env
        .state_files()
        .into_iter()
        .filter(|n| n != "cache") // compiled components
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

on_both_stores!(
    a_killed_pure_resume_runs_again() =>
    a_killed_pure_resume_runs_again_files,
    a_killed_pure_resume_runs_again_postgres
);

/// Whether the one paused workflow state of `env` says its run may run again.
fn paused_rerun_safe(env: &Env, workflow: &str) -> bool {
    paused_rerun_safe_with(env, workflow, &[])
}

/// [`paused_rerun_safe`] with `vars` set.
fn paused_rerun_safe_with(env: &Env, workflow: &str, vars: &[(&str, &str)]) -> bool {
    let wf = crate::common::write(env, "w.lobster", workflow);
    let mut c = env.command(&["run", "--mode", "tool", "--file", wf.to_str().unwrap()]);
    c.envs(vars.iter().copied());
    let r = crate::common::finish(c.output().unwrap());
    assert_eq!(r.json()["status"], "needs_approval", "{r:?}");
    let state: serde_json::Value =
        serde_json::from_str(&read(&env.state_file("workflow_resume_"))).unwrap();
    let safe = state["rerunSafe"] == json!(true);
    std::fs::remove_file(env.state_file("workflow_resume_")).unwrap();
    safe
}

#[test]
fn a_workflow_is_marked_rerunnable_only_when_every_step_after_its_gate_is_pure() {
    let env = Env::new();
    let gate = "steps:\n  - id: plan\n    run: echo '[1,2]'\n  - id: gate\n    approval: Go?\n";
    // Pure built-in pipelines after the gate (whatever ran before it).
    assert!(paused_rerun_safe(
        &env,
        &format!("{gate}  - id: pick\n    pipeline: json '[{{\"a\":1}}]' | pick a | head --n 1\n")
    ));
    // Brokered calls, journaled (the run keeps a journal): a resume claimed
    // again replays them (tests/cli/recovery.rs); one branch of a
    // `parallel:` may call too.
    let ask = "  - id: ask\n    pipeline: llm.invoke --prompt hi\n";
    assert!(paused_rerun_safe(&env, &format!("{gate}{ask}")));
    // Without a journal nothing says what a dead resumer sent: never.
    let off = [("LOBSTER_JOURNAL", "off")];
    assert!(!paused_rerun_safe_with(&env, &format!("{gate}{ask}"), &off));
    let branch = |id: &str| {
        format!("        - id: {id}\n          pipeline: openclaw.invoke --tool t{id}\n")
    };
    let one = format!(
        "  - id: p\n    parallel:\n      branches:\n{}        - id: q\n          pipeline: json '[1]'\n",
        branch("a")
    );
    assert!(paused_rerun_safe(&env, &format!("{gate}{one}")));
    // A host shell line, a state write, two branches calling at once (in
    // no fixed order) after the gate: never.
    let two = format!(
        "  - id: p\n    parallel:\n      branches:\n{}{}",
        branch("a"),
        branch("b")
    );
    for after in [
        "  - id: apply\n    run: echo applied\n",
        "  - id: save\n    pipeline: json '[1]' | state.set seen\n",
        two.as_str(),
    ] {
        assert!(
            !paused_rerun_safe(&env, &format!("{gate}{after}")),
            "{after}"
        );
    }
}
