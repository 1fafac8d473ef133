//! Two `lobster serve` processes on one PostgreSQL database
//! (`LOBSTER_TEST_PG_URL`, e.g. `export LOBSTER_TEST_PG_URL=$(bash tests/pg.sh
//! start)`): a gate paused on one node is decided on the other, exactly once
//! among racers on both; a killed node's run reads `interrupted` on the
//! other once its heartbeat is a lease old. Without the URL these tests fail
//! under `CI=true` and skip loudly elsewhere. Each test uses tenants and
//! node ids of its own, so they share one database safely.

use super::*;
use crate::own_pg::{pg_sh, pg_url, OwnCluster};
use crate::psql::psql;
use std::sync::{Arc, Barrier};

fn rand_hex() -> String {
    let mut b = [0u8; 6];
    std::fs::File::open("/dev/urandom")
        .unwrap()
        .read_exact(&mut b)
        .unwrap();
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A cluster of nodes over one database: tenant `h` (self_approve false:
/// humans decide through links) and tenant `s` (self_approve true), both
/// trusted, under names of this test's own.
struct Cluster {
    dir: tempfile::TempDir,
    url: String,
    /// The tenants' real names (`h-<rand>`, `s-<rand>`).
    h: String,
    s: String,
}

const H: &str = "human-token";
const S: &str = "self-approve-token";

impl Cluster {
    fn new() -> Option<Cluster> {
        let url = pg_url()?;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("trusted.toml"), "trust = \"trusted\"\n").unwrap();
        let r = rand_hex();
        Some(Cluster {
            dir,
            url,
            h: format!("h-{r}"),
            s: format!("s-{r}"),
        })
    }

    /// Start node `name` (its own local directory), with `env` set.
    fn node(&self, name: &str, extra: &str, env: &[(&str, &str)]) -> Server {
        self.node_with(name, extra, env, 64)
    }

    /// [`Cluster::node`] with `max_runs` as tenant `s`'s max_concurrent_runs.
    fn node_with(&self, name: &str, extra: &str, env: &[(&str, &str)], max_runs: usize) -> Server {
        self.node_full(name, extra, env, max_runs, "")
    }

    /// [`Cluster::node_with`] with `s_extra` appended to tenant `s`'s table.
    fn node_full(
        &self,
        name: &str,
        extra: &str,
        env: &[(&str, &str)],
        max_runs: usize,
        s_extra: &str,
    ) -> Server {
        let node_id = format!("{name}-{}", rand_hex());
        let config = format!(
            "state = \"{}\"\nnode_id = \"{node_id}\"\n{extra}\n\
[[tenant]]\nname = \"{}\"\ntoken_sha256 = \"{}\"\npolicy = \"trusted.toml\"\nmax_concurrent_runs = 64\nrequests_per_minute = 100000\n\
[[tenant.approver]]\nname = \"{}\"\ntoken_sha256 = \"{}\"\n\
[[tenant]]\nname = \"{}\"\ntoken_sha256 = \"{}\"\npolicy = \"trusted.toml\"\nself_approve = true\nmax_concurrent_runs = {max_runs}\nrequests_per_minute = 100000\n{s_extra}\n",
            self.url,
            self.h,
            sha(H),
            ALICE.0,
            sha(ALICE.1),
            self.s,
            sha(S)
        );
        let path = self.dir.path().join(format!("{name}.toml"));
        std::fs::write(&path, config).unwrap();
        let mut cmd = Command::new(BIN);
        cmd.args(["serve", "--config"])
            .arg(&path)
            .args(["--listen", "127.0.0.1:0"])
            .env("LOBSTER_STATE_DIR", self.dir.path().join(name))
            .env_remove("LOBSTER_POLICY")
            .env_remove("LOBSTER_STORE_LEASE_MS");
        for (k, v) in env {
            cmd.env(k, v);
        }
        Server::spawn(&mut cmd)
    }
}

fn ran_on_a(rec: &Value) -> bool {
    rec["node"].as_str().unwrap().starts_with("a-")
}

fn paused(node: &Server, token: &str, pipeline: &str) -> String {
    let r = node.run(token, json!({ "pipeline": pipeline }));
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    assert_eq!(v["status"], "needs_approval", "{v}");
    v["runId"].as_str().unwrap().to_string()
}

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
