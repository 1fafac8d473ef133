//! Gates across nodes: a gate paused on one node is decided on the other,
//! exactly once among racers on both; a killed node's run reads
//! `interrupted` on the other once its heartbeat is a lease old, and a pure
//! run's resume on a killed node opens its gate again.

use super::{paused, ran_on_a, Cluster, H, S};
use crate::{test_guests, Server, ALICE, GATED};
use serde_json::{json, Value};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

#[test]
fn a_gate_paused_on_one_node_is_decided_on_the_other() {
    let Some(c) = Cluster::new() else { return };
    let a = c.node("a", "", &[]);
    let b = c.node("b", "", &[]);
    // Through the API: pause on one node (whichever took it from the
    // queue), read and resume on the other, read on the first.
    let id = paused(&a, S, GATED);
    let rec = a.get_run(S, &id).json();
    let (a, b) = if ran_on_a(&rec) { (&a, &b) } else { (&b, &a) };
    let rec = b.get_run(S, &id).json();
    assert_eq!(rec["status"], "needs_approval", "{rec}");
    assert!(b.approvals(S).iter().any(|g| g["runId"] == id));
    let (ran_on, decided_on) = (
        rec["node"].as_str().unwrap().to_string(),
        if ran_on_a(&rec) { "b-" } else { "a-" },
    );
    let r = b.call(
        "POST",
        &format!("/v1/runs/{id}/resume"),
        S,
        Some(json!({"approve": true})),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["output"], json!([1, 2]));
    let rec = a.get_run(S, &id).json();
    assert_eq!(rec["status"], "ok", "{rec}");
    assert!(
        rec["node"].as_str().unwrap().starts_with(decided_on),
        "{rec} (paused on {ran_on})"
    );
    assert!(!a.approvals(S).iter().any(|g| g["runId"] == id));
    let r = a.call(
        "POST",
        &format!("/v1/runs/{id}/resume"),
        S,
        Some(json!({"approve": true})),
    );
    assert_eq!(r.status, 409, "{}", r.body);
    // Through an approval link: issued by A, the approver signed in on A,
    // the session used on B (one key for every node), spent on A too.
    let id = paused(a, H, GATED);
    let link = a.link_for(H, &id);
    let cookie = a
        .sign_in(&link, ALICE)
        .unwrap_or_else(|r| panic!("{}", r.body));
    let r = b.form_as(&link, "decision=approve", &cookie);
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("Approved"), "{}", r.body);
    assert_eq!(a.get_run(H, &id).json()["status"], "ok");
    assert_eq!(a.get_run(H, &id).json()["decidedBy"], "approver alice");
    let r = a.form_as(&link, "decision=approve", &cookie);
    assert_eq!(r.status, 410, "{}", r.body);
    // A link used on both nodes at once: one decides, the other is refused.
    let id = paused(b, H, GATED);
    let link = b.link_for(H, &id);
    let statuses: Vec<u16> = std::thread::scope(|sc| {
        let hs = [&a, &b].map(|n| {
            let (link, cookie) = (&link, &cookie);
            sc.spawn(move || n.form_as(link, "decision=approve", cookie).status)
        });
        hs.map(|h| h.join().unwrap()).to_vec()
    });
    let mut sorted = statuses.clone();
    sorted.sort();
    assert_eq!(sorted, vec![200, 410], "{statuses:?}");
    assert_eq!(a.get_run(H, &id).json()["status"], "ok");
}

#[test]
fn fifty_racers_on_two_nodes_decide_each_of_100_gates_once() {
    let Some(c) = Cluster::new() else { return };
    let a = c.node("a", "", &[]);
    let b = c.node("b", "", &[]);
    const TRIALS: usize = 100;
    const RACERS: usize = 50;
    let marks = c.dir.path().join("marks");
    std::fs::create_dir(&marks).unwrap();
    // The gates, made in a batch (alternately on each node); the step after
    // each gate appends a line to a file of its own.
    let ids: Vec<String> = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..TRIALS)
            .map(|t| {
                let node = if t % 2 == 0 { &a } else { &b };
                let mark = marks.join(format!("{t}"));
                sc.spawn(move || {
                    paused(
                        node,
                        S,
                        &format!("{GATED} | exec --shell 'echo ran >> {}'", mark.display()),
                    )
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let barrier = Arc::new(Barrier::new(RACERS));
    let results: Vec<Vec<u16>> = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..RACERS)
            .map(|i| {
                let node = if i % 2 == 0 { &a } else { &b };
                let (ids, barrier) = (&ids, barrier.clone());
                sc.spawn(move || {
                    ids.iter()
                        .map(|id| {
                            barrier.wait();
                            node.call(
                                "POST",
                                &format!("/v1/runs/{id}/resume"),
                                S,
                                Some(json!({"approve": true})),
                            )
                            .status
                        })
                        .collect::<Vec<u16>>()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (t, id) in ids.iter().enumerate() {
        let statuses: Vec<u16> = results.iter().map(|r| r[t]).collect();
        let won = statuses.iter().filter(|s| **s == 200).count();
        let lost = statuses.iter().filter(|s| **s == 409).count();
        assert_eq!((won, lost), (1, RACERS - 1), "trial {t}: {statuses:?}");
        let ran = std::fs::read_to_string(marks.join(format!("{t}"))).unwrap_or_default();
        assert_eq!(
            ran.lines().count(),
            1,
            "trial {t}: the after-gate step ran {ran:?}"
        );
        assert_eq!(a.get_run(S, id).json()["status"], "ok");
    }
}

#[test]
fn a_killed_node_s_run_reads_interrupted_on_the_other_once_its_lease_expires() {
    let Some(c) = Cluster::new() else { return };
    let lease = [("LOBSTER_STORE_LEASE_MS", "1000")];
    let mut a = c.node("a", "", &lease);
    let mut b = c.node("b", "", &lease);
    let gate = paused(&a, S, GATED);
    let r = a.call(
        "POST",
        "/v1/runs?wait=0",
        S,
        Some(json!({"pipeline": "exec --shell 'sleep 30'"})),
    );
    assert_eq!(r.status, 202, "{}", r.body);
    let id = r.json()["runId"].as_str().unwrap().to_string();
    // Going on on one node: the other says so (its heartbeat is fresh).
    std::thread::sleep(Duration::from_millis(1500));
    let rec = a.get_run(S, &id).json();
    assert_eq!(rec["status"], "running", "{rec}");
    let (victim, b) = if ran_on_a(&rec) {
        (&mut a, &b)
    } else {
        (&mut b, &a)
    };
    assert_eq!(b.get_run(S, &id).json()["status"], "running");
    victim.child.kill().unwrap();
    victim.child.wait().unwrap();
    let rec = settled_after_kill(b, &id);
    assert_eq!(rec["status"], "interrupted", "{rec}");
    assert!(rec["reason"].as_str().unwrap().contains("stopped"), "{rec}");
    // B serves everything else: a gate paused on the dead node is decided on B.
    let r = b.call(
        "POST",
        &format!("/v1/runs/{gate}/resume"),
        S,
        Some(json!({"approve": true})),
    );
    assert_eq!(r.json()["output"], json!([1, 2]), "{}", r.body);
    let r = b.run(S, json!({"pipeline": "exec --json --shell 'echo 7'"}));
    assert_eq!(r.json()["output"], json!([7]), "{}", r.body);
}

#[test]
fn a_pure_resume_on_a_killed_node_opens_its_gate_again_on_the_other() {
    let Some(c) = Cluster::new() else { return };
    let Some(guests) = test_guests("a_pure_resume_on_a_killed_node", "cmd-echo.wasm") else {
        return;
    };
    let steps = c.dir.path().join("steps");
    std::fs::create_dir(&steps).unwrap();
    std::fs::copy(guests.join("cmd-echo.wasm"), steps.join("cmd-echo.wasm")).unwrap();
    let lease = [("LOBSTER_STORE_LEASE_MS", "1000")];
    let with_steps = format!("steps = [\"{}\"]", steps.display());
    let mut a = c.node_full("a", "", &lease, 64, &with_steps);
    let b = c.node_full("b", "", &lease, 64, &with_steps);
    // After the gate: one plain command component granted nothing (pure),
    // slow enough to kill its node in the middle of it.
    let id = paused(
        &a,
        S,
        "exec --json --shell 'echo [7]' | approve --prompt ok? | cmd-echo sleep 3000",
    );
    let r = a.call(
        "POST",
        &format!("/v1/runs/{id}/resume?wait=0"),
        S,
        Some(json!({"approve": true})),
    );
    assert_eq!(r.status, 202, "{}", r.body);
    // Kill A once B sees the resumed run running, however slow the machine.
    let started = Instant::now();
    loop {
        let rec = b.get_run(S, &id).json();
        if rec["status"] == "running" {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the resumed run never showed running on B: {rec}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    a.child.kill().unwrap();
    a.child.wait().unwrap();
    let rec = settled_after_kill(&b, &id);
    // Not interrupted: the gate is open again, on every node.
    assert_eq!(rec["status"], "needs_approval", "{rec}");
    assert!(
        rec["reason"]
            .as_str()
            .unwrap()
            .contains("the gate is open again"),
        "{rec}"
    );
    let listed = b.call("GET", "/v1/approvals", S, None).json();
    assert!(listed.to_string().contains(&id), "{listed}");
    // Decided again on B, it runs to its end, exactly once.
    let r = b.call(
        "POST",
        &format!("/v1/runs/{id}/resume"),
        S,
        Some(json!({"approve": true})),
    );
    // Answered within the request's wait (200), or still running when it
    // ran out (202, on a loaded machine): then its record settles later.
    let output = match r.status {
        200 => r.json()["output"].clone(),
        202 => settled(&b, &id)["envelope"]["output"].clone(),
        _ => panic!("{} {}", r.status, r.body),
    };
    assert_eq!(output, json!([7]), "{}", r.body);
    let again = b.call(
        "POST",
        &format!("/v1/runs/{id}/resume"),
        S,
        Some(json!({"approve": true})),
    );
    assert_eq!(again.status, 409, "{}", again.body);
    let rec = b.get_run(S, &id).json();
    assert_eq!(rec["status"], "ok", "{rec}");
    assert!(rec.get("gate").is_none(), "{rec}");
}

/// Run `id`'s record once it is no longer `running` on a live `node`;
/// fails after 120 s.
fn settled(node: &Server, id: &str) -> Value {
    let started = Instant::now();
    loop {
        let rec = node.get_run(S, id).json();
        if rec["status"] != "running" {
            return rec;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "still running after 120 s: {rec}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Run `id`'s record as `node` reads it once it is no longer `running`
/// (its node was just killed); fails after 10 s.
fn settled_after_kill(node: &Server, id: &str) -> Value {
    let killed = Instant::now();
    loop {
        let rec = node.get_run(S, id).json();
        if rec["status"] != "running" {
            return rec;
        }
        assert!(
            killed.elapsed() < Duration::from_secs(10),
            "still running 10 s after its node was killed: {rec}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
