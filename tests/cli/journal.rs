//! The run journal through the real binary: every run leaves one (files and
//! PostgreSQL), `runs list/show/export`, `approvals`, `verify` (tampering
//! named), and a run killed mid-step leaves a chain that verifies.

use crate::common::{read, token_of, write, Env, Run};
use serde_json::Value;
use std::time::Duration;

fn runs(env: &Env) -> Vec<Value> {
    let r = env.run(&["runs", "list", "--json"]);
    assert_eq!(r.code, 0, "{r:?}");
    r.json().as_array().cloned().unwrap()
}

fn export(env: &Env, id: &str) -> String {
    let r = env.run(&["runs", "export", id]);
    assert_eq!(r.code, 0, "{r:?}");
    r.stdout
}

fn verify(env: &Env, text: &str) -> Run {
    let path = env.work_path("run.jsonl");
    std::fs::write(&path, text).unwrap();
    env.run(&["verify", path.to_str().unwrap()])
}

fn kinds(journal: &str) -> Vec<String> {
    journal
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|r| r["event"]["kind"].as_str().map(str::to_string))
        .collect()
}

/// A pause, a resume with a named approver, the listing, the export and its
/// verification, on the store at `url` (`None`: files).
fn a_paused_and_resumed_run_is_journaled(url: Option<&str>) {
    let env = Env::with_store(url);
    let paused = env.tool("exec --json --shell 'echo [1,2]' | approve --prompt 'send?'");
    assert_eq!(paused.code, 0, "{paused:?}");
    // The envelope is exactly the reference's: no run id in it.
    assert!(!paused.stdout.contains("runId"), "{}", paused.stdout);
    // (On PostgreSQL other tests' runs share the tenant: find ours by its
    // approval id.)
    let approval_id = paused.json()["requiresApproval"]["approvalId"].clone();
    let pending = env.run(&["approvals", "--json"]).json();
    let ours = pending
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["gate"] == approval_id)
        .unwrap_or_else(|| panic!("{approval_id} not pending: {pending}"))
        .clone();
    let id = ours["runId"].as_str().unwrap().to_string();
    assert_eq!(ours["status"], "needs_approval");

    let token = token_of(&paused.json());
    let done = env.run(&[
        "resume",
        "--token",
        &token,
        "--approve",
        "yes",
        "--approver",
        "alice",
    ]);
    assert_eq!(done.code, 0, "{done:?}");

    let listed = runs(&env);
    let run = listed
        .iter()
        .find(|r| r["runId"] == id.as_str())
        .expect("listed");
    assert_eq!(run["status"], "ok");
    assert_eq!(run["gate"], Value::Null);
    // The shape every door lists a run in (app::runs::RunRow), with the
    // command line's durationMs.
    assert_eq!(
        crate::shapes::keys(run),
        crate::shapes::run_row_keys(&["durationMs"])
    );
    assert!(
        run["durationMs"].as_i64().is_some_and(|ms| ms >= 0),
        "{run}"
    );
    assert!(!env
        .run(&["approvals", "--json"])
        .json()
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["runId"] == id.as_str()));

    let text = export(&env, &id);
    let k = kinds(&text);
    assert_eq!(
        k,
        [
            "run_started",
            "step",
            "step",
            "gate_opened",
            "run_ended",
            "run_resumed",
            "decision",
            "run_ended"
        ],
        "{text}"
    );
    assert!(text.contains("\"approver\":\"alice\""), "{text}");
    assert!(
        text.contains("\"decided_by\":\"the operator (alice)\""),
        "{text}"
    );
    assert!(text.contains("\"checkpoint\""), "{text}");
    let v = verify(&env, &text);
    assert_eq!(v.code, 0, "{v:?}");
    assert!(
        v.stdout.contains("verified") && v.stdout.contains("ended ok"),
        "{v:?}"
    );

    // Tampering with the export: an event edited, one dropped, the tail cut.
    let lines: Vec<&str> = text.lines().collect();
    let edited = text.replacen("\"prompt\":\"send?\"", "\"prompt\":\"fine\"", 1);
    let r = verify(&env, &edited);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stdout.contains("event 3 (gate_opened) was changed"),
        "{r:?}"
    );
    let dropped: String = lines
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 5)
        .map(|(_, l)| format!("{l}\n"))
        .collect();
    let r = verify(&env, &dropped);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stdout.contains("event 5"), "{r:?}");
    let mut cut: Vec<&str> = lines.clone();
    cut.remove(cut.len() - 2); // the last event, keeping the checkpoint
    let r = verify(&env, &(cut.join("\n") + "\n"));
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stdout.contains("missing (truncated)"), "{r:?}");

    // The timeline names the approver and the gate.
    let show = env.run(&["runs", "show", &id]);
    assert!(show.stdout.contains("approve by alice via cli"), "{show:?}");
    assert!(show.stdout.contains("chain verifies"), "{show:?}");
}

#[test]
fn a_paused_and_resumed_run_is_journaled_on_files() {
    a_paused_and_resumed_run_is_journaled(None);
}

#[test]
fn a_paused_and_resumed_run_is_journaled_on_postgres() {
    if let Some(url) = crate::own_pg::pg_url() {
        a_paused_and_resumed_run_is_journaled(Some(&url));
    }
}

/// The `step` events of the latest run's `exec` stages.
fn exec_steps(env: &Env) -> Vec<Value> {
    let id = runs(env)[0]["runId"].as_str().unwrap().to_string();
    export(env, &id)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|r| r["event"].clone())
        .filter(|e| e["kind"] == "step" && e["name"] == "exec")
        .collect()
}

/// A pipeline's `exec` stage records how its process ended: exit code, its
/// stdout in full with its digest (up to 64 KiB: past it the first 64 KiB
/// and no digest), the digest of what it was fed; a stage the next one
/// stopped reading records no exit code. A record with the whole output
/// and an exit code is `replayable` (a replay decodes it instead of running
/// the process); the others are not.
#[test]
fn an_exec_stage_records_its_exit_code_and_output() {
    let env = Env::new();
    let digest = |s: &str| blake3::hash(s.as_bytes()).to_hex().to_string();
    let r =
        env.tool("exec --stdin json --json --shell 'cat; echo' | exec --shell 'echo b; exit 0'");
    assert_eq!(r.code, 0, "{r:?}");
    let steps = exec_steps(&env);
    assert_eq!(steps.len(), 2, "{steps:?}");
    assert_eq!(steps[0]["id"], "0");
    assert_eq!(steps[0]["step_kind"], "host");
    assert_eq!(steps[0]["exit_code"], 0);
    assert_eq!(steps[0]["output"], "[]\n", "{steps:?}");
    assert_eq!(steps[0]["output_digest"], digest("[]\n").as_str());
    assert_eq!(steps[0]["input_digest"], digest("[]").as_str());
    assert_eq!(steps[0]["replayable"], Value::Null, "absent: replayable");
    assert_eq!(steps[1]["id"], "1");
    assert_eq!(steps[1]["output"], "b\n");
    assert_eq!(steps[1]["input_digest"], Value::Null, "{steps:?}");

    let r = env.tool("exec --shell 'echo out; echo err >&2; exit 3'");
    assert_eq!(r.code, 1, "{r:?}");
    let steps = exec_steps(&env);
    assert_eq!(steps[0]["exit_code"], 3, "{steps:?}");
    assert_eq!(steps[0]["ok"], false);
    assert_eq!(steps[0]["output"], "out\n");
    assert_eq!(steps[0]["replayable"], Value::Null, "absent: replayable");

    // 100,000 bytes: the first 64 KiB kept, no digest.
    let r = env.tool("exec --shell 'head -c 100000 /dev/zero | tr \"\\0\" x; echo' | json");
    assert_eq!(r.code, 0, "{r:?}");
    let steps = exec_steps(&env);
    assert_eq!(steps[0]["exit_code"], 0, "{steps:?}");
    assert_eq!(steps[0]["output"].as_str().unwrap().len(), 64 * 1024);
    assert_eq!(steps[0]["output_digest"], Value::Null);
    assert_eq!(steps[0]["replayable"], false);

    // Stopped by `head`: killed, so no exit code.
    let r = env.tool("exec --shell 'yes' | head --n 2");
    assert_eq!(r.code, 0, "{r:?}");
    let steps = exec_steps(&env);
    assert_eq!(steps.len(), 1, "{steps:?}");
    assert_eq!(steps[0]["exit_code"], Value::Null, "{steps:?}");
    assert_eq!(steps[0]["output"], Value::Null, "{steps:?}");
    assert_eq!(steps[0]["replayable"], false);
}

#[test]
fn human_mode_names_the_run_on_stderr_and_tool_mode_does_not() {
    let env = Env::new();
    let human = env.run(&["run", "commands.list | head --n 1 | pick name"]);
    assert_eq!(human.code, 0, "{human:?}");
    let id = runs(&env)[0]["runId"].as_str().unwrap().to_string();
    assert!(human.stderr.ends_with(&format!("run {id}\n")), "{human:?}");
    let tool = env.tool("commands.list | head --n 1");
    assert_eq!(tool.stderr, "", "{tool:?}");
    // A run that fails to parse is journaled too, as an error.
    let bad = env.run(&["run", "nosuchcommand | head"]);
    assert_eq!(bad.code, 1, "{bad:?}");
    let listed = runs(&env);
    assert_eq!(listed.len(), 3);
    assert_eq!(listed[0]["status"], "error");
    assert_eq!(
        env.run(&["runs", "list", "--json", "--status", "error"])
            .json()
            .as_array()
            .unwrap()
            .len(),
        1
    );
    // A status no run can have is refused, naming the ones there are.
    let typo = env.run(&["runs", "list", "--status", "failed"]);
    assert_eq!(typo.code, 2, "{typo:?}");
    assert!(
        typo.stderr
            .contains("--status: no run has status \"failed\"")
            && typo
                .stderr
                .contains("needs_approval, needs_input, ok, error"),
        "{typo:?}"
    );
}

#[test]
fn a_call_and_a_workflow_record_their_door_steps_and_request() {
    let env = Env::new();
    let wf = write(
        &env,
        "wf.lobster",
        "name: demo\nargs:\n  who: {default: world}\nsteps:\n  - id: hello\n    run: echo hello ${who}\n  - id: count\n    pipeline: exec --json --shell 'echo [1,2,3]' | head --n 2\n",
    );
    let r = env.run(&[
        "run",
        "--mode",
        "tool",
        wf.to_str().unwrap(),
        "--args-json",
        "{\"who\":\"journal\"}",
    ]);
    assert_eq!(r.code, 0, "{r:?}");
    let call = env.run_with_stdin(
        &["call"],
        "{\"action\": \"run\", \"pipeline\": \"commands.list | head --n 1\"}",
    );
    assert_eq!(call.code, 0, "{call:?}");
    let listed = runs(&env);
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert_eq!(listed[0]["door"], "call");
    assert_eq!(listed[1]["door"], "cli");
    let text = export(&env, listed[1]["runId"].as_str().unwrap());
    let start: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let request = &start["event"]["request"];
    assert_eq!(request["kind"], "workflow");
    // The workflow file's content, in full, and the args as given.
    assert_eq!(request["text"].as_str().unwrap(), read(&wf));
    assert_eq!(request["args"]["who"], "journal");
    // The host line: its exit code and its output in full.
    let host: Value = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|r| r["event"]["step_kind"] == "host" && r["event"]["id"] == "hello")
        .expect("the shell step's event");
    assert_eq!(host["event"]["exit_code"], 0);
    assert_eq!(host["event"]["output"], "hello journal\n");
    assert_eq!(host["event"]["within"], Value::Null, "{text}");
    // The pipeline step's stages say which workflow step they ran in.
    let stages: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|r| r["event"].clone())
        .filter(|e| e["kind"] == "step" && (e["name"] == "exec" || e["name"] == "head"))
        .collect();
    assert_eq!(stages.len(), 2, "{text}");
    assert!(stages.iter().all(|e| e["within"] == "count"), "{stages:?}");
    // The timeline names each step by its id, what it was, and the
    // workflow step a stage ran in.
    let show = env.run(&["runs", "show", listed[1]["runId"].as_str().unwrap()]);
    for line in [
        "step          hello: host run ",
        "step          0: host exec in step count ",
        "step          1: builtin head in step count ",
        "step          count: pipeline ",
    ] {
        assert!(show.stdout.contains(line), "{line:?} in {show:?}");
    }
    // Digest rule 2: recorded in the start; a workflow step's output digest
    // is of its stdout text as the run had it (not of its result printed).
    assert_eq!(start["event"]["digests"], 2, "{text}");
    let count: Value = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|r| r["event"]["step_kind"] == "pipeline" && r["event"]["id"] == "count")
        .expect("the pipeline step's event");
    assert_eq!(
        count["event"]["output_digest"],
        blake3::hash(b"[1,2]").to_hex().as_str(),
        "{text}"
    );
    // The run's output is that step's items: its end takes the step's
    // digest (its stdout is the output's JSON text) — the same bytes.
    let ended: Value = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|r| r["event"]["kind"] == "run_ended")
        .expect("the run's end");
    assert_eq!(
        ended["event"]["output_digest"], count["event"]["output_digest"],
        "{text}"
    );
    // Env names, never values.
    assert!(
        !text.contains(env.state.path().to_str().unwrap()),
        "an env value leaked"
    );
    assert_eq!(verify(&env, &text).code, 0);
}

#[test]
fn a_run_killed_during_a_step_leaves_a_chain_that_verifies() {
    let env = Env::new();
    let pidfile = env.work_path("pid");
    let wf = write(
        &env,
        "slow.lobster",
        &format!(
            "steps:\n  - id: first\n    run: echo one\n  - id: slow\n    run: echo $$ > {}; sleep 30\n",
            pidfile.display()
        ),
    );
    let mut child = env.spawn(&["run", "--mode", "tool", wf.to_str().unwrap()]);
    for _ in 0..400 {
        if read(&pidfile).ends_with('\n') {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    assert!(
        read(&pidfile).ends_with('\n'),
        "the slow step never started"
    );
    // The first step's records reach the segment within the writer's
    // window (100 ms) without waiting for the run.
    std::thread::sleep(Duration::from_millis(400));
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = child.wait();
    let listed = runs(&env);
    assert_eq!(listed[0]["status"], "running");
    let id = listed[0]["runId"].as_str().unwrap();
    let text = export(&env, id);
    let r = verify(&env, &text);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("no end recorded"), "{r:?}");
    assert_eq!(kinds(&text), ["run_started", "step"]);
}

/// Processes running at once append to one journal directory: each takes
/// the index's lock per write and appends to the segment the index names
/// (or the newest), so every run's chain verifies whole and `runs list`
/// lists each once, ended. After a prune removed every segment, the next
/// process makes one.
#[test]
fn processes_appending_at_once_leave_chains_that_verify_and_one_listing() {
    let env = Env::new();
    let wf = write(
        &env,
        "three.lobster",
        "steps:\n  - id: a\n    run: echo one\n  - id: b\n    run: sleep 0.3; echo two\n  - id: c\n    run: echo three\n",
    );
    let wf = wf.to_str().unwrap();
    let children: Vec<_> = (0..6)
        .map(|_| env.spawn(&["run", "--mode", "tool", wf]))
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{out:?}");
    }
    let listed = runs(&env);
    assert_eq!(listed.len(), 6, "{listed:?}");
    let mut ids = std::collections::HashSet::new();
    for r in &listed {
        assert_eq!(r["status"], "ok", "{r}");
        let id = r["runId"].as_str().unwrap().to_string();
        let text = export(&env, &id);
        assert_eq!(
            kinds(&text),
            ["run_started", "step", "step", "step", "run_ended"],
            "{text}"
        );
        let v = verify(&env, &text);
        assert_eq!(v.code, 0, "{v:?}");
        assert!(ids.insert(id));
    }
    // Every run pruned: no segment is left (the index names none); the
    // next process makes one.
    let r = env.run(&["runs", "prune", "--older-than", "0s"]);
    assert_eq!(r.code, 0, "{r:?}");
    let journal = env.state.path().join("journal");
    let segments = || {
        std::fs::read_dir(&journal)
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.starts_with("seg-"))
            .count()
    };
    assert_eq!(segments(), 0);
    let after = env.run(&["run", "--mode", "tool", wf]);
    assert_eq!(after.code, 0, "{after:?}");
    assert_eq!(segments(), 1);
    let newest = runs(&env)[0].clone();
    assert_eq!(newest["status"], "ok", "{newest}");
    let text = export(&env, newest["runId"].as_str().unwrap());
    assert_eq!(verify(&env, &text).code, 0);
}

#[test]
fn journals_swapped_between_runs_or_edited_in_the_store_do_not_verify() {
    let env = Env::new();
    assert_eq!(env.tool("commands.list | head --n 1").code, 0);
    assert_eq!(env.tool("commands.list | head --n 2").code, 0);
    let listed = runs(&env);
    let (a, b) = (
        listed[0]["runId"].as_str().unwrap(),
        listed[1]["runId"].as_str().unwrap(),
    );
    // Run b's journal passed off as run a's.
    let fb = env.work_path("b.jsonl");
    std::fs::write(&fb, export(&env, b)).unwrap();
    let r = env.run(&["verify", fb.to_str().unwrap(), "--run", a]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stdout.contains(&format!("belongs to run {b}, not {a}")),
        "{r:?}"
    );
    // One byte of run a's records edited where the store keeps them.
    let seg = env.state.path().join("journal/seg-00000001.log");
    let text = read(&seg);
    let at = text
        .find(&format!("{{\"run\":\"{a}\""))
        .and_then(|i| text[i..].find("head --n").map(|j| i + j + 9))
        .expect("run a's start in the segment");
    let mut bytes = text.into_bytes();
    bytes[at] = if bytes[at] == b'7' { b'8' } else { b'7' };
    std::fs::write(&seg, bytes).unwrap();
    let exported = env.run(&["runs", "export", a]);
    assert_eq!(exported.code, 1, "{exported:?}");
    assert!(exported.stderr.contains("does not verify"), "{exported:?}");
    let show = env.run(&["runs", "show", a]);
    assert!(show.stdout.contains("DOES NOT VERIFY"), "{show:?}");
    // Run b, beside it in the same segment, still verifies.
    assert_eq!(verify(&env, &export(&env, b)).code, 0);
}

#[test]
fn prune_leaves_tombstones_and_keeps_paused_runs() {
    let env = Env::new();
    assert_eq!(env.tool("commands.list | head --n 1").code, 0);
    let paused = env.tool("exec --json --shell 'echo [1]' | approve --prompt ok?");
    assert_eq!(paused.code, 0);
    let r = env.run(&["runs", "prune", "--older-than", "0s"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.stdout, "pruned 1 run journal(s)\n");
    let statuses: Vec<String> = runs(&env)
        .iter()
        .map(|r| r["status"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(statuses, ["needs_approval", "pruned"]);
    let pruned = runs(&env)[1]["runId"].as_str().unwrap().to_string();
    let show = env.run(&["runs", "show", &pruned]);
    assert_eq!(show.code, 1);
    assert!(
        show.stderr
            .contains("was pruned; its tombstone keeps 4 events, head"),
        "{show:?}"
    );
}

#[test]
fn a_serve_tenants_runs_are_read_with_tenant() {
    let env = Env::new();
    // A run kept in tenant acme's store (where `lobster serve` puts it).
    let tenant_dir = env.state.path().join("tenants/acme");
    let r = env
        .command(&["run", "--mode", "tool", "commands.list | head --n 1"])
        .env("LOBSTER_STATE_DIR", &tenant_dir)
        .output()
        .unwrap();
    assert!(r.status.success(), "{r:?}");
    assert!(runs(&env).is_empty());
    let listed = env.run(&["runs", "list", "--json", "--tenant", "acme"]);
    assert_eq!(listed.code, 0, "{listed:?}");
    let listed = listed.json();
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    let id = listed[0]["runId"].as_str().unwrap();
    let text = env.run(&["runs", "export", id, "--tenant", "acme"]);
    assert_eq!(verify(&env, &text.stdout).code, 0, "{text:?}");
    assert_eq!(env.run(&["runs", "show", id, "--tenant", "beta"]).code, 1);
    // Serve's tenant called `default` is kept in tenants/default like any
    // other: `--tenant default` reads it, not the command line's own runs.
    let r = env
        .command(&["run", "--mode", "tool", "commands.list | head --n 2"])
        .env(
            "LOBSTER_STATE_DIR",
            env.state.path().join("tenants/default"),
        )
        .output()
        .unwrap();
    assert!(r.status.success(), "{r:?}");
    assert_eq!(env.tool("commands.list | head --n 1").code, 0);
    let default = env.run(&["runs", "list", "--json", "--tenant", "default"]);
    assert_eq!(default.code, 0, "{default:?}");
    let default = default.json();
    assert_eq!(default.as_array().unwrap().len(), 1, "{default}");
    assert_eq!(
        default[0]["name"], "commands.list | head --n 2",
        "{default}"
    );
    // A name no tenant can have is refused, never joined to a path.
    for (cmd, bad) in [("list", "../tenants/acme"), ("list", "Acme")] {
        let r = env.run(&["runs", cmd, "--tenant", bad]);
        assert_eq!(r.code, 2, "{r:?}");
        assert!(r.stderr.contains("must match [a-z0-9_-]{1,64}"), "{r:?}");
    }
    let r = env.run(&["replay", id, "--tenant", "../acme"]);
    assert_ne!(r.code, 0, "{r:?}");
    assert!(r.stderr.contains("must match [a-z0-9_-]{1,64}"), "{r:?}");
}

/// `runs export --journal-key` signs the checkpoint with the operator's key
/// (kept outside the store); `verify --key` requires that signature, and
/// names an edited checkpoint, another key, and an unsigned export.
#[test]
fn an_export_signed_with_the_journal_key_verifies_only_with_its_key() {
    let env = Env::new();
    assert_eq!(env.run(&["keys", "new", "ops"]).code, 0);
    assert_eq!(env.run(&["keys", "new", "mallory"]).code, 0);
    assert_eq!(env.tool("commands.list | head --n 1").code, 0);
    let id = runs(&env)[0]["runId"].as_str().unwrap().to_string();
    let signed = env.run(&["runs", "export", &id, "--journal-key", "ops.key"]);
    assert_eq!(signed.code, 0, "{signed:?}");
    let file = env.work_path("signed.jsonl");
    std::fs::write(&file, &signed.stdout).unwrap();
    let check = |path: &std::path::Path, key: &str| {
        env.run(&["verify", path.to_str().unwrap(), "--key", key])
    };
    let r = check(&file, "ops.pub");
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        r.stdout.contains("checkpoint matches, signed by ops"),
        "{r:?}"
    );
    // Without --key the signature is noted, not checked.
    let r = env.run(&["verify", file.to_str().unwrap()]);
    assert!(r.stdout.contains("pass --key"), "{r:?}");
    // Another key: refused, naming the signer.
    let r = check(&file, "mallory.pub");
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stdout.contains("signed by ops"), "{r:?}");
    // The checkpoint's time edited: the signature no longer covers it.
    let (records, checkpoint) = signed.stdout.trim_end().rsplit_once('\n').unwrap();
    assert!(checkpoint.starts_with("{\"checkpoint\""), "{checkpoint}");
    let edited = format!(
        "{records}\n{}\n",
        checkpoint.replacen("\"at\":\"", "\"at\":\"1", 1)
    );
    let efile = env.work_path("edited.jsonl");
    std::fs::write(&efile, edited).unwrap();
    let r = check(&efile, "ops.pub");
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stdout.contains("signature does not verify"), "{r:?}");
    // An unsigned export (LOBSTER_JOURNAL_KEY unset) does not pass --key.
    let unsigned = env.work_path("unsigned.jsonl");
    std::fs::write(&unsigned, export(&env, &id)).unwrap();
    let r = check(&unsigned, "ops.pub");
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stdout.contains("not signed"), "{r:?}");
    // The key named through the environment signs too.
    let out = env
        .command(&["runs", "export", &id])
        .env("LOBSTER_JOURNAL_KEY", env.work_path("ops.key"))
        .output()
        .unwrap();
    std::fs::write(&file, &out.stdout).unwrap();
    assert_eq!(check(&file, "ops.pub").code, 0);
    // A key inside the state store is refused: whoever writes the store
    // could re-sign.
    let inside = env.state.path().join("ops.key");
    std::fs::copy(env.work_path("ops.key"), &inside).unwrap();
    let r = env.run(&[
        "runs",
        "export",
        &id,
        "--journal-key",
        inside.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("inside the state store"), "{r:?}");
}
