//! Runs over HTTP and the server process around them: run, poll, resume,
//! cancel, exactly once; SIGTERM drains and a restart resumes; a killed
//! server's runs read interrupted; one process sees a replaced step file;
//! help and bad configs.

use super::{metric, setup, start, test_guests, Server, ACME, ALICE, BIN, GATED, SELF};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn run_poll_resume_cancel_and_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(&setup(dir.path(), "", ""));
    let before = metric(&s, "lobster_runs_total{tenant=\"selfy\",status=\"ok\"}");
    // 202, then poll.
    let r = s.call(
        "POST",
        "/v1/runs?wait=0",
        SELF,
        Some(json!({"pipeline": format!("exec --shell 'sleep 0.5' | {GATED}")})),
    );
    assert_eq!(r.status, 202, "{}", r.body);
    let v = r.json();
    assert_eq!(v["status"], "running");
    let id = v["runId"].as_str().unwrap().to_string();
    let rec = s.settled(SELF, &id);
    assert_eq!(rec["status"], "needs_approval", "{rec}");
    assert!(rec["createdAt"].is_string() && rec["updatedAt"].is_string());
    // self_approve = true: the tenant's token approves.
    let r = s.call(
        "POST",
        &format!("/v1/runs/{id}/resume"),
        SELF,
        Some(json!({"approve": true})),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["status"], "ok");
    assert_eq!(r.json()["output"], json!([1, 2]));
    assert_eq!(s.get_run(SELF, &id).json()["status"], "ok");
    // The journal names the tenant and who decided: its agent, by token
    // (no approver's name).
    let journal = s.call("GET", &format!("/v1/runs/{id}/journal"), SELF, None);
    assert_eq!(journal.status, 200, "{}", journal.body);
    let events: Vec<Value> = journal
        .body
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["event"].clone())
        .collect();
    assert_eq!(events[0]["kind"], "run_started", "{}", journal.body);
    assert_eq!(events[0]["tenant"], "selfy", "{}", journal.body);
    let decision = events
        .iter()
        .find(|e| e["kind"] == "decision")
        .expect("a decision");
    assert_eq!(decision["decided_by"], "tenant selfy's agent", "{decision}");
    assert_eq!(decision["approver"], Value::Null, "{decision}");
    assert_eq!(decision["door"], "serve", "{decision}");
    // Decided: 409.
    let r = s.call(
        "POST",
        &format!("/v1/runs/{id}/resume"),
        SELF,
        Some(json!({"approve": true})),
    );
    assert_eq!(r.status, 409, "{}", r.body);
    // Cancel.
    let id2 = s.run(SELF, json!({"pipeline": GATED})).json()["runId"]
        .as_str()
        .unwrap()
        .to_string();
    let r = s.call(
        "POST",
        &format!("/v1/runs/{id2}/resume"),
        SELF,
        Some(json!({"cancel": true})),
    );
    assert_eq!(r.json()["status"], "cancelled", "{}", r.body);
    assert_eq!(s.get_run(SELF, &id2).json()["status"], "cancelled");
    // By approvalId through /v1/resume, then its token again: 409.
    let v = s.run(SELF, json!({"pipeline": GATED})).json();
    let approval = v["requiresApproval"]["approvalId"].as_str().unwrap();
    let token = v["requiresApproval"]["resumeToken"].as_str().unwrap();
    let r = s.call(
        "POST",
        "/v1/resume",
        SELF,
        Some(json!({"approvalId": approval, "approve": true})),
    );
    assert_eq!(r.json()["status"], "ok", "{}", r.body);
    let r = s.call(
        "POST",
        "/v1/resume",
        SELF,
        Some(json!({"token": token, "approve": true})),
    );
    assert_eq!(r.status, 409, "{}", r.body);
    // Two resumes at once: exactly one wins.
    let id3 = s.run(SELF, json!({"pipeline": GATED})).json()["runId"]
        .as_str()
        .unwrap()
        .to_string();
    let statuses: Vec<u16> = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..4)
            .map(|_| {
                sc.spawn(|| {
                    s.call(
                        "POST",
                        &format!("/v1/runs/{id3}/resume"),
                        SELF,
                        Some(json!({"approve": true})),
                    )
                    .status
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 409).count(),
        3,
        "{statuses:?}"
    );
    assert_eq!(
        metric(&s, "lobster_runs_total{tenant=\"selfy\",status=\"ok\"}"),
        before + 3
    );
}

#[test]
fn sigterm_drains_then_restart_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let config = setup(dir.path(), "shutdown_grace_ms = 300", "");
    let mut s = start(&config);
    let paused = s.run(ACME, json!({"pipeline": GATED})).json()["runId"]
        .as_str()
        .unwrap()
        .to_string();
    let long = s
        .call(
            "POST",
            "/v1/runs?wait=0",
            ACME,
            Some(json!({"pipeline": "exec --shell 'sleep 20'", "timeoutMs": 60000})),
        )
        .json()["runId"]
        .as_str()
        .unwrap()
        .to_string();
    let short = s
        .call(
            "POST",
            "/v1/runs?wait=0",
            ACME,
            Some(json!({"pipeline": "exec --json --shell 'sleep 0.1; echo [7]'"})),
        )
        .json()["runId"]
        .as_str()
        .unwrap()
        .to_string();
    // Answered within its wait: its one record is a line of the run log.
    let answered = s.run(ACME, json!({"pipeline": "exec --json --shell 'echo [5]'"}));
    assert_eq!(answered.status, 200);
    let answered = answered.json()["runId"].as_str().unwrap().to_string();
    std::thread::sleep(Duration::from_millis(100));
    let started = Instant::now();
    let status = s.sigterm();
    assert!(status.success(), "{status:?}");
    assert!(started.elapsed() < Duration::from_secs(10));
    drop(s);
    // After a restart: the long run was cancelled by the shutdown, the
    // short one finished, the paused one resumes through a human's link.
    let s = start(&config);
    let rec = s.get_run(ACME, &long).json();
    assert_eq!(rec["status"], "cancelled", "{rec}");
    assert!(rec["reason"].as_str().unwrap().contains("shutdown"));
    assert_eq!(s.get_run(ACME, &short).json()["status"], "ok");
    let rec = s.get_run(ACME, &answered).json();
    assert_eq!(rec["status"], "ok", "{rec}");
    assert_eq!(rec["envelope"]["output"], json!([5]));
    let acme = dir.path().join("state/tenants/acme");
    assert!(!acme.join(format!("serve_run_{answered}.json")).exists());
    assert!(std::fs::read_dir(acme.join("runs")).unwrap().count() >= 1);
    let link = s.link_for(ACME, &paused);
    let r = s.decide_as(&link, ALICE, "approve");
    assert!(r.body.contains("<h1>Approved</h1>"), "{}", r.body);
    assert_eq!(
        s.get_run(ACME, &paused).json()["envelope"]["output"],
        json!([1, 2])
    );
}

#[test]
fn a_killed_server_reports_its_runs_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let config = setup(dir.path(), "", "");
    let mut s = start(&config);
    let id = s
        .call(
            "POST",
            "/v1/runs?wait=0",
            ACME,
            Some(json!({"pipeline": "exec --shell 'sleep 20'"})),
        )
        .json()["runId"]
        .as_str()
        .unwrap()
        .to_string();
    let answered = s.run(ACME, json!({"pipeline": "exec --json --shell 'echo [6]'"}));
    assert_eq!(answered.status, 200);
    let answered = answered.json()["runId"].as_str().unwrap().to_string();
    // Kill only once both are on disk, whatever the machine's load: the
    // long run's record says running, and the run log's writer has
    // appended the answered run's line (a SIGKILL loses nothing written;
    // only a power cut could lose the batch not yet synced).
    let deadline = Instant::now() + Duration::from_secs(60);
    let logged = |root: &Path| {
        let mut dirs = vec![root.to_path_buf()];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let p = e.path();
                let name = e.file_name().to_string_lossy().to_string();
                if p.is_dir() {
                    dirs.push(p);
                } else if name.starts_with("runs-") && name.ends_with(".log") {
                    let text = std::fs::read_to_string(&p).unwrap_or_default();
                    if text
                        .lines()
                        .any(|l| l.starts_with(&format!("{answered}\t")))
                    {
                        return true;
                    }
                }
            }
        }
        false
    };
    while s.get_run(ACME, &id).json()["status"] != "running" || !logged(dir.path()) {
        assert!(
            Instant::now() < deadline,
            "the running record or the answered run's log line never reached the disk"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    s.child.kill().unwrap();
    s.child.wait().unwrap();
    drop(s);
    let s = start(&config);
    assert_eq!(s.get_run(ACME, &id).json()["status"], "interrupted");
    let rec = s.get_run(ACME, &answered).json();
    assert_eq!(rec["envelope"]["output"], json!([6]), "{rec}");
    // An id of the right shape that was never handed out is a 404, even
    // one made "now" (the log reads only the segments of its window).
    let unknown = format!("{}{}", &answered[..8], "0".repeat(24));
    assert_eq!(s.get_run(ACME, &unknown).status, 404);
}

#[test]
fn help_and_bad_configs() {
    let out = Command::new(BIN)
        .args(["serve", "--help"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Example config:") && text.contains("[[tenant]]"),
        "{text}"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("serve.toml");
    std::fs::write(&path, "listne = \"127.0.0.1:0\"\n").unwrap();
    let out = Command::new(BIN)
        .args(["serve", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("listne") && err.contains("serve.toml"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
    // A token variable that is not set stops the server before it listens.
    std::fs::write(
        &path,
        "[[tenant]]\nname = \"a\"\ntoken_env = \"LOBSTER_TEST_UNSET_TOKEN\"\n",
    )
    .unwrap();
    let out = Command::new(BIN)
        .args(["serve", "--config"])
        .arg(&path)
        .env_remove("LOBSTER_TEST_UNSET_TOKEN")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("LOBSTER_TEST_UNSET_TOKEN is not set"));
}

/// One server process keeps loaded components in memory (the file memo):
/// a step file replaced between two runs is loaded afresh, and one a pin
/// in the run directory's `lobster.lock` does not match is refused.
#[test]
fn a_replaced_step_file_is_seen_by_the_next_run() {
    let Some(guests) = test_guests("a_replaced_step_file_is_seen_by_the_next_run", "probe.wasm")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let steps = dir.path().join("mysteps");
    std::fs::create_dir_all(&steps).unwrap();
    let file = steps.join("mine.wasm");
    std::fs::copy(guests.join("noop.wasm"), &file).unwrap();
    let config = setup(dir.path(), "", "steps = [\"mysteps\"]");
    let s = start(&config);
    let output = |s: &Server| {
        let r = s.run(ACME, json!({"pipeline": "mine args"}));
        assert_eq!(r.json()["ok"], true, "{}", r.body);
        r.json()["output"].clone()
    };
    // noop returns its (empty) input; the second run comes after the
    // file's times are settled (it is memoised then).
    assert_eq!(output(&s), json!([]));
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(output(&s), json!([]));
    assert_eq!(output(&s), json!([]));
    // Replaced by another component: the next run runs it (probe answers
    // `args` with what it was given).
    let tmp = steps.join("swap.tmp");
    std::fs::copy(guests.join("probe.wasm"), &tmp).unwrap();
    std::fs::rename(&tmp, &file).unwrap();
    let out = output(&s);
    assert_eq!(out.as_array().map(Vec::len), Some(1), "{out}");
    assert_eq!(out[0]["positional"], json!(["args"]), "{out}");
    // And back, rewritten in place.
    std::fs::write(&file, std::fs::read(guests.join("noop.wasm")).unwrap()).unwrap();
    assert_eq!(output(&s), json!([]));
}
