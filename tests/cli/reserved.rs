//! Reserved state keys (issue 22): Lobster's own records — paused runs'
//! resume states, interrupted records, approval aliases, the gateway's run
//! records and pending gates, cached model answers, a wasm step's own state —
//! share the namespace of `state.get`/`state.set`/`diff.last` keys. Every
//! writer a workflow controls (`state.set`, `diff.last`, `llm.invoke
//! --state-key`, `LOBSTER_RUN_STATE_KEY` from `env:`, `state.get` for reads)
//! is refused on every spelling of those names, through `lobster run`, a
//! workflow file and `lobster call`, under both trust levels; the records
//! are left byte for byte as they were and the model is never asked.

use crate::broker::Stub;
use crate::common::{token_of, Env, Run};
use serde_json::{json, Value};

/// Spellings of reserved names (`{STATE}` is a paused run's real state key).
const KEYS: &[&str] = &[
    "serve_run_00ff",
    "Serve/Run:00ff",
    " serve pending 1 ",
    "WORKFLOW_RESUME_abc",
    "interrupted_pipeline_resume_1",
    "approval_ab12cd34",
    "llm_cache_0",
    "step_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "{STATE}",
    "{STATE_UPPER}",
];

/// The writers, as pipeline text with `K` for the key.
const WRITERS: &[&str] = &[
    "exec --json --shell 'echo 1' | state.set K",
    "exec --json --shell 'echo [1]' | diff.last --key K",
    "exec --json --shell 'echo [1]' | diff.last K",
    "state.get K",
    "llm.invoke --provider openai --prompt hi --state-key K",
];

fn quoted(key: &str) -> String {
    format!("'{key}'")
}

#[test]
fn no_writer_reaches_lobsters_own_records() {
    let env = Env::new();
    let model = Stub::start("model", None);
    let v1 = format!("{}/v1", model.url);
    // A paused run whose resume state the attacks aim at.
    let paused = env.tool("exec --json --shell 'echo [1]' | approve --prompt ok?");
    let token = token_of(&paused.json());
    let state_file = env.state_file("pipeline_resume_");
    let state_name = state_file
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let before = std::fs::read(&state_file).unwrap();
    let listing = env.state_files();
    let untrusted = env.work_path("untrusted.toml");
    std::fs::write(&untrusted, "trust = \"untrusted\"\nllm = true\n").unwrap();
    let mut failures = Vec::new();
    let mut runs = 0;
    let check = |what: &str, r: &Run, failures: &mut Vec<String>| {
        let v: Value = serde_json::from_str(&r.stdout).unwrap_or(Value::Null);
        let msg = v["error"]["message"].as_str().unwrap_or_default();
        if v["ok"] != false || !msg.contains("is reserved") {
            failures.push(format!("{what}: not refused: {r:?}"));
        }
    };
    for key in KEYS {
        let key = key
            .replace("{STATE_UPPER}", &state_name.to_uppercase())
            .replace("{STATE}", &state_name);
        for writer in WRITERS {
            // The command line (trusted, no policy).
            let text = writer.replace('K', &quoted(&key));
            let mut c = env.command(&["run", "--mode", "tool", &text]);
            c.env("LOBSTER_LLM_BASE_URL", &v1)
                .env("LOBSTER_LLM_MODEL", "stub-model")
                .env_remove("LOBSTER_POLICY");
            check(
                &format!("run {text}"),
                &crate::common::finish(c.output().unwrap()),
                &mut failures,
            );
            // `lobster call`, the agent's door.
            let req = json!({"action": "run", "pipeline": text}).to_string();
            let mut c = env.command(&["call", &req]);
            c.env("LOBSTER_LLM_BASE_URL", &v1)
                .env("LOBSTER_LLM_MODEL", "stub-model")
                .env_remove("LOBSTER_POLICY");
            check(
                &format!("call {text}"),
                &crate::common::finish(c.output().unwrap()),
                &mut failures,
            );
            runs += 2;
        }
        // A workflow under the untrusted policy: LOBSTER_RUN_STATE_KEY from
        // env: (another encoding of llm.invoke's key), and state.set.
        let wf = format!(
            "env:\n  LOBSTER_RUN_STATE_KEY: {key:?}\nsteps:\n  - id: a\n    pipeline: llm.invoke --provider openai --prompt hi\n  - id: b\n    pipeline: state.set {}\n    stdin: [1]\n",
            quoted(&key)
        );
        std::fs::write(env.work_path("wf.lobster"), wf).unwrap();
        for policy in [None, Some(&untrusted)] {
            let mut words = vec!["run", "--mode", "tool"];
            let p;
            if let Some(path) = policy {
                p = path.to_str().unwrap().to_string();
                words.extend(["--policy", p.as_str()]);
            }
            words.push("wf.lobster");
            let mut c = env.command(&words);
            c.env("LOBSTER_LLM_BASE_URL", &v1)
                .env("LOBSTER_LLM_MODEL", "stub-model")
                .env_remove("LOBSTER_POLICY");
            check(
                &format!("workflow {key:?} policy {policy:?}"),
                &crate::common::finish(c.output().unwrap()),
                &mut failures,
            );
            runs += 1;
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {runs}:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // Nothing was written, nothing was asked, the paused run is untouched
    // and still resumes.
    assert_eq!(std::fs::read(&state_file).unwrap(), before);
    assert_eq!(env.state_files(), listing);
    assert!(model.requests().is_empty(), "{:?}", model.requests());
    let r = env.run(&[
        "resume",
        "--mode",
        "tool",
        "--token",
        &token,
        "--approve",
        "yes",
    ]);
    assert_eq!(r.json()["status"], "ok", "{r:?}");
    assert_eq!(r.json()["output"], json!([1]));
}
