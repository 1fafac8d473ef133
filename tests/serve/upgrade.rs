//! A rolling upgrade: stores exactly as an older node left them when it
//! was killed (`runtime/tests/fixtures/run-records/upgrade/`, written by
//! the binary of the commit its README names) are served by this binary:
//! the run that was going on reads `interrupted` and keeps the fields a
//! newer node added to its record, the paused runs are listed, decided and
//! answered here, on the files store and on PostgreSQL
//! (`LOBSTER_TEST_PG_URL`).

use super::*;
use crate::own_pg::pg_url;
use crate::psql::psql;

const TOKEN: &str = "fixture-token";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/run-records/upgrade")
}

fn ids() -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixtures().join("ids.json")).unwrap()).unwrap()
}

/// Copy `from` to `to` with the store's modes (git keeps neither 0600 nor
/// 0700).
fn copy_tree(from: &Path, to: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(to).unwrap();
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o700)).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
    }
}

/// A newer node's additions to a record: a field this code does not know.
fn newer_fields() -> Value {
    json!({"lease": {"holder": "c-newer", "until": "2030-01-01T00:00:00Z"}})
}

fn serve_with(dir: &Path, state: &str, tenant: &str, node: &str) -> Server {
    std::fs::write(dir.join("trusted.toml"), "trust = \"trusted\"\n").unwrap();
    let config = format!(
        "state = \"{state}\"\nnode_id = \"{node}\"\n\
[[tenant]]\nname = \"{tenant}\"\ntoken_sha256 = \"{}\"\npolicy = \"trusted.toml\"\nself_approve = true\n",
        sha(TOKEN)
    );
    let path = dir.join(format!("{node}.toml"));
    std::fs::write(&path, config).unwrap();
    Server::spawn(
        Command::new(BIN)
            .args(["serve", "--config"])
            .arg(&path)
            .args(["--listen", "127.0.0.1:0"])
            .env("LOBSTER_STATE_DIR", dir.join(format!("local-{node}")))
            .env_remove("LOBSTER_POLICY")
            .env_remove("LOBSTER_STORE_LEASE_MS"),
    )
}

/// What this code must do with the old node's runs, through the API;
/// `stored(runId)` reads a record as the store holds it.
fn decide_the_old_node_s_runs(s: &Server, ids: &Value, stored: &dyn Fn(&str) -> Value) {
    let running = ids["running"].as_str().unwrap();
    let before = stored(running);
    assert_eq!(before["status"], "running", "{before}");
    let rec = s.get_run(TOKEN, running).json();
    assert_eq!(rec["status"], "interrupted", "{rec}");
    assert!(rec["reason"].as_str().unwrap().contains("stopped"), "{rec}");
    // Read, modified and written back here: every field the old record had
    // is kept (the newer node's too), in the same shape.
    let after = stored(running);
    for (k, v) in before.as_object().unwrap() {
        if k != "status" && k != "updatedAt" {
            assert_eq!(&after[k], v, "{k} of {after}");
        }
    }
    assert_eq!(after["lease"], newer_fields()["lease"], "{after}");
    assert_eq!(after["status"], "interrupted");

    let approval = ids["approval"].as_str().unwrap();
    let listed = s.approvals(TOKEN);
    assert!(listed.iter().any(|g| g["runId"] == approval), "{listed:?}");
    let paused = s.get_run(TOKEN, approval).json();
    assert_eq!(paused["status"], "needs_approval", "{paused}");
    assert_eq!(paused["lease"], newer_fields()["lease"], "{paused}");
    let r = s.call(
        "POST",
        &format!("/v1/runs/{approval}/resume"),
        TOKEN,
        Some(json!({"approve": true})),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["output"], json!([1, 2]), "{}", r.body);
    let again = s.call(
        "POST",
        &format!("/v1/runs/{approval}/resume"),
        TOKEN,
        Some(json!({"approve": true})),
    );
    assert_eq!(again.status, 409, "{}", again.body);

    let input = ids["input"].as_str().unwrap();
    let r = s.call(
        "POST",
        &format!("/v1/runs/{input}/resume"),
        TOKEN,
        Some(json!({"response": {"n": 3}})),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["status"], "ok", "{}", r.body);
    let rec = stored(input);
    assert_eq!(rec["status"], "ok", "{rec}");
    let agent = format!("tenant {}'s agent", rec["tenant"].as_str().unwrap());
    assert_eq!(rec["decidedBy"], agent, "{rec}");
    assert!(s.approvals(TOKEN).is_empty());
}

/// Add [`newer_fields`] to the JSON file at `path`.
fn add_newer_fields(path: &Path) {
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v.as_object_mut()
        .unwrap()
        .extend(newer_fields().as_object().unwrap().clone());
    std::fs::write(path, serde_json::to_string_pretty(&v).unwrap() + "\n").unwrap();
}

#[test]
fn an_old_node_s_files_store_is_served_by_this_one() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    copy_tree(&fixtures().join("files"), &state);
    let ids = &ids()["files"];
    let records = state.join("tenants/acme");
    let path = |id: &str| records.join(format!("serve_run_{id}.json"));
    for which in ["running", "approval"] {
        add_newer_fields(&path(ids[which].as_str().unwrap()));
    }
    let s = serve_with(dir.path(), state.to_str().unwrap(), "acme", "b-new");
    let stored = |id: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(path(id)).unwrap()).unwrap()
    };
    decide_the_old_node_s_runs(&s, ids, &stored);
}

#[test]
fn an_old_node_s_postgresql_rows_are_served_by_this_one() {
    let Some(url) = pg_url() else { return };
    let ids = ids()["pg"].clone();
    let tenant = "fixture-upgrade";
    let root = ids["rootTenant"].as_str().unwrap();
    let clear = format!(
        "DELETE FROM lobster_kv WHERE tenant = '{tenant}' OR (tenant = '{root}' AND key = 'serve_node_a-old.json'); \
         DELETE FROM lobster_runs WHERE tenant = '{tenant}'; DELETE FROM lobster_queue WHERE tenant = '{tenant}'; \
         DELETE FROM lobster_journal WHERE tenant = '{tenant}'"
    );
    let dir = tempfile::tempdir().unwrap();
    // This node migrates the schema (a no-op on a current one), then the
    // old node's rows go in as it left them.
    let s = serve_with(dir.path(), &url, tenant, "b-new");
    psql(&url, &clear);
    for table in [
        "lobster_kv",
        "lobster_runs",
        "lobster_queue",
        "lobster_journal",
    ] {
        let rows = std::fs::File::open(fixtures().join(format!("pg/{table}.copy"))).unwrap();
        let out = Command::new("psql")
            .arg(&url)
            .args([
                "-v",
                "ON_ERROR_STOP=1",
                "-qc",
                &format!("COPY {table} FROM STDIN"),
            ])
            .stdin(rows)
            .output()
            .unwrap();
        assert!(out.status.success(), "COPY {table}: {out:?}");
    }
    let add = newer_fields().to_string();
    for which in ["running", "approval"] {
        let id = ids[which].as_str().unwrap();
        psql(
            &url,
            &format!(
                "UPDATE lobster_kv SET value = (value::jsonb || '{add}'::jsonb)::text \
                 WHERE tenant = '{tenant}' AND key = 'serve_run_{id}.json'"
            ),
        );
    }
    let stored = |id: &str| -> Value {
        let text = psql(
            &url,
            &format!(
                "SELECT value FROM lobster_kv WHERE tenant = '{tenant}' AND key = 'serve_run_{id}.json'"
            ),
        );
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
    };
    decide_the_old_node_s_runs(&s, &ids, &stored);
    let rec = stored(ids["approval"].as_str().unwrap());
    assert_eq!(rec["node"], "b-new", "{rec}");
    drop(s);
    psql(&url, &clear);
}

/// The keys of `v` in order, and of its `gate` record (a resume's).
fn shape(v: &Value) -> Vec<String> {
    let mut keys: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
    if let Some(gate) = v.get("gate") {
        keys.extend(shape(gate).into_iter().map(|k| format!("gate.{k}")));
    }
    keys
}

/// `runtime/tests/fixtures/run-records/files/<name>.json`.
fn old_record(name: &str) -> Value {
    let path = fixtures().join(format!("../files/{name}.json"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn this_node_writes_records_in_the_shape_older_nodes_read() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let s = serve_with(dir.path(), state.to_str().unwrap(), "acme", "b-new");
    let records = state.join("tenants/acme");
    let stored = |key: &str| -> Value {
        let text = std::fs::read_to_string(records.join(format!("{key}.json"))).unwrap();
        serde_json::from_str(&text).unwrap()
    };
    let same = |key: &str, fixture: &str| {
        let (now, then) = (stored(key), old_record(fixture));
        assert_eq!(shape(&now), shape(&then), "{fixture}: {now}");
        if let Some(env) = then.get("envelope") {
            let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
            assert_eq!(keys(&now["envelope"]), keys(env), "{fixture}: {now}");
        }
        now
    };
    let start = |pipeline: &str, query: &str| -> String {
        let r = s.call(
            "POST",
            &format!("/v1/runs{query}"),
            TOKEN,
            Some(json!({ "pipeline": pipeline })),
        );
        assert!(r.status == 200 || r.status == 202, "{}", r.body);
        r.json()["runId"].as_str().unwrap().to_string()
    };
    let settle = |id: &str| {
        let started = Instant::now();
        while s.get_run(TOKEN, id).json()["status"] == "running" {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "{id} never settled"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let id = start("exec --json --shell 'sleep 1; echo [2]'", "?wait=0");
    same(&format!("serve_run_{id}"), "running");
    settle(&id);
    same(&format!("serve_run_{id}"), "ok");
    let id = start("exec --shell 'sleep 1; exit 3'", "?wait=0");
    settle(&id);
    same(&format!("serve_run_{id}"), "failed");
    let gated = "exec --json --shell 'echo [1,2]' | approve --prompt 'Send both?'";
    let id = start(gated, "");
    same(&format!("serve_run_{id}"), "needs_approval");
    same(&format!("serve_pending_{id}"), "pending-approval");
    let r = s.call(
        "POST",
        &format!("/v1/runs/{id}/resume"),
        TOKEN,
        Some(json!({"cancel": true})),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        same(&format!("serve_run_{id}"), "cancelled")["status"],
        "cancelled"
    );
    let ask = r#"exec --json --shell 'echo [1]' | ask --prompt 'How many?' --schema '{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}'"#;
    let id = start(ask, "");
    same(&format!("serve_run_{id}"), "needs_input");
    same(&format!("serve_pending_{id}"), "pending-input");
    let slow = "exec --json --shell 'echo [1]' | approve --prompt 'Go?' | exec --shell 'sleep 2; echo done'";
    let id = start(slow, "");
    let r = s.call(
        "POST",
        &format!("/v1/runs/{id}/resume?wait=0"),
        TOKEN,
        Some(json!({"approve": true})),
    );
    assert_eq!(r.status, 202, "{}", r.body);
    same(&format!("serve_run_{id}"), "resuming");
    settle(&id);
    same(&format!("serve_run_{id}"), "resumed-ok");
}
