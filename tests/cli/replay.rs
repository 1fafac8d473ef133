//! `lobster replay`: the demo's two workflows and a pipeline replay
//! identical from their journals (nothing sent, none of the operator's files
//! written); `exec` stages answered from their records (each pipeline
//! step's its own, in parallel branches too); a swapped component,
//! a host line or stage run again and a changed input are divergences named
//! by step; a tampered journal, an unknown id and a
//! file that is not a journal are refused.

use crate::broker::{run as run_with, Stub};
use crate::common::{test_guest, token_of, Env, Run};
use serde_json::Value;
use std::path::Path;

/// The id of the newest run.
fn newest_run(env: &Env) -> String {
    let r = env.run(&["runs", "list", "--json"]);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    v[0]["runId"].as_str().unwrap().to_string()
}

fn replay(env: &Env, args: &[&str]) -> Run {
    let mut all = vec!["replay"];
    all.extend_from_slice(args);
    env.run(&all)
}

fn replay_json(env: &Env, args: &[&str]) -> (Value, i32) {
    let mut all = args.to_vec();
    all.push("--json");
    let r = replay(env, &all);
    let v = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {r:?}"));
    (v, r.code)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        if e.path().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

fn files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.path().is_dir() {
            out.extend(files(&e.path()));
        } else {
            out.push(e.path().display().to_string());
        }
    }
    out.sort();
    out
}

#[test]
fn the_inbox_triage_demo_replays_identical_and_writes_none_of_the_mail() {
    let env = Env::new();
    if env.copy_examples("steps").is_none() {
        return;
    }
    // The mail as it was before the run, in a directory of its own.
    let before = env.work_path("before");
    copy_dir(&env.work_path("mail"), &before.join("mail"));
    let workflow =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/workflows/inbox-triage.lobster");
    let workflow = workflow.to_str().unwrap();
    let r = env.run(&["run", "--mode", "tool", "--allow-write", "mail", workflow]);
    assert_eq!(r.json()["status"], "needs_approval", "{r:?}");
    let done = env.run(&[
        "resume",
        "--token",
        &token_of(&r.json()),
        "--approve",
        "yes",
    ]);
    assert_eq!(done.json()["status"], "ok", "{done:?}");
    let id = newest_run(&env);

    // Replayed over a copy of the mail as the run found it: identical (the
    // approved step files the copy's messages).
    let untouched = files(&env.work_path("mail"));
    let (v, code) = replay_json(&env, &[&id, "--cwd", before.to_str().unwrap()]);
    assert_eq!((v["result"].as_str(), code), (Some("identical"), 0), "{v}");
    assert!(v["steps"].as_u64().unwrap() >= 5, "{v}");
    assert!(before.join("mail/finance/003-invoice.eml").is_file());
    assert_eq!(
        files(&env.work_path("mail")),
        untouched,
        "the replay wrote the run's mail"
    );

    // The run could write the mail: replaying where it ran is refused.
    let r = replay(&env, &[&id]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stderr.contains("would write there again") && r.stderr.contains("--cwd"),
        "{r:?}"
    );

    // Over the mail as the run left it (filed): the first step's output,
    // the listing, differs, and that is the divergence named.
    let after = env.work_path("after");
    copy_dir(&env.work_path("mail"), &after.join("mail"));
    let (v, code) = replay_json(&env, &[&id, "--cwd", after.to_str().unwrap()]);
    assert_eq!(code, 3, "{v}");
    assert_eq!(v["result"], "diverged");
    assert_eq!(v["divergence"]["step"], "inbox.list", "{v}");
    assert_eq!(v["divergence"]["field"], "output", "{v}");
    assert_ne!(v["divergence"]["expected"], v["divergence"]["actual"]);
}

#[test]
fn the_email_triage_demo_replays_identical_from_recorded_answers_sending_nothing() {
    let env = Env::new();
    if env.copy_examples("steps").is_none() {
        return;
    }
    let gw = Stub::start("gateway", Some("gt"));
    let model = Stub::start("model", Some("mk"));
    let base = format!("{}/v1", model.url);
    let vars = [
        ("OPENCLAW_URL", gw.url.as_str()),
        ("OPENCLAW_TOKEN", "gt"),
        ("LOBSTER_LLM_PROVIDER", "openai"),
        ("LOBSTER_LLM_BASE_URL", base.as_str()),
        ("LOBSTER_LLM_MODEL", "stub-model"),
        ("LOBSTER_LLM_API_KEY", "mk"),
    ];
    let workflow = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/workflows/email-triage-llm.lobster");
    let r = run_with(
        &env,
        &vars,
        &["--allow-read", "mail", "--allow-llm"],
        workflow.to_str().unwrap(),
    );
    assert_eq!(r.json()["status"], "needs_approval", "{r:?}");
    let mut c = env.command(&[
        "resume",
        "--token",
        &token_of(&r.json()),
        "--approve",
        "yes",
    ]);
    for (k, v) in vars {
        c.env(k, v);
    }
    let done = crate::common::finish(c.output().unwrap());
    assert_eq!(done.json()["status"], "ok", "{done:?}");
    let (models, sent) = (model.requests().len(), gw.requests().len());
    assert!(models > 0 && sent > 0);
    let id = newest_run(&env);

    // The endpoints are still configured and listening: every answer must
    // come from the journal.
    let mut c = env.command(&["replay", &id, "--json"]);
    for (k, v) in vars {
        c.env(k, v);
    }
    let r = crate::common::finish(c.output().unwrap());
    let v: Value = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {r:?}"));
    assert_eq!(
        (v["result"].as_str(), r.code),
        (Some("identical"), 0),
        "{v}"
    );
    assert_eq!(model.requests().len(), models, "the replay asked the model");
    assert_eq!(gw.requests().len(), sent, "the replay sent a message");
}

#[test]
fn a_pipeline_replays_identical_from_the_store_and_from_an_export() {
    let env = Env::new();
    let Some(probe) = test_guest("probe") else {
        return;
    };
    let steps = probe.parent().unwrap().to_str().unwrap().to_string();
    let pipeline = "probe | approve --prompt ok? | probe --times 2";
    let r = env.run(&["run", "--mode", "tool", "--steps", &steps, pipeline]);
    assert_eq!(r.json()["status"], "needs_approval", "{r:?}");
    let done = env.run(&[
        "resume",
        "--token",
        &token_of(&r.json()),
        "--approve",
        "yes",
    ]);
    assert_eq!(done.json()["status"], "ok", "{done:?}");
    let id = newest_run(&env);
    let r = replay(&env, &[&id, "--steps", &steps]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(
        r.stdout,
        format!("replay of run {id}: identical (3 steps)\n"),
        "{r:?}"
    );
    let export = env.run(&["runs", "export", &id]);
    // A run journaled now follows digest rule 2, and its replay did too.
    assert!(export.stdout.contains(r#""digests":2"#), "{export:?}");
    let file = env.work_path("run.jsonl");
    std::fs::write(&file, &export.stdout).unwrap();
    let (v, code) = replay_json(&env, &[file.to_str().unwrap(), "--steps", &steps]);
    assert_eq!((v["result"].as_str(), code), (Some("identical"), 0), "{v}");
    assert_eq!(v["runId"], id.as_str());

    // Without the step on the step path: refused, naming the component's
    // digest and where it looked.
    let empty = env.work_path("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let mut c = env.command(&["replay", &id, "--steps", empty.to_str().unwrap()]);
    c.env_remove("LOBSTER_STEP_PATH");
    let r = crate::common::finish(c.output().unwrap());
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stderr.contains("component probe (blake3 ") && r.stderr.contains(empty.to_str().unwrap()),
        "{r:?}"
    );
}

#[test]
fn a_swapped_component_is_the_divergence_named() {
    let env = Env::new();
    let (Some(probe), Some(noop)) = (test_guest("probe"), test_guest("noop")) else {
        return;
    };
    let steps = env.work_path("steps");
    std::fs::create_dir_all(&steps).unwrap();
    std::fs::copy(&probe, steps.join("probe.wasm")).unwrap();
    let steps_s = steps.to_str().unwrap();
    let r = env.run(&[
        "run",
        "--mode",
        "tool",
        "--steps",
        steps_s,
        "probe | head --n 1",
    ]);
    assert_eq!(r.json()["status"], "ok", "{r:?}");
    let id = newest_run(&env);
    assert_eq!(replay(&env, &[&id, "--steps", steps_s]).code, 0);

    // Another build under the same name.
    std::fs::copy(&noop, steps.join("probe.wasm")).unwrap();
    let was = blake3::hash(&std::fs::read(&probe).unwrap())
        .to_hex()
        .to_string();
    let now = blake3::hash(&std::fs::read(&noop).unwrap())
        .to_hex()
        .to_string();
    let (v, code) = replay_json(&env, &[&id, "--steps", steps_s]);
    assert_eq!(code, 3, "{v}");
    let d = &v["divergence"];
    assert_eq!(
        (d["step"].as_str(), d["field"].as_str()),
        (Some("probe"), Some("component")),
        "{v}"
    );
    assert_eq!(d["expected"], was.as_str());
    assert_eq!(d["actual"], now.as_str());
    let r = replay(&env, &[&id, "--steps", steps_s]);
    assert_eq!(
        r.stdout,
        format!("replay of run {id}: diverged: step probe (wasm): component expected {was}, actual {now}\n"),
        "{r:?}"
    );
}

#[test]
fn host_lines_replay_their_recorded_output_unless_rerun() {
    let env = Env::new();
    // Output that differs on every run.
    crate::common::write(
        &env,
        "wf.lobster",
        "steps:\n  - id: stamp\n    run: cat /proc/sys/kernel/random/uuid\n",
    );
    let r = env.run(&["run", "--mode", "tool", "wf.lobster"]);
    assert_eq!(r.json()["status"], "ok", "{r:?}");
    let id = newest_run(&env);
    let (v, code) = replay_json(&env, &[&id]);
    assert_eq!((v["result"].as_str(), code), (Some("identical"), 0), "{v}");
    let (v, code) = replay_json(&env, &[&id, "--rerun-host"]);
    assert_eq!(code, 3, "{v}");
    assert_eq!(v["divergence"]["step"], "stamp", "{v}");
    assert_eq!(v["divergence"]["field"], "output", "{v}");
}

/// A pipeline's `exec` stage replays from its record: the process is not
/// run (its side effect is not repeated, its changing output is the
/// recorded one), a failing stage fails again with its exit code, and
/// `--rerun-host` runs it and names the divergence. A record without the
/// whole output (the next stage stopped reading; past 64 KiB) is refused
/// with the reason and the flag that runs it anyway.
#[test]
fn exec_stages_replay_their_recorded_output_unless_rerun() {
    let env = Env::new();
    let marker = env.work_path("ran");
    let r = env.tool(
        "exec --shell 'echo x >> ran; cat /proc/sys/kernel/random/uuid' \
         | exec --stdin jsonl --json --shell 'wc -l' | json",
    );
    assert_eq!(r.json()["status"], "ok", "{r:?}");
    assert_eq!(r.json()["output"], serde_json::json!([1]), "{r:?}");
    let id = newest_run(&env);
    let (v, code) = replay_json(&env, &[&id]);
    assert_eq!((v["result"].as_str(), code), (Some("identical"), 0), "{v}");
    assert_eq!(
        std::fs::read_to_string(&marker).unwrap(),
        "x\n",
        "the process ran again"
    );
    let (v, code) = replay_json(&env, &[&id, "--rerun-host"]);
    assert_eq!(code, 3, "{v}");
    assert_eq!(
        (
            v["divergence"]["step"].as_str(),
            v["divergence"]["field"].as_str()
        ),
        (Some("0"), Some("output")),
        "{v}"
    );
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "x\nx\n");

    // A failing stage: the same exit code and end, without the process.
    let r = env.tool("exec --shell 'echo x >> ran; echo out; exit 3'");
    assert_eq!(
        r.json()["error"]["message"],
        "exec failed (3): out",
        "{r:?}"
    );
    let id = newest_run(&env);
    let (v, code) = replay_json(&env, &[&id]);
    assert_eq!((v["result"].as_str(), code), (Some("identical"), 0), "{v}");
    assert_eq!(std::fs::read_to_string(&marker).unwrap().lines().count(), 3);

    // The next stage stopped reading: the stage's output was not kept.
    let r = env.tool("exec --json --shell 'echo [1,2]' | head --n 1");
    assert_eq!(r.json()["status"], "ok", "{r:?}");
    let id = newest_run(&env);
    let r = replay(&env, &[&id]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stderr.contains("step 0 (host exec)")
            && r.stderr.contains("not replayable: its output was not kept")
            && r.stderr.contains("--rerun-host"),
        "{r:?}"
    );
    assert_eq!(replay(&env, &[&id, "--rerun-host"]).code, 0);

    // Past the 64 KiB an exec stage's record keeps.
    let r = env.tool("exec --shell 'seq 1 20000' | json");
    assert_eq!(r.json()["status"], "ok", "{r:?}");
    let id = newest_run(&env);
    let r = replay(&env, &[&id]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stderr
            .contains("longer than the journal keeps of an exec stage"),
        "{r:?}"
    );
    assert_eq!(replay(&env, &[&id, "--rerun-host"]).code, 0);
}

/// Two pipeline steps in a workflow's parallel branches each have a stage
/// 0 `exec`; the slow one's process ends last in the run, but in the
/// replay both stand-ins answer at once. Each stage takes its own step's
/// record (keyed by the step it runs within), and the comparison pairs
/// each recorded stage with the replay's stage of the same step.
#[test]
fn parallel_pipeline_steps_take_their_own_exec_records() {
    let env = Env::new();
    crate::common::write(
        &env,
        "par.lobster",
        "steps:\n  - id: par\n    parallel:\n      branches:\n\
         \x20       - id: slow\n          pipeline: exec --json --shell 'echo x >> ran; sleep 0.4; echo [1]' | json\n\
         \x20       - id: fast\n          pipeline: exec --json --shell 'echo x >> ran; echo [2]' | json\n",
    );
    let r = env.tool("par.lobster");
    assert_eq!(r.json()["status"], "ok", "{r:?}");
    let id = newest_run(&env);
    let export = env.run(&["runs", "export", &id]).stdout;
    let stages: Vec<(String, String)> = export
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|r| r["event"].clone())
        .filter(|e| e["kind"] == "step" && e["name"] == "exec")
        .map(|e| (e["within"].to_string(), e["id"].to_string()))
        .collect();
    let stage = |step: &str| (format!("\"{step}\""), "\"0\"".to_string());
    assert_eq!(stages, [stage("fast"), stage("slow")], "{export}");
    for _ in 0..3 {
        let (v, code) = replay_json(&env, &[&id]);
        assert_eq!((v["result"].as_str(), code), (Some("identical"), 0), "{v}");
    }
    assert_eq!(
        std::fs::read_to_string(env.work_path("ran")).unwrap(),
        "x\nx\n",
        "a process ran again"
    );
}

#[test]
fn a_tampered_journal_an_unknown_id_and_a_file_that_is_not_a_journal_are_refused() {
    let env = Env::new();
    crate::common::write(&env, "wf.lobster", "steps:\n  - id: a\n    run: echo hi\n");
    let r = env.run(&["run", "--mode", "tool", "wf.lobster"]);
    assert_eq!(r.json()["status"], "ok", "{r:?}");
    let id = newest_run(&env);
    let export = env.run(&["runs", "export", &id]).stdout;
    assert!(export.contains("\"hi\\n\""), "{export}");
    // The recorded output edited: the chain no longer verifies.
    let tampered = env.work_path("tampered.jsonl");
    std::fs::write(&tampered, export.replace("\"hi\\n\"", "\"ho\\n\"")).unwrap();
    let r = replay(&env, &[tampered.to_str().unwrap()]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stderr.contains("does not verify") && r.stderr.contains("was changed"),
        "{r:?}"
    );

    let r = replay(&env, &["0123456789abcdef0123456789abcdef"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stderr
            .contains("no journal for run 0123456789abcdef0123456789abcdef"),
        "{r:?}"
    );

    let r = replay(&env, &["../../etc/passwd-not-there"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains("neither a journal file nor a run id"),
        "{r:?}"
    );

    let r = replay(&env, &["wf.lobster"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stderr.contains("wf.lobster: the journal does not verify"),
        "{r:?}"
    );

    // A run waiting at a gate has not finished.
    let r = env.tool("exec --json --shell 'echo [1]' | approve --prompt ok?");
    assert_eq!(r.json()["status"], "needs_approval");
    let r = replay(&env, &[&newest_run(&env)]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("has not finished"), "{r:?}");
}

/// A journal lobster wrote before digest rules (the d05ed57 release, rule
/// 1: no `digests` in its start, each workflow step's output digest taken
/// over its whole result printed) still verifies, and replays identical:
/// the replay follows the rule the run recorded, not today's.
#[test]
fn a_journal_written_before_digest_rules_verifies_and_replays_identical() {
    let env = Env::new();
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/journal-rule1.jsonl");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(!text.contains("digests"), "a rule 1 journal");
    let file = file.to_str().unwrap();
    let v = env.run(&["verify", file]);
    assert_eq!(v.code, 0, "{v:?}");
    // Its workflow file is gone: the recorded text runs, in a directory here.
    let here = env.work_path("here");
    std::fs::create_dir_all(&here).unwrap();
    let (v, code) = replay_json(&env, &[file, "--cwd", here.to_str().unwrap()]);
    assert_eq!((v["result"].as_str(), code), (Some("identical"), 0), "{v}");
    assert_eq!(v["steps"], 5, "{v}");
}
