//! Time of check against time of use: a resume refuses a component or a
//! sub-workflow changed while paused, a sub-workflow rewritten by an earlier
//! step is judged when it runs, `check` names what only the run can decide,
//! a templated `uses:` path is held to its pin; and the trusted mode's
//! documented difference for `env:` values.

use super::{message, World, EVIL, SECRET};
use crate::common::{finish, Run};

/// Pause `wf.lobster` (its first step is an approval gate) and return the
/// resume token.
fn pause(w: &World, extra: &[&str]) -> String {
    let r = w.attack(extra);
    assert_eq!(r.code, 0, "{r:?}");
    let v = r.json();
    assert_eq!(v["status"], "needs_approval", "{v}");
    crate::common::token_of(&v)
}

fn resume(w: &World, token: &str) -> Run {
    w.run(&[
        "resume",
        "--mode",
        "tool",
        "--policy",
        "policy.toml",
        "--token",
        token,
        "--approve",
        "yes",
    ])
}

const GATED_LIST: &str =
    "steps:\n  - id: gate\n    approval: ok?\n  - id: l\n    pipeline: inbox.list\n";

#[test]
fn resume_refuses_a_preferred_component_dropped_on_the_step_path() {
    let Some(w) = World::new() else { return };
    std::fs::write(w.run.join("wf.lobster"), GATED_LIST).unwrap();
    let token = pause(&w, &["--allow-read", "mail"]);
    // `inbox.list.wasm` is tried before `inbox_list.wasm`: a different
    // component under the preferred name.
    std::fs::copy(
        w.run.join("steps/probe.wasm"),
        w.run.join("steps/inbox.list.wasm"),
    )
    .unwrap();
    let r = resume(&w, &token);
    assert_eq!(r.code, 1, "{r:?}");
    let msg = message(&r);
    assert!(
        msg.contains("step inbox.list changed since the run paused"),
        "{msg}"
    );
    // Refused before the claim: without the intruder the token still works.
    std::fs::remove_file(w.run.join("steps/inbox.list.wasm")).unwrap();
    let r = resume(&w, &token);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.json()["status"], "ok");
}

#[test]
fn resume_refuses_the_same_component_from_another_file() {
    let Some(w) = World::new() else { return };
    std::fs::write(w.run.join("wf.lobster"), GATED_LIST).unwrap();
    let token = pause(&w, &["--allow-read", "mail"]);
    std::fs::copy(
        w.run.join("steps/inbox_list.wasm"),
        w.run.join("steps/inbox.list.wasm"),
    )
    .unwrap();
    let r = resume(&w, &token);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(message(&r).contains("now resolves to"), "{r:?}");
}

#[test]
fn resume_refuses_a_sub_workflow_rewritten_while_paused() {
    let Some(w) = World::new() else { return };
    for (wf, sub) in [
        ("steps:\n  - id: gate\n    approval: ok?\n  - id: s\n    workflow: sub.lobster\n", "sub.lobster"),
        (
            "args:\n  f:\n    default: sub2.lobster\nsteps:\n  - id: gate\n    approval: ok?\n  - id: s\n    workflow: ${f}\n",
            "sub2.lobster",
        ),
    ] {
        std::fs::write(w.run.join("wf.lobster"), wf).unwrap();
        std::fs::write(w.run.join(sub), "steps:\n  - id: o\n    pipeline: head\n").unwrap();
        let token = pause(&w, &[]);
        std::fs::write(w.run.join(sub), EVIL).unwrap();
        let r = resume(&w, &token);
        assert_eq!(r.code, 1, "{r:?}");
        let msg = message(&r);
        assert!(msg.contains("changed since the run paused"), "{msg}");
        assert!(w.breaches().is_empty(), "{:?}", w.breaches());
    }
}

#[test]
fn a_sub_workflow_rewritten_by_an_earlier_step_is_judged_when_it_loads() {
    let Some(w) = World::new() else { return };
    // The plan (built-ins only: milliseconds) walks sub.lobster while it is
    // harmless; then a for_each pauses 4 s between its two items, and the
    // test — standing in for an earlier step with write access — rewrites
    // the literal sub-workflow before the step that loads it.
    std::fs::write(
        w.run.join("wf.lobster"),
        "steps:\n  - id: l\n    pipeline: head\n    stdin: [[1, 2]]\n  - id: f\n    for_each: $l.json\n    batch_size: 1\n    pause_ms: 4000\n    steps:\n      - id: t\n        pipeline: head\n  - id: s\n    workflow: sub.lobster\n",
    )
    .unwrap();
    std::fs::write(
        w.run.join("sub.lobster"),
        "steps:\n  - id: o\n    pipeline: head\n",
    )
    .unwrap();
    let child = w
        .lobster(&[
            "run",
            "--mode",
            "tool",
            "--policy",
            "policy.toml",
            "wf.lobster",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    std::fs::write(w.run.join("sub.lobster"), EVIL).unwrap();
    let r = finish(child.wait_with_output().unwrap());
    assert_eq!(r.code, 1, "{r:?}");
    let msg = message(&r);
    // Refused when the step loads the file, not by the plan.
    assert!(
        msg.starts_with("Workflow step s sub-workflow sub.lobster: policy refuses this run")
            && msg.contains("runs a host shell command, which the untrusted policy forbids"),
        "{msg}"
    );
    assert!(w.breaches().is_empty(), "{:?}", w.breaches());
}

#[test]
fn check_names_what_only_the_run_can_decide() {
    let Some(w) = World::new() else { return };
    std::fs::write(
        w.run.join("wf.lobster"),
        "args:\n  sub:\n    default: s.lobster\n  d:\n    default: mail\nsteps:\n  - id: s\n    workflow: ${sub}\n  - id: c\n    cwd: ${d}\n    pipeline: head\n",
    )
    .unwrap();
    let r = w.run(&["check", "--policy", "policy.toml", "wf.lobster"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        r.stdout.contains("warning: wf.lobster:8: step s runs a templated sub-workflow ${sub}: decided at run time"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("warning: wf.lobster:9: step c cwd ${d} is templated: decided at run time"),
        "{}",
        r.stdout
    );
    let r = w.run(&[
        "check",
        "--format",
        "json",
        "--policy",
        "policy.toml",
        "wf.lobster",
    ]);
    let v = r.json();
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(
        v["decidedAtRunTime"].as_array().map(Vec::len),
        Some(2),
        "{v}"
    );
    // A literal escape is a problem, with its position.
    std::fs::write(
        w.run.join("wf.lobster"),
        "steps:\n  - id: c\n    cwd: ../outside\n    pipeline: head\n",
    )
    .unwrap();
    let r = w.run(&["check", "--policy", "policy.toml", "wf.lobster"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stdout
            .contains("wf.lobster:2: step c cwd ../outside leads to"),
        "{}",
        r.stdout
    );
}

#[test]
fn a_templated_uses_path_is_held_to_its_pin_when_it_loads() {
    let Some(w) = World::new() else { return };
    // Pinned to probe's bytes, but the arg swaps in another component.
    let probe = std::fs::read(w.run.join("steps/probe.wasm")).unwrap();
    let digest = blake3::hash(&probe).to_hex().to_string();
    std::fs::write(
        w.run.join("lobster.lock"),
        format!("version = 1\n\n[steps]\n\"steps/probe.wasm\" = \"{digest}\"\n"),
    )
    .unwrap();
    std::fs::copy(
        w.run.join("steps/capgrab.wasm"),
        w.run.join("steps/probe.wasm"),
    )
    .unwrap();
    std::fs::write(
        w.run.join("wf.lobster"),
        "args:\n  c:\n    default: steps/probe.wasm\nsteps:\n  - id: p\n    uses: ${c}\n",
    )
    .unwrap();
    let r = w.run(&["run", "--mode", "tool", "wf.lobster"]);
    assert_eq!(r.code, 1, "{r:?}");
    let msg = message(&r);
    assert!(
        msg.contains("step steps/probe.wasm does not match its pin in lobster.lock"),
        "{msg}"
    );
}

#[test]
fn trusted_env_values_still_read_the_host_environment() {
    // The documented difference: without a policy (trusted), `env:` values
    // expand host variables first; under untrusted (above) they never do.
    let Some(w) = World::new() else { return };
    std::fs::write(
        w.run.join("wf.lobster"),
        "env:\n  A: wf-$LANG\nsteps:\n  - id: a\n    env:\n      X: ${SECRET_TOKEN}+$A\n    run: printf %s \"$X\"\n",
    )
    .unwrap();
    let r = w.run(&["run", "--mode", "tool", "wf.lobster"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(
        r.json()["output"],
        serde_json::json!([format!("{SECRET}+wf-C.UTF-8")])
    );
}
