//! Recovery after a dead resumer (issue J1, point 5): a gated pipeline's
//! brokered calls after the gate are journaled (the intent before the
//! request leaves, the answer as it arrives), so a resume SIGKILLed after a
//! call was answered is claimed again by the next resume, which replays the
//! answer from the journal — the loopback gateway counts the requests: the
//! call is not sent again — and a resume killed while a call was in flight
//! (intent, no answer) leaves a run that stops for a human, `interrupted`,
//! naming the call, on every later resume. The same for workflows: a
//! brokered pipeline step after the gate, and a WebAssembly `uses:` step
//! that calls a gateway tool through its broker import. And after an input
//! gate (`ask`): the call made of the response is replayed for a resume
//! that answers the same, and a resume that answers otherwise stops,
//! naming both calls, since its call is not the one the dead resume sent.
//! Both stores.

use crate::broker::Stub;
use crate::common::{err_message, finish, on_both_stores, test_guest, token_of, write, Env, Run};
use crate::psql::psql;
use serde_json::{json, Value};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The lease a PostgreSQL claim holds without its heartbeat (short, so a
/// dead resumer's claim is taken over within the test).
const LEASE_MS: &str = "1000";

/// The id of the run paused at gate `approval_id` (tests share the
/// PostgreSQL store, so the newest run may be another test's).
fn run_at_gate(env: &Env, approval_id: &str) -> String {
    let r = env.run(&["runs", "list", "--json"]);
    let v: Value = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {r:?}"));
    let runs = v.as_array().unwrap();
    let run = runs.iter().find(|r| r["gate"] == approval_id);
    let run = run.unwrap_or_else(|| panic!("no run at gate {approval_id}: {v:#}"));
    run["runId"].as_str().unwrap().to_string()
}

/// The events of run `id` as `lobster runs export` writes them.
fn events(env: &Env, id: &str) -> Vec<Value> {
    let r = env.run(&["runs", "export", id]);
    assert_eq!(r.code, 0, "{r:?}");
    r.stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|r| r["event"].clone())
        .filter(|e| e.is_object())
        .collect()
}

fn of_kind<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["kind"] == kind).collect()
}

/// `lobster run --mode tool EXTRA… LINE` with the gateway at `gw`, paused
/// with `status`: its envelope.
fn run_to_gate(env: &Env, gw: &Stub, extra: &[&str], line: &str, status: &str) -> Value {
    let mut args = vec!["run", "--mode", "tool"];
    args.extend_from_slice(extra);
    args.push(line);
    let mut c = env.command(&args);
    c.env("OPENCLAW_URL", &gw.url).env_remove("OPENCLAW_TOKEN");
    let r = finish(c.output().unwrap());
    let v = r.json();
    assert_eq!(v["status"], status, "{r:?}");
    v
}

/// Pause `line` at its approval gate, returning the token and the run.
fn pause(env: &Env, gw: &Stub, extra: &[&str], line: &str) -> (String, String) {
    let v = run_to_gate(env, gw, extra, line, "needs_approval");
    let gate = v["requiresApproval"]["approvalId"].as_str().unwrap();
    (token_of(&v), run_at_gate(env, gate))
}

/// How a resume answers its gate.
#[derive(Clone, Copy)]
enum Answer<'a> {
    /// `--approve yes`.
    Approve,
    /// `--response-json RESPONSE`, to an input gate.
    Respond(&'a str),
}

/// `lobster resume` of `token` answering `answer`, with the gateway at
/// `gw`, a cmd-echo step told to sleep `sleep_ms`.
fn resume(env: &Env, gw: &Stub, token: &str, answer: Answer, sleep_ms: &str) -> Command {
    let answer = match answer {
        Answer::Approve => ["--approve", "yes"],
        Answer::Respond(response) => ["--response-json", response],
    };
    let mut c = env.command(&["resume", "--mode", "tool", "--token", token]);
    c.args(answer)
        .env("OPENCLAW_URL", &gw.url)
        .env_remove("OPENCLAW_TOKEN")
        .env("LOBSTER_STORE_LEASE_MS", LEASE_MS)
        .env("CMD_ECHO_SLEEP_MS", sleep_ms);
    c
}

/// A resume of `token` run to its end, no step waiting.
fn resumed(env: &Env, gw: &Stub, token: &str, answer: Answer) -> Run {
    finish(resume(env, gw, token, answer, "0").output().unwrap())
}

/// Wait (30 s at most) until `done` holds.
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < Duration::from_secs(30), "{what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// On PostgreSQL, let the claim a resume left run out of its lease, as a
/// dead claimer's does.
fn lease_out(env: &Env) {
    if env.store.is_some() {
        std::thread::sleep(Duration::from_millis(1300));
    }
}

/// When a resume is killed.
enum Kill<'a> {
    /// Once run `.0`'s call answer is journaled (a barrier, synced as it
    /// arrives): the resumer is in the step after it, told to wait a minute.
    Answered(&'a str),
    /// While its second call (to the slow tool) is in flight: the gateway
    /// has heard both, its answer is never recorded.
    InFlight,
}

/// A resume of `token` answering `answer`, SIGKILLed (nothing of lobster's
/// runs after it) at `at`, its claim then left to run out.
fn killed_resume(env: &Env, gw: &Stub, token: &str, answer: Answer, at: Kill) {
    let sleep_ms = match at {
        Kill::Answered(_) => "60000",
        Kill::InFlight => "0",
    };
    let mut child = resume(env, gw, token, answer, sleep_ms)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    match at {
        Kill::Answered(run) => wait_for("the call's answer was never journaled", || {
            !of_kind(&events(env, run), "call_answer").is_empty()
        }),
        Kill::InFlight => wait_for("the slow call never arrived", || gw.requests().len() >= 2),
    }
    child.kill().unwrap();
    child.wait().unwrap();
    lease_out(env);
}

/// The guests `names` in the work directory's `steps/`, or `None` when
/// they are not built.
fn steps(env: &Env, names: &[&str]) -> Option<()> {
    let steps = env.work_path("steps");
    std::fs::create_dir_all(&steps).unwrap();
    for g in names {
        std::fs::copy(test_guest(g)?, steps.join(format!("{g}.wasm"))).unwrap();
    }
    Some(())
}

/// Run `run`'s journal after a resume that replayed its call: one intent
/// (the dead leg's), two answers — the second replayed, the same — and the
/// chain verifies across both legs.
fn assert_replayed(env: &Env, run: &str) {
    let ev = events(env, run);
    assert_eq!(of_kind(&ev, "call_intent").len(), 1, "{ev:#?}");
    let answers = of_kind(&ev, "call_answer");
    assert_eq!(answers.len(), 2, "{ev:#?}");
    assert_ne!(answers[0]["replayed"], json!(true), "{ev:#?}");
    assert_eq!(answers[1]["replayed"], json!(true), "{ev:#?}");
    assert_eq!(answers[0]["answer"], answers[1]["answer"]);
    let path = env.work_path("run.jsonl");
    std::fs::write(&path, env.run(&["runs", "export", run]).stdout).unwrap();
    let verified = env.run(&["verify", path.to_str().unwrap()]);
    assert_eq!(verified.code, 0, "{verified:?}");
}

/// On PostgreSQL: a resume refused after the kill took the dead claim over
/// (the epoch rose to `epoch`) and left its own as a dead one's: still
/// `resuming`, not paused or gone.
fn assert_claim_taken_over(env: &Env, run: &str, epoch: usize) {
    if let Some(url) = &env.store {
        lease_out(env);
        let row = psql(
            url,
            &format!(
                "SELECT status || ' ' || claim_epoch FROM lobster_runs WHERE body LIKE '%{run}%'"
            ),
        );
        assert_eq!(row, format!("resuming {epoch}"));
    }
}

fn an_answered_call_is_replayed_not_sent_again(store: Option<&str>) {
    let gw = Stub::start("gateway", None);
    let env = Env::with_store(store);
    if steps(&env, &["cmd-echo"]).is_none() {
        return;
    }
    // After the gate: a brokered call, then a pure step slow enough to kill
    // the resumer in (told by CMD_ECHO_SLEEP_MS how long to wait).
    let line = r#"exec --json --shell 'echo [1]' | approve --prompt go? | openclaw.invoke --tool echo --action a --args-json '{"n":1}' | cmd-echo sleep"#;
    let (token, run) = pause(&env, &gw, &["--allow-env", "CMD_ECHO_SLEEP_MS"], line);
    killed_resume(&env, &gw, &token, Answer::Approve, Kill::Answered(&run));
    assert_eq!(gw.requests().len(), 1);

    // Claimed again: the step runs (told not to wait) with the recorded answer.
    let r = resumed(&env, &gw, &token, Answer::Approve);
    let v = r.json();
    assert_eq!(v["status"], "ok", "{r:?}");
    let out = serde_json::to_string(&v["output"]).unwrap();
    assert!(out.contains(r#""n":1"#), "the echo's answer: {out}");
    assert_eq!(gw.requests().len(), 1, "the answered call was sent again");
    // The journal says so.
    assert_replayed(&env, &run);
    // Exactly once: the token is spent.
    let again = resumed(&env, &gw, &token, Answer::Approve);
    assert_eq!(again.code, 1, "{again:?}");
    assert_eq!(gw.requests().len(), 1);
}

on_both_stores!(
    an_answered_call_is_replayed_not_sent_again() =>
    an_answered_call_is_replayed_not_sent_again_files,
    an_answered_call_is_replayed_not_sent_again_postgres
);

/// A resume killed while its second call is in flight: claimed again, the
/// run sends nothing (neither the answered call nor the unanswered one) and
/// stops for a human, naming the call — every time.
fn an_unanswered_call_stops_the_run_for_a_human(store: Option<&str>) {
    let gw = Stub::start("gateway", None);
    let env = Env::with_store(store);
    let line = r#"exec --json --shell 'echo [1]' | approve --prompt go? | openclaw.invoke --tool echo --action a --args-json '{"n":1}' | openclaw.invoke --tool slow --action b --args-json '{"ms":60000}'"#;
    let (token, run) = pause(&env, &gw, &[], line);
    killed_resume(&env, &gw, &token, Answer::Approve, Kill::InFlight);
    for round in 0..2 {
        let r = resumed(&env, &gw, &token, Answer::Approve);
        assert_eq!(r.code, 1, "{r:?}");
        let msg = err_message(&r);
        assert!(
            msg.contains("interrupted after approval at stage 2")
                && msg.contains("tool call slow (request "),
            "{msg}"
        );
        assert_eq!(gw.requests().len(), 2, "a call was sent again");
        assert_claim_taken_over(&env, &run, round + 2);
    }
    let ev = events(&env, &run);
    assert_eq!(of_kind(&ev, "call_intent").len(), 2, "{ev:#?}");
    assert_eq!(of_kind(&ev, "call_answer").len(), 1, "{ev:#?}");
}

on_both_stores!(
    an_unanswered_call_stops_the_run_for_a_human() =>
    an_unanswered_call_stops_the_run_for_a_human_files,
    an_unanswered_call_stops_the_run_for_a_human_postgres
);

/// A workflow gated at step 2 (`review`), then `send` and `wait` as given:
/// written to `wf.lobster` with the test guests in `steps/`. `None` when
/// the guests are not built.
fn workflow(env: &Env, send: &str, wait: &str) -> Option<()> {
    steps(env, &["cmd-echo", "brokered"])?;
    write(
        env,
        "wf.lobster",
        &format!(
            "steps:\n  - id: list\n    run: echo '[1]'\n  - id: review\n    approval: go?\n    stdin: $list.json\n  - id: send\n{send}  - id: wait\n{wait}"
        ),
    );
    Some(())
}

/// A brokered pipeline step after the gate.
const PIPELINE_SEND: &str =
    "    pipeline: >-\n      openclaw.invoke --tool echo --action a --args-json '{\"n\":1}'\n";
/// A WebAssembly step calling tool echo through its broker import.
const WASM_SEND: &str =
    "    uses: steps/brokered.wasm\n    with:\n      tool: echo\n      args: '{\"n\":1}'\n";
/// A pure step slow enough to kill the resumer in.
const SLOW_WAIT: &str = "    pipeline: cmd-echo sleep\n    stdin: $send.json\n";

fn a_workflow_call_answered_is_replayed(store: Option<&str>, send: &str) {
    let gw = Stub::start("gateway", None);
    let env = Env::with_store(store);
    if workflow(&env, send, SLOW_WAIT).is_none() {
        return;
    }
    // The brokered component describes model calls too.
    let grants = [
        "--allow-env",
        "CMD_ECHO_SLEEP_MS",
        "--allow-tool",
        "echo",
        "--allow-llm",
    ];
    let (token, run) = pause(&env, &gw, &grants, "wf.lobster");
    killed_resume(&env, &gw, &token, Answer::Approve, Kill::Answered(&run));
    assert_eq!(gw.requests().len(), 1);

    let r = resumed(&env, &gw, &token, Answer::Approve);
    let v = r.json();
    assert_eq!(v["status"], "ok", "{r:?}");
    let out = serde_json::to_string(&v["output"]).unwrap();
    assert!(out.contains(r#""tool":"echo""#), "the echo's answer: {out}");
    assert_eq!(gw.requests().len(), 1, "the answered call was sent again");
    assert_replayed(&env, &run);
    let again = resumed(&env, &gw, &token, Answer::Approve);
    assert_eq!(again.code, 1, "{again:?}");
    assert_eq!(gw.requests().len(), 1);
}

on_both_stores!(
    a_workflow_call_answered_is_replayed(PIPELINE_SEND) =>
    a_workflow_step_call_answered_is_replayed_files,
    a_workflow_step_call_answered_is_replayed_postgres
);

on_both_stores!(
    a_workflow_call_answered_is_replayed(WASM_SEND) =>
    a_component_call_answered_is_replayed_files,
    a_component_call_answered_is_replayed_postgres
);

/// A workflow resume killed while its slow call (`slow`, after `echo`)
/// is in flight: later resumes send nothing and stop, naming the call.
fn a_workflow_call_unanswered_stops(store: Option<&str>, send: &str, slow: &str) {
    let gw = Stub::start("gateway", None);
    let env = Env::with_store(store);
    if workflow(&env, send, slow).is_none() {
        return;
    }
    let grants = [
        "--allow-tool",
        "echo",
        "--allow-tool",
        "slow",
        "--allow-llm",
    ];
    let (token, run) = pause(&env, &gw, &grants, "wf.lobster");
    killed_resume(&env, &gw, &token, Answer::Approve, Kill::InFlight);
    for round in 0..2 {
        let r = resumed(&env, &gw, &token, Answer::Approve);
        assert_eq!(r.code, 1, "{r:?}");
        let msg = err_message(&r);
        assert!(
            msg.contains("interrupted after approval at step 2 (review)")
                && msg.contains("tool call slow (request ")
                && msg.contains("was in flight"),
            "{msg}"
        );
        assert_eq!(gw.requests().len(), 2, "a call was sent again");
        assert_claim_taken_over(&env, &run, round + 2);
    }
    let ev = events(&env, &run);
    assert_eq!(of_kind(&ev, "call_intent").len(), 2, "{ev:#?}");
    assert_eq!(of_kind(&ev, "call_answer").len(), 1, "{ev:#?}");
}

/// A brokered pipeline step calling the slow tool.
const PIPELINE_SLOW: &str =
    "    pipeline: >-\n      openclaw.invoke --tool slow --action b --args-json '{\"ms\":60000}'\n";
/// A WebAssembly step calling the slow tool through its broker import.
const WASM_SLOW: &str =
    "    uses: steps/brokered.wasm\n    with:\n      tool: slow\n      args: '{\"ms\":60000}'\n";

on_both_stores!(
    a_workflow_call_unanswered_stops(PIPELINE_SEND, PIPELINE_SLOW) =>
    a_workflow_step_call_unanswered_stops_files,
    a_workflow_step_call_unanswered_stops_postgres
);

on_both_stores!(
    a_workflow_call_unanswered_stops(WASM_SEND, WASM_SLOW) =>
    a_component_call_unanswered_stops_files,
    a_component_call_unanswered_stops_postgres
);

/// The gateway moved between the dead resume and the next: the call the
/// step asks now (to the new endpoint) is not the call the dead resume
/// made, so the run stops, naming both, and neither gateway hears again.
fn a_workflow_call_that_differs_stops(store: Option<&str>) {
    let gw = Stub::start("gateway", None);
    let moved = Stub::start("gateway", None);
    let env = Env::with_store(store);
    if workflow(&env, PIPELINE_SEND, SLOW_WAIT).is_none() {
        return;
    }
    let grants = ["--allow-env", "CMD_ECHO_SLEEP_MS", "--allow-tool", "echo"];
    let (token, run) = pause(&env, &gw, &grants, "wf.lobster");
    killed_resume(&env, &gw, &token, Answer::Approve, Kill::Answered(&run));
    let r = resumed(&env, &moved, &token, Answer::Approve);
    assert_eq!(r.code, 1, "{r:?}");
    let msg = err_message(&r);
    assert!(
        msg.contains("interrupted after approval at step 2 (review)")
            && msg.contains("call 1 after the gate is a tool call echo (request ")
            && msg.contains("asked tool call echo (request "),
        "{msg}"
    );
    assert_eq!(gw.requests().len(), 1);
    assert!(moved.requests().is_empty(), "{:?}", moved.requests());
}

on_both_stores!(
    a_workflow_call_that_differs_stops() =>
    a_workflow_call_that_differs_stops_files,
    a_workflow_call_that_differs_stops_postgres
);

/// Pause `then` after an input gate (`ask`), returning the token and the
/// run. An input gate has no approval id: the run is found by a word of
/// its own (a number) in its first stage (the list names a pipeline by its
/// text).
fn pause_at_ask(env: &Env, gw: &Stub, extra: &[&str], then: &str) -> (String, String) {
    let nonce = format!(
        "{}{:09}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos()
    );
    let line = format!("exec --json --shell 'echo [{nonce}]' | ask --prompt which? | {then}");
    let v = run_to_gate(env, gw, extra, &line, "needs_input");
    let listed = env.run(&["runs", "list", "--json", "--status", "needs_input"]);
    let runs: Value =
        serde_json::from_str(&listed.stdout).unwrap_or_else(|e| panic!("{e}: {listed:?}"));
    let run = runs
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"].as_str().is_some_and(|n| n.contains(&nonce)))
        .unwrap_or_else(|| panic!("no run paused at {nonce}: {runs:#}"));
    (token_of(&v), run["runId"].as_str().unwrap().to_string())
}

/// The call after the gate carries the response (`--each --item-key`).
const ASKED_CALL: &str =
    "openclaw.invoke --tool echo --action a --each --item-key reply --args-json '{}'";

/// A resume of an input gate killed after its call (made of the response)
/// was answered: a resume answering otherwise would send another call, so
/// it stops, naming both, and sends nothing; a resume answering the same
/// replays the recorded answer, and the run ends ok with the call sent once.
fn an_input_gate_s_call_is_replayed_for_the_same_answer(store: Option<&str>) {
    let gw = Stub::start("gateway", None);
    let env = Env::with_store(store);
    if steps(&env, &["cmd-echo"]).is_none() {
        return;
    }
    let then = format!("{ASKED_CALL} | cmd-echo sleep");
    let (token, run) = pause_at_ask(&env, &gw, &["--allow-env", "CMD_ECHO_SLEEP_MS"], &then);
    let answer = Answer::Respond(r#"{"decision":"approve"}"#);
    killed_resume(&env, &gw, &token, answer, Kill::Answered(&run));
    assert_eq!(gw.requests().len(), 1);
    assert_eq!(
        gw.requests()[0]["body"]["args"]["reply"],
        json!({"decision": "approve"}),
        "{:?}",
        gw.requests()
    );

    let other = resumed(
        &env,
        &gw,
        &token,
        Answer::Respond(r#"{"decision":"reject"}"#),
    );
    assert_eq!(other.code, 1, "{other:?}");
    let msg = err_message(&other);
    assert!(
        msg.contains("interrupted after input at stage 2")
            && msg.contains("call 1 after the gate is a tool call echo (request ")
            && msg.contains("asked tool call echo (request "),
        "{msg}"
    );
    assert_eq!(gw.requests().len(), 1, "the other answer's call was sent");
    lease_out(&env);

    let r = resumed(&env, &gw, &token, answer);
    let v = r.json();
    assert_eq!(v["status"], "ok", "{r:?}");
    let out = serde_json::to_string(&v["output"]).unwrap();
    assert!(
        out.contains(r#""decision":"approve""#),
        "the echo's answer: {out}"
    );
    assert_eq!(gw.requests().len(), 1, "the answered call was sent again");
    let ev = events(&env, &run);
    let decisions: Vec<_> = of_kind(&ev, "decision")
        .iter()
        .map(|d| d["decision"].clone())
        .collect();
    assert_eq!(decisions, ["input", "input", "input"], "{ev:#?}");
    assert_replayed(&env, &run);
}

on_both_stores!(
    an_input_gate_s_call_is_replayed_for_the_same_answer() =>
    an_input_gate_s_call_is_replayed_for_the_same_answer_files,
    an_input_gate_s_call_is_replayed_for_the_same_answer_postgres
);

/// A resume of an input gate killed while its second call was in flight:
/// the next resume sends nothing and stops for a human, naming the gate as
/// an input gate and the call.
fn an_input_gate_s_unanswered_call_stops(store: Option<&str>) {
    let gw = Stub::start("gateway", None);
    let env = Env::with_store(store);
    let then = format!(
        r#"{ASKED_CALL} | openclaw.invoke --tool slow --action b --args-json '{{"ms":60000}}'"#
    );
    let (token, _) = pause_at_ask(&env, &gw, &[], &then);
    let answer = Answer::Respond(r#"{"decision":"approve"}"#);
    killed_resume(&env, &gw, &token, answer, Kill::InFlight);
    let r = resumed(&env, &gw, &token, answer);
    assert_eq!(r.code, 1, "{r:?}");
    let msg = err_message(&r);
    assert!(
        msg.contains("interrupted after input at stage 2")
            && msg.contains("tool call slow (request ")
            && msg.contains("was in flight"),
        "{msg}"
    );
    assert_eq!(gw.requests().len(), 2, "a call was sent again");
}

on_both_stores!(
    an_input_gate_s_unanswered_call_stops() =>
    an_input_gate_s_unanswered_call_stops_files,
    an_input_gate_s_unanswered_call_stops_postgres
);
