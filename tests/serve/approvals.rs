//! `GET /v1/approvals` over a tenant's store as it is, not as it should be.

use super::*;

/// A run record that is JSON but not a run record (hand-edited, or written
/// by something else) is left out of the list and named in the log — its
/// key, never its content — and the other paused runs are still listed.
#[test]
fn an_unreadable_run_record_is_skipped_and_the_others_listed() {
    let dir = tempfile::tempdir().unwrap();
    let config = setup(dir.path(), "", "");
    let log = dir.path().join("stderr.log");
    let s = Server::spawn_with(
        Command::new(BIN)
            .args(["serve", "--config"])
            .arg(&config)
            .args(["--listen", "127.0.0.1:0"])
            .env("BETA_TOKEN", BETA)
            .env_remove("LOBSTER_POLICY")
            .stdin(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap()),
    );
    let paused = |_: usize| {
        let v = s.run(ACME, json!({"pipeline": GATED})).json();
        assert_eq!(v["status"], "needs_approval", "{v}");
        v["runId"].as_str().unwrap().to_string()
    };
    let (bad, good) = (paused(0), paused(1));
    assert_eq!(s.approvals(ACME).len(), 2);

    let key = format!("serve_run_{bad}");
    let file = dir
        .path()
        .join("state/tenants/acme")
        .join(format!("{key}.json"));
    assert!(file.is_file(), "{}", file.display());
    std::fs::write(
        &file,
        json!({"runId": bad, "status": 7, "note": "do-not-log-me"}).to_string(),
    )
    .unwrap();

    let listed = s.approvals(ACME);
    let ids: Vec<&str> = listed.iter().filter_map(|a| a["runId"].as_str()).collect();
    assert_eq!(ids, [good.as_str()], "{listed:?}");
    // The run itself is a 500 naming it (as before), not a crash.
    let r = s.get_run(ACME, &bad);
    assert_eq!(r.status, 500, "{}", r.body);

    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| l.contains(&key)).collect();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("cannot be read") && l.contains("GET /v1/approvals")),
        "{text}"
    );
    assert!(!text.contains("do-not-log-me"), "{text}");
}
