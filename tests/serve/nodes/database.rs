//! The nodes' shared database: a restart under load fails requests cleanly,
//! a run submitted to a busy node is run by a free one, a tenant called
//! `default` cannot read the server's rows, and workflow texts are stored
//! once and resumed on the other node.

use super::{ran_on_a, rand_hex, Cluster, H, S};
use crate::own_pg::{pg_sh, OwnCluster};
use crate::psql::psql;
use crate::{sha, Server, BIN};
use serde_json::json;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// A cluster of this test's own ([`OwnCluster`]) that becomes the nodes'
/// database; stopped when dropped.
fn own_db(c: &mut Cluster) -> OwnCluster {
    let own = OwnCluster::start();
    c.url = own.url.clone();
    own
}

#[test]
fn a_database_restart_under_load_fails_requests_cleanly_then_recovers_losing_no_run() {
    // A cluster of its own, so stopping it disturbs no other test.
    let Some(mut c) = Cluster::new() else { return };
    let own = own_db(&mut c);
    let pg_dir = own.dir.clone();
    let mut a = c.node("a", "", &[]);
    let b = c.node("b", "", &[]);
    let stop = std::sync::atomic::AtomicBool::new(false);
    let restarted = std::sync::atomic::AtomicBool::new(false);
    let results: Vec<(Vec<String>, usize, usize)> = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..4)
            .map(|w| {
                let node = if w % 2 == 0 { &a } else { &b };
                let (stop, restarted) = (&stop, &restarted);
                sc.spawn(move || {
                    let (mut acked, mut refused, mut after) = (Vec::new(), 0, 0);
                    let mut i = 0;
                    while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                        let r = node.run(
                            S,
                            json!({"pipeline": format!("exec --json --shell 'echo {i}'"), "wait": 1000}),
                        );
                        match r.status {
                            200 | 202 => {
                                acked.push(r.json()["runId"].as_str().unwrap().to_string());
                                if restarted.load(std::sync::atomic::Ordering::SeqCst) {
                                    after += 1;
                                }
                            }
                            503 => {
                                let e = r.json();
                                assert_eq!(e["error"]["type"], "store_unavailable", "{e}");
                                assert!(
                                    e["error"]["message"]
                                        .as_str()
                                        .unwrap()
                                        .contains("PostgreSQL"),
                                    "{e}"
                                );
                                refused += 1;
                                std::thread::sleep(Duration::from_millis(20));
                            }
                            other => panic!("unexpected {other}: {}", r.body),
                        }
                        i += 1;
                    }
                    (acked, refused, after)
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(800));
        pg_sh(&pg_dir, "kill");
        std::thread::sleep(Duration::from_millis(1000));
        pg_sh(&pg_dir, "start");
        restarted.store(true, std::sync::atomic::Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(1500));
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let refused: usize = results.iter().map(|r| r.1).sum();
    let acked: usize = results.iter().map(|r| r.0.len()).sum();
    eprintln!("database restart: {acked} runs accepted, {refused} refused with 503");
    let after: usize = results.iter().map(|r| r.2).sum();
    assert!(refused > 0, "the outage refused no request");
    assert!(after > 0, "no run was accepted after the restart");
    // No node panicked or exited, and every acknowledged run has its
    // settled record, on either node.
    assert!(a.child.try_wait().unwrap().is_none(), "node a exited");
    for (w, (acked, _, _)) in results.iter().enumerate() {
        for id in acked {
            let node = if w % 2 == 0 { &b } else { &a };
            let rec = node.settled(S, id);
            // Accepted (its record written), then the database went away
            // under it: it failed, saying why, and its record says so.
            let failed_on_store = rec["status"] == "failed"
                && rec["envelope"]["error"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("PostgreSQL store"));
            assert!(rec["status"] == "ok" || failed_on_store, "{rec}");
        }
    }
}

#[test]
fn a_run_submitted_to_a_busy_node_is_run_by_a_free_one() {
    let Some(c) = Cluster::new() else { return };
    // A alone, at its limit (one run) with a run that sleeps.
    let a = c.node_with("a", "", &[], 1);
    let r = a.call(
        "POST",
        "/v1/runs?wait=0",
        S,
        Some(json!({"pipeline": "exec --shell 'sleep 4'"})),
    );
    assert_eq!(r.status, 202, "{}", r.body);
    let busy = r.json()["runId"].as_str().unwrap().to_string();
    let until = Instant::now() + Duration::from_secs(10);
    while !a.get_run(S, &busy).json()["node"].is_string() {
        assert!(Instant::now() < until, "A never took its run");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(a.get_run(S, &busy).json()["node"]
        .as_str()
        .unwrap()
        .starts_with("a-"));
    // B joins; a run submitted to A is executed by B and answered by A.
    let b = c.node("b", "", &[]);
    let r = a.run(
        S,
        json!({"pipeline": "exec --json --shell 'echo 5'", "wait": 8000}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    assert_eq!(v["output"], json!([5]), "{v}");
    let id = v["runId"].as_str().unwrap();
    let rec = b.get_run(S, id).json();
    assert!(rec["node"].as_str().unwrap().starts_with("b-"), "{rec}");
    assert_eq!(a.settled(S, &busy)["status"], "ok");
}

#[test]
fn a_tenant_called_default_cannot_read_the_server_s_rows() {
    // A database of its own: the rows of the default tenant are this test's.
    let Some(mut c) = Cluster::new() else { return };
    let _own = own_db(&mut c);
    let config = c.dir.path().join("default.toml");
    std::fs::write(
        &config,
        format!(
            "state = \"{}\"\n[[tenant]]\nname = \"default\"\ntoken_sha256 = \"{}\"\npolicy = \"trusted.toml\"\nself_approve = true\n",
            c.url,
            sha(H)
        ),
    )
    .unwrap();
    let s = Server::spawn(
        Command::new(BIN)
            .args(["serve", "--config"])
            .arg(&config)
            .args(["--listen", "127.0.0.1:0"])
            .env("LOBSTER_STATE_DIR", c.dir.path().join("d")),
    );
    // The link key exists (the server made it) but not in this tenant's
    // rows; and the name is reserved, so the read is refused outright.
    let r = s.run(H, json!({"pipeline": "state.get serve_link_key"}));
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    assert_eq!(v["ok"], false, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("is reserved"),
        "{v}"
    );
    assert!(!v.to_string().contains("\"output\""), "{v}");
}

/// Remove every inline document containing `marker` from every node's disk
/// (as if each node had a disk of its own); how many were removed.
fn forget_inline(dir: &Path, marker: &str) -> usize {
    let mut removed = 0;
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else if p
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(".inline-"))
                && std::fs::read_to_string(&p).is_ok_and(|t| t.contains(marker))
            {
                std::fs::remove_file(&p).unwrap();
                removed += 1;
            }
        }
    }
    removed
}

#[test]
fn a_workflow_text_paused_on_one_node_is_resumed_on_the_other_from_the_store() {
    let Some(c) = Cluster::new() else { return };
    let a = c.node("a", "", &[]);
    let b = c.node("b", "", &[]);
    // An inline workflow: a gate, then a step that appends a line to `mark`.
    let pause = |marker: &str| -> (String, std::path::PathBuf) {
        let mark = c.dir.path().join(marker);
        let doc = format!(
            "name: inline-{marker}\nsteps:\n  - id: gate\n    approval: Go {marker}?\n  - id: after\n    when: $gate.approved\n    run: echo ran >> {}; echo done\n",
            mark.display()
        );
        let r = a.run(S, json!({ "workflowText": doc }));
        assert_eq!(r.status, 200, "{}", r.body);
        let v = r.json();
        assert_eq!(v["status"], "needs_approval", "{v}");
        // The text is in the store; no node's disk keeps it any more.
        assert!(forget_inline(c.dir.path(), marker) >= 1);
        (v["runId"].as_str().unwrap().to_string(), mark)
    };
    // The decider: the node that did not run it.
    let other = |id: &str| {
        if ran_on_a(&a.get_run(S, id).json()) {
            &b
        } else {
            &a
        }
    };
    let resume = |node: &Server, id: &str| {
        node.call(
            "POST",
            &format!("/v1/runs/{id}/resume"),
            S,
            Some(json!({"approve": true})),
        )
    };

    let marker = format!("ok{}", rand_hex());
    let (id, mark) = pause(&marker);
    let r = resume(other(&id), &id);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["status"], "ok", "{}", r.body);
    assert_eq!(a.get_run(S, &id).json()["status"], "ok");
    let ran = std::fs::read_to_string(&mark).unwrap_or_default();
    assert_eq!(ran.lines().count(), 1, "the after-gate step ran {ran:?}");
    let r = resume(&a, &id);
    assert_eq!(r.status, 409, "{}", r.body);
    let ran = std::fs::read_to_string(&mark).unwrap_or_default();
    assert_eq!(ran.lines().count(), 1, "the after-gate step ran {ran:?}");

    // The text altered in the store: refused, nothing ran, the gate still open.
    let marker = format!("tampered{}", rand_hex());
    let (id, mark) = pause(&marker);
    let like = format!("key LIKE 'serve_inline_%' AND value LIKE '%{marker}%'");
    let changed = psql(
        &c.url,
        &format!("UPDATE lobster_kv SET value = replace(value, 'echo done', 'echo evil') WHERE {like} RETURNING 1"),
    );
    assert_eq!(changed, "1");
    let node = other(&id);
    let r = resume(node, &id);
    assert_eq!(r.status, 409, "{}", r.body);
    let err = &r.json()["error"];
    assert_eq!(err["type"], "workflow_text_unavailable", "{}", r.body);
    assert!(
        err["message"].as_str().unwrap().contains("altered"),
        "{}",
        r.body
    );
    assert!(!mark.exists(), "the after-gate step ran");
    assert!(node.approvals(S).iter().any(|g| g["runId"] == id));
    assert_eq!(a.get_run(S, &id).json()["status"], "needs_approval");

    // The text gone from the store: refused the same way.
    psql(&c.url, &format!("DELETE FROM lobster_kv WHERE {like}"));
    let r = resume(node, &id);
    assert_eq!(r.status, 409, "{}", r.body);
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("is not in the store"),
        "{}",
        r.body
    );
    assert!(!mark.exists(), "the after-gate step ran");
}

/// Inline documents containing `marker` under `dir`.
fn inline_files(dir: &Path, marker: &str) -> usize {
    let mut found = 0;
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else if p
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(".inline-"))
                && std::fs::read_to_string(&p).is_ok_and(|t| t.contains(marker))
            {
                found += 1;
            }
        }
    }
    found
}

#[test]
fn a_queued_workflow_text_is_kept_once_by_the_node_that_runs_it() {
    let Some(c) = Cluster::new() else { return };
    // A alone, its one run slot busy: what it is given next is queued.
    let a = c.node_with("a", "", &[], 1);
    let r = a.call(
        "POST",
        "/v1/runs?wait=0",
        S,
        Some(json!({"pipeline": "exec --shell 'sleep 4'"})),
    );
    assert_eq!(r.status, 202, "{}", r.body);
    let busy = r.json()["runId"].as_str().unwrap().to_string();
    let until = Instant::now() + Duration::from_secs(10);
    while !a.get_run(S, &busy).json()["node"].is_string() {
        assert!(Instant::now() < until, "A never took its run");
        std::thread::sleep(Duration::from_millis(50));
    }
    let b = c.node("b", "", &[]);
    let marker = format!("queued{}", rand_hex());
    let doc = format!(
        "name: q-{marker}\nargs:\n  who:\n    type: string\n    required: true\nsteps:\n  - id: hi\n    run: echo {marker} ${{who}}\n"
    );
    // A queue refuses what the run would: checked before it is queued.
    let r = a.run(S, json!({"workflow": "nowhere", "wait": 8000}));
    assert_eq!(r.status, 400, "{}", r.body);
    let r = a.run(
        S,
        json!({"workflowText": doc, "args": {"who": "bee"}, "timeoutMs": 20000, "wait": 8000}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    assert_eq!(v["ok"], true, "{v}");
    assert!(r.body.contains(&format!("{marker} bee")), "{}", r.body);
    let id = v["runId"].as_str().unwrap();
    let rec = b.get_run(S, id).json();
    assert!(rec["node"].as_str().unwrap().starts_with("b-"), "{rec}");
    // Kept once, by the node that ran it: on B's disk and in the store,
    // never on A's, which only checked and queued it.
    assert_eq!(inline_files(&c.dir.path().join("b"), &marker), 1);
    assert_eq!(inline_files(&c.dir.path().join("a"), &marker), 0);
    let kept = psql(
        &c.url,
        &format!("SELECT count(*) FROM lobster_kv WHERE key LIKE 'serve_inline_%' AND value LIKE '%{marker}%'"),
    );
    assert_eq!(kept, "1");
    assert_eq!(a.settled(S, &busy)["status"], "ok");
}
