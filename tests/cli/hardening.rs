//! Reliability findings of issue 10: bad argv bytes, orphaned approval
//! aliases, children outliving a killed lobster, interrupted resumes, and
//! bounded error envelopes.

use crate::common::*;
use std::os::unix::ffi::OsStrExt;

#[test]
fn non_utf8_argument_is_a_parse_error_with_one_envelope() {
    let env = Env::new();
    let bad = std::ffi::OsStr::from_bytes(b"\xff\xfe");
    let out = env
        .command(&["resume", "--token"])
        .arg(bad)
        .args(["--approve", "yes"])
        .output()
        .unwrap();
    let run = finish(out);
    assert_eq!(run.code, 2, "{run:?}");
    let v = run.json();
    assert_eq!(v["ok"], false, "{v}");
    assert_eq!(v["error"]["type"], "parse_error", "{v}");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(msg.contains("argument 3") && msg.contains("UTF-8"), "{msg}");
    // Human mode: a message on stderr, nothing on stdout, exit 2.
    let out = env.command(&["run"]).arg(bad).output().unwrap();
    let run = finish(out);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("UTF-8"), "{run:?}");
    assert!(!run.stderr.contains("panicked"), "{run:?}");
    // `--mode tool` anywhere makes it an envelope too.
    let out = env
        .command(&["run", "--mode", "tool"])
        .arg(bad)
        .output()
        .unwrap();
    let run = finish(out);
    assert_eq!(run.code, 2, "{run:?}");
    assert_eq!(run.json()["error"]["type"], "parse_error");
}

/// A step path holding copies of the named test guests.
fn steps_with(env: &Env, names: &[&str]) -> Option<std::path::PathBuf> {
    let dir = env.work_path("steps");
    std::fs::create_dir_all(&dir).unwrap();
    for name in names {
        let built = test_guest(name)?;
        std::fs::copy(built, dir.join(format!("{name}.wasm"))).unwrap();
    }
    Some(dir)
}

#[test]
fn clock_and_random_are_the_same_after_a_pause() {
    let env = Env::new();
    let Some(steps) = steps_with(&env, &["probe"]) else {
        return;
    };
    let steps = steps.to_str().unwrap();
    // A seed above 2^53 loses bits as a JavaScript number; a few runs make a
    // small seed (which would survive) vanishingly unlikely every time.
    for _ in 0..3 {
        let r = env.run(&[
            "run",
            "--mode",
            "tool",
            "--steps",
            steps,
            // `head --n 0`: the second stage gets the same (empty) input
            // as the first, so only clock and seed could make them differ.
            "probe world | approve --prompt ok | head --n 0 | probe world",
        ]);
        let v = r.json();
        assert_eq!(v["status"], "needs_approval", "{r:?}");
        let before = v["requiresApproval"]["items"][0].clone();
        assert!(before["hash"].is_string(), "{v}");
        let r = env.run(&["resume", "--token", &token_of(&v), "--approve", "yes"]);
        let v = r.json();
        assert_eq!(v["status"], "ok", "{r:?}");
        assert_eq!(
            v["output"][0], before,
            "the stage after the pause sees the clock and random of the run"
        );
    }
}

/// Wait up to 20 s for `cond`.
fn wait_until(what: &str, cond: impl Fn() -> bool) {
    let start = std::time::Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "timed out waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn host_processes_die_with_a_killed_lobster() {
    let env = Env::new();
    let started = env.work_path("started");
    let canary = env.work_path("canary");
    let line = format!(
        "exec --shell 'touch {}; sleep 1; touch {}'",
        started.display(),
        canary.display()
    );
    let mut child = env.spawn(&["run", "--mode", "tool", &line]);
    wait_until("the host process to start", || started.exists());
    child.kill().unwrap(); // SIGKILL: lobster runs no clean-up at all.
    child.wait().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(2000));
    assert!(
        !canary.exists(),
        "the host process outlived lobster and finished its work"
    );
}

/// Start a resume of `token` (approved), wait until its post-gate work has
/// started (`started` exists), SIGKILL it, and return what a second resume
/// of the same token says.
fn kill_resume_then_resume_again(env: &Env, token: &str, started: &std::path::Path) -> Run {
    let mut child = env.spawn(&["resume", "--token", token, "--approve", "yes"]);
    wait_until("the resumed run to start its next step", || {
        started.exists()
    });
    child.kill().unwrap();
    child.wait().unwrap();
    env.run(&["resume", "--token", token, "--approve", "yes"])
}

#[test]
fn a_killed_pipeline_resume_leaves_an_interrupted_record() {
    let env = Env::new();
    let started = env.work_path("started");
    let line = format!(
        "exec --json --shell 'echo [1]' | approve --prompt ok | exec --shell 'touch {}; sleep 30'",
        started.display()
    );
    let v = env.tool(&line).json();
    assert_eq!(v["status"], "needs_approval", "{v}");
    let r = kill_resume_then_resume_again(&env, &token_of(&v), &started);
    assert_eq!(r.code, 1, "{r:?}");
    let msg = err_message(&r);
    assert!(
        msg.contains("interrupted after approval at stage 2"),
        "{msg}"
    );
    // At most once: the run did not start again.
    assert!(!msg.contains("not found"), "{msg}");
}

#[test]
fn a_killed_workflow_resume_leaves_an_interrupted_record() {
    let env = Env::new();
    let started = env.work_path("started");
    let wf = write(
        &env,
        "w.lobster",
        &format!(
            "steps:\n  - id: plan\n    run: echo planned\n  - id: gate\n    approval: Go?\n  - id: apply\n    run: touch {}; sleep 30\n",
            started.display()
        ),
    );
    let r = env.run(&["run", "--mode", "tool", "--file", wf.to_str().unwrap()]);
    let v = r.json();
    assert_eq!(v["status"], "needs_approval", "{r:?}");
    let r = kill_resume_then_resume_again(&env, &token_of(&v), &started);
    assert_eq!(r.code, 1, "{r:?}");
    let msg = err_message(&r);
    assert!(
        msg.contains("interrupted after approval at step 2 (gate)"),
        "{msg}"
    );
    // A resume that finishes leaves no record behind.
    let wf2 = write(
        &env,
        "w2.lobster",
        "steps:\n  - id: gate\n    approval: Go?\n  - id: after\n    run: echo done\n",
    );
    let v = env
        .run(&["run", "--mode", "tool", "--file", wf2.to_str().unwrap()])
        .json();
    let r = env.run(&["resume", "--token", &token_of(&v), "--approve", "yes"]);
    assert_eq!(r.json()["status"], "ok", "{r:?}");
    let leftovers: Vec<String> = env
        .state_files()
        .into_iter()
        .filter(|n| n.starts_with("interrupted_workflow"))
        .collect();
    assert_eq!(
        leftovers.len(),
        1,
        "only the killed run's record: {leftovers:?}"
    );
}

#[test]
fn error_envelopes_quoting_guest_text_respect_the_output_cap() {
    let env = Env::new();
    let Some(steps) = steps_with(&env, &["hostile", "bigdescribe"]) else {
        return;
    };
    let steps = steps.to_str().unwrap();
    for (stage, expect) in [
        ("hostile huge-fail", "step hostile failed: FFFF"),
        (
            "bigdescribe",
            "describe returned a directory path of 41943041 bytes",
        ),
    ] {
        let r = env.run(&[
            "run",
            "--mode",
            "tool",
            "--steps",
            steps,
            "--max-stdout-bytes",
            "2048",
            stage,
        ]);
        assert_eq!(r.code, 1, "{stage}: {} bytes of stdout", r.stdout.len());
        assert!(r.stdout.len() <= 2048, "{stage}: {} bytes", r.stdout.len());
        let msg = err_message(&r);
        assert!(msg.contains(expect), "{stage}: {msg}");
        assert!(
            r.stderr.len() < 64 * 1024,
            "{stage}: {} bytes of stderr",
            r.stderr.len()
        );
    }
}
