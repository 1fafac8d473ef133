//! Tenants and their tokens: each tenant sees only its own runs, journals
//! and records, names no file of the server's, cannot forge the gateway's
//! records, and gets no unsigned step where its policy requires signatures.

use super::{
    mcp_call, metric, setup, shapes, start, test_guests, Server, ACME, BETA, BIN, GATED, SELF,
};
use serde_json::{json, Value};
use std::process::Command;
use std::time::Duration;

#[test]
fn tenants_are_isolated_and_tokens_checked() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(&setup(dir.path(), "", ""));
    assert_eq!(s.raw("GET", "/healthz", &[], b"").body, "ok");
    let r = s.run(ACME, json!({"pipeline": GATED}));
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    assert_eq!(v["status"], "needs_approval");
    assert_eq!(v["protocolVersion"], 1);
    let id = v["runId"].as_str().unwrap().to_string();
    assert_eq!(id.len(), 32);
    // Another tenant's run does not exist for beta.
    let r = s.get_run(BETA, &id);
    assert_eq!(r.status, 404, "{}", r.body);
    assert!(s.approvals(BETA).is_empty());
    assert_eq!(s.approvals(ACME).len(), 1);
    let r = s.call(
        "POST",
        &format!("/v1/runs/{id}/resume"),
        BETA,
        Some(json!({"approve": false})),
    );
    assert_eq!(r.status, 404);
    // Bad, missing tokens.
    let r = s.get_run("nope", &id);
    assert_eq!(r.status, 401);
    assert_eq!(r.json()["error"]["type"], "unauthorized");
    let r = s.raw("GET", &format!("/v1/runs/{id}"), &[], b"");
    assert_eq!(r.status, 401);
    // Separate state: each tenant has its own store directory.
    let root = dir.path().join("state/tenants");
    assert!(std::fs::read_dir(root.join("acme")).unwrap().any(|e| e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .starts_with("pipeline_resume_")));
    assert!(
        !root.join("beta").exists() || std::fs::read_dir(root.join("beta")).unwrap().count() == 0
    );
    // beta has no policy file: untrusted, so host processes are refused,
    // and an inline workflow is judged the same way.
    let r = s
        .run(BETA, json!({"pipeline": "exec --shell 'echo hi'"}))
        .json();
    assert_eq!(r["ok"], false);
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("untrusted policy forbids"),
        "{r}"
    );
    let wf = "name: w\nsteps:\n  - id: a\n    run: echo hi\n";
    let r = s.run(BETA, json!({"workflowText": wf})).json();
    let msg = r["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("workflowText:3:5") && !msg.contains("tenants/"),
        "{msg}"
    );
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("untrusted policy forbids"),
        "{r}"
    );
    assert_eq!(
        s.settled(BETA, r["runId"].as_str().unwrap())["status"],
        "failed"
    );
    // acme's trusted policy runs the same inline workflow.
    let r = s.run(ACME, json!({"workflowText": wf})).json();
    assert_eq!(r["status"], "ok", "{r}");
    // Bad requests name the problem.
    let r = s.run(ACME, json!({"pipeline": "head", "workflow": "x"}));
    assert_eq!(r.status, 400);
    let r = s.run(ACME, json!({"pipeline": "wf.lobster"}));
    assert_eq!(r.status, 400);
    assert!(metric(&s, "lobster_policy_refusals_total{tenant=\"beta\"}") >= 2);
}

#[test]
fn tenants_cannot_name_the_servers_files() {
    // Tenants share the server's working directory; a workflow file there
    // (another tenant's catalog, say) is not theirs to run, by either door.
    let dir = tempfile::tempdir().unwrap();
    let config = setup(dir.path(), "", "");
    std::fs::write(
        dir.path().join("secret.lobster"),
        "name: secret\nsteps:\n  - id: a\n    pipeline: exec --json --shell 'echo [42]'\n",
    )
    .unwrap();
    let s = Server::spawn(
        Command::new(BIN)
            .current_dir(dir.path())
            .args(["serve", "--config"])
            .arg(&config)
            .args(["--listen", "127.0.0.1:0"])
            .env("BETA_TOKEN", BETA)
            .env_remove("LOBSTER_POLICY"),
    );
    for (args, says) in [
        (
            json!({"workflow": "secret.lobster"}),
            "not in this tenant's catalog",
        ),
        (
            json!({"pipeline": "secret.lobster"}),
            "pipeline names a workflow file",
        ),
        (
            json!({"pipeline": "json", "cwd": "."}),
            "cwd is not accepted",
        ),
    ] {
        let v = mcp_call(&s, ACME, "lobster_run", args.clone());
        assert_eq!(v["isError"], true, "{args}: {v}");
        assert!(v.to_string().contains(says), "{args}: {v}");
        assert!(!v.to_string().contains("42"), "{args}: {v}");
    }
    // The same through the runs API.
    let r = s.run(ACME, json!({"pipeline": "secret.lobster"}));
    assert_eq!(r.status, 400, "{}", r.body);
    let r = s.run(ACME, json!({"pipeline": "json", "cwd": "."}));
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.contains("unknown field cwd"), "{}", r.body);
}

/// A tenant's runs share its store with the gateway's own records; a run that
/// tries to forge a pending gate (which humans would see in the approvals
/// list) or a run record through `state.set` is refused.
#[test]
fn runs_cannot_forge_the_gateways_records() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(&setup(dir.path(), "", ""));
    for key in ["serve_pending_0123", "serve_run_0123", "pipeline_resume_x"] {
        let r = s.run(
            ACME,
            json!({"pipeline": format!("exec --json --shell 'echo 1' | state.set {key}")}),
        );
        let env = r.json();
        assert_eq!(env["ok"], false, "{key}: {env}");
        assert!(
            env["error"]["message"]
                .as_str()
                .unwrap()
                .contains("is reserved"),
            "{key}: {env}"
        );
    }
    assert!(s.approvals(ACME).is_empty());
    // Ordinary keys still work.
    let r = s.run(
        ACME,
        json!({"pipeline": "exec --json --shell 'echo 1' | state.set servers"}),
    );
    assert_eq!(r.json()["ok"], true, "{}", r.body);
}

#[test]
fn runs_and_their_journals_are_listed_per_tenant() {
    let dir = tempfile::tempdir().unwrap();
    let config = setup(dir.path(), "", "");
    let s = start(&config);
    let r = s.run(
        ACME,
        json!({"pipeline": "exec --json --shell 'echo [1,2]' | head --n 1"}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let id = r.json()["runId"].as_str().unwrap().to_string();
    let list = s.call("GET", "/v1/runs?limit=10", ACME, None);
    assert_eq!(list.status, 200, "{}", list.body);
    let runs = list.json()["runs"].as_array().cloned().unwrap();
    // The run's id is its journal's id.
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["runId"], id.as_str());
    assert_eq!(runs[0]["status"], "ok");
    assert_eq!(runs[0]["door"], "serve");
    // The shape every door lists a run in (app::runs::RunRow), serve's
    // without the command line's durationMs.
    assert_eq!(
        shapes::keys(&list.json()),
        ["runs", "nextCursor", "pageUrl"]
    );
    assert_eq!(shapes::keys(&runs[0]), shapes::run_row_keys(&[]));
    let journal = s.call("GET", &format!("/v1/runs/{id}/journal"), ACME, None);
    assert_eq!(journal.status, 200, "{}", journal.body);
    let kinds: Vec<String> = journal
        .body
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["event"]["kind"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(kinds, ["run_started", "step", "step", "run_ended"]);
    // Checked offline by the CLI.
    let file = dir.path().join("run.jsonl");
    std::fs::write(&file, &journal.body).unwrap();
    let out = std::process::Command::new(BIN)
        .args(["verify", file.to_str().unwrap(), "--run", &id])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    // Another tenant sees neither the run nor its journal.
    let other = s.call("GET", "/v1/runs", BETA, None);
    assert_eq!(other.json()["runs"], json!([]), "{}", other.body);
    assert_eq!(
        s.call("GET", &format!("/v1/runs/{id}/journal"), BETA, None)
            .status,
        404
    );
    assert_eq!(s.call("GET", "/v1/runs?limit=0", ACME, None).status, 400);
    let ok = s.call("GET", "/v1/runs?status=ok", ACME, None);
    assert_eq!(ok.status, 200, "{}", ok.body);
    let typo = s.call("GET", "/v1/runs?status=done", ACME, None);
    assert_eq!(typo.status, 400, "{}", typo.body);
    assert!(
        typo.body.contains("no run has status \\\"done\\\"") && typo.body.contains("pruned"),
        "{}",
        typo.body
    );
}

/// A tenant reads its runs' journals, so they name no path on the server:
/// the run's directory, its workflow file (a `workflowText` run's file is
/// kept in the tenant's workdir) and an error that printed the directory
/// are recorded relative to the tenant's root — as written, so the journal
/// the tenant gets still verifies, and the operator's export is that same
/// chain.
#[test]
fn a_tenant_s_journal_names_no_path_on_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let config = setup(dir.path(), "", "");
    let s = start(&config);
    let wf =
        "name: where\nsteps:\n  - id: where\n    run: echo \"failed in $(pwd)/x\" >&2; exit 3\n";
    let r = s.run(ACME, json!({"workflowText": wf}));
    let id = r.json()["runId"].as_str().unwrap().to_string();
    assert_eq!(s.settled(ACME, &id)["status"], "failed", "{}", r.body);
    let journal = s.call("GET", &format!("/v1/runs/{id}/journal"), ACME, None);
    assert_eq!(journal.status, 200, "{}", journal.body);
    let server = [
        dir.path().to_string_lossy().into_owned(),
        dir.path()
            .canonicalize()
            .unwrap()
            .to_string_lossy()
            .into_owned(),
    ];
    for p in &server {
        assert!(
            !journal.body.contains(p.as_str()),
            "{p} in {}",
            journal.body
        );
    }
    let events: Vec<Value> = journal
        .body
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["event"].clone())
        .collect();
    let started = &events[0];
    assert_eq!(started["kind"], "run_started");
    assert_eq!(started["cwd"], ".", "{started}");
    let file = started["request"]["file"].as_str().unwrap();
    assert!(!file.starts_with('/') && !file.is_empty(), "{file}");
    let error = events.iter().find(|e| e["kind"] == "error").unwrap();
    assert!(
        error["message"].as_str().unwrap().contains("failed in ./x"),
        "{error}"
    );
    // The tenant's copy verifies offline.
    let path = dir.path().join("run.jsonl");
    std::fs::write(&path, &journal.body).unwrap();
    let out = std::process::Command::new(BIN)
        .args(["verify", path.to_str().unwrap(), "--run", &id])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    // The run list names it by its workdir-relative file, not a server path.
    let list = s.call("GET", "/v1/runs?limit=10", ACME, None).body;
    for p in &server {
        assert!(!list.contains(p.as_str()), "{list}");
    }
}

/// A tenant whose policy requires signed steps gets no unsigned step, even
/// one this server process already loaded for another tenant's run (the
/// admission is asked on every load, memoised or not).
#[test]
fn a_tenant_requiring_signatures_refuses_an_unsigned_step_another_tenant_loaded() {
    let Some(guests) = test_guests(
        "a_tenant_requiring_signatures_refuses_an_unsigned_step_another_tenant_loaded",
        "noop.wasm",
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let steps = dir.path().join("mysteps");
    std::fs::create_dir_all(&steps).unwrap();
    std::fs::copy(guests.join("noop.wasm"), steps.join("noop.wasm")).unwrap();
    let key = lobster::signing::SecretKey::generate("ci").unwrap();
    std::fs::write(
        dir.path().join("signed.toml"),
        format!(
            "trust = \"trusted\"\n[signers]\nkeys = [\"{}\"]\nrequire_signed = true\n",
            key.public().line()
        ),
    )
    .unwrap();
    let config = setup(
        dir.path(),
        "",
        "steps = [\"mysteps\"]\npolicy = \"signed.toml\"",
    );
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replacen("policy = \"trusted.toml\"\nsteps", "steps", 1)
        .replace(
            "[[tenant]]\nname = \"selfy\"",
            "[[tenant]]\nname = \"selfy\"\nsteps = [\"mysteps\"]",
        );
    std::fs::write(&config, text).unwrap();
    let s = start(&config);
    let r = s.run(SELF, json!({"pipeline": "noop"}));
    assert_eq!(r.json()["ok"], true, "{}", r.body);
    std::thread::sleep(Duration::from_millis(200));
    let r = s.run(SELF, json!({"pipeline": "noop"}));
    assert_eq!(r.json()["ok"], true, "{}", r.body);
    let r = s.run(ACME, json!({"pipeline": "noop"}));
    let msg = r.json()["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        msg.contains("policy refuses step noop") && msg.contains("is not signed"),
        "{}",
        r.body
    );
    // Signed with the tenant's key, it runs.
    let sig = lobster::signing::sign(
        &key,
        &std::fs::read(steps.join("noop.wasm")).unwrap(),
        "noop.wasm",
    )
    .unwrap();
    lobster::signing::sidecar::write(&steps.join("noop.wasm"), &sig).unwrap();
    let r = s.run(ACME, json!({"pipeline": "noop"}));
    assert_eq!(r.json()["ok"], true, "{}", r.body);
}
