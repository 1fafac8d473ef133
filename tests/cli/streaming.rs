//! Streaming `exec` output: early termination kills the child, items arrive
//! before the child ends, errors after some items still fail the run, and
//! `sort | head` (top-K) agrees with the full sort.

use crate::common::{alive, read, Env};
use serde_json::{json, Value};
use std::path::Path;

fn pid_in(path: &Path) -> u32 {
    read(path)
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("no pid in {} ({e})", path.display()))
}

/// Whether `pid` is gone, allowing the kernel a moment to finish a SIGKILL
/// of a grandchild that nobody here reaps (it is re-parented).
fn gone(pid: u32) -> bool {
    for _ in 0..100 {
        if !alive(pid) {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    false
}

fn output(env: &Env, pipeline: &str) -> Value {
    let r = env.tool(pipeline);
    assert_eq!(r.code, 0, "{pipeline}: {r:?}");
    r.json()["output"].clone()
}

#[test]
fn head_stops_an_endless_child_and_kills_it() {
    let env = Env::new();
    let pid = env.work_path("yes.pid");
    let out = output(
        &env,
        &format!(
            "exec --shell 'echo $$ > {}; exec yes' | head --n 3",
            pid.display()
        ),
    );
    assert_eq!(out, json!(["y", "y", "y"]));
    assert!(!alive(pid_in(&pid)), "yes is still running");
}

#[test]
fn the_child_is_gone_before_the_next_stage_runs() {
    let env = Env::new();
    let pid = env.work_path("yes.pid");
    let pipeline = format!(
        "exec --shell 'echo $$ > {0}; exec yes' | head --n 2 \
         | exec --stdin jsonl --shell 'cat >/dev/null; if kill -0 $(cat {0}) 2>/dev/null; then echo alive; else echo gone; fi'",
        pid.display()
    );
    assert_eq!(output(&env, &pipeline), json!(["gone"]));
}

#[test]
fn items_arrive_before_a_stalled_child_ends_and_the_child_is_killed() {
    let env = Env::new();
    let (shell, sleeper) = (env.work_path("sh.pid"), env.work_path("sleep.pid"));
    // Two items, then a 30 s pause: head must not wait for the rest.
    let pipeline = format!(
        "exec --json --shell 'echo $$ > {0}; sleep 30 & echo $! > {1}; printf \"[{{\\\"a\\\":1}},\\n2,\"; wait; echo \"3]\"' | head --n 2",
        shell.display(),
        sleeper.display()
    );
    assert_eq!(output(&env, &pipeline), json!([{"a": 1}, 2]));
    assert!(!alive(pid_in(&shell)), "the shell is still running");
    assert!(gone(pid_in(&sleeper)), "its sleep is still running");
}

#[test]
fn lines_stream_too() {
    let env = Env::new();
    let out = output(&env, "exec --shell 'seq 1 100000000' | head --n 2");
    assert_eq!(out, json!(["1", "2"]));
}

#[test]
fn a_large_array_streams_through_where_sort_head() {
    let env = Env::new();
    let items: Vec<Value> = (0..4_000)
        .map(|i| json!({"id": i, "score": (i * 7919 + 13) % 101, "s": "x],\"{"}))
        .collect();
    let source = env.source(&serde_json::to_string(&items).unwrap());
    let got = output(
        &env,
        &format!(
            "{source} | where score>50 | sort --key score --desc | head --n 5 | pick id,score"
        ),
    );
    let mut want: Vec<&Value> = items
        .iter()
        .filter(|i| i["score"].as_u64() > Some(50))
        .collect();
    want.sort_by_key(|i| std::cmp::Reverse(i["score"].as_u64()));
    let want: Vec<Value> = want
        .iter()
        .take(5)
        .map(|i| json!({"id": i["id"], "score": i["score"]}))
        .collect();
    assert_eq!(got, Value::Array(want));
}

#[test]
fn bad_json_after_some_items_fails_the_run() {
    let env = Env::new();
    let r = env.tool(r#"exec --json --shell "printf '[1, 2, {\"a\" 3}]'""#);
    assert_eq!(r.code, 1, "{r:?}");
    let message = r.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(
        message.starts_with("exec --json could not parse stdout as JSON: "),
        "{message}"
    );
    // A failing exit status wins over the parse error, as in the reference.
    let r = env.tool(r#"exec --json --shell "printf '[1, x'; exit 3""#);
    assert_eq!(r.json()["error"]["message"], "exec failed (3): [1, x");
    // Items were already streamed when the status arrives: still an error.
    let r = env.tool(r#"exec --json --shell "echo '[1,2]'; exit 4" | where v!=0"#);
    assert_eq!(r.json()["error"]["message"], "exec failed (4): [1,2]");
}

#[test]
fn empty_scalar_and_object_outputs() {
    let env = Env::new();
    assert_eq!(
        output(&env, r#"exec --json --shell "echo '[]'""#),
        json!([])
    );
    assert_eq!(output(&env, r#"exec --json --shell "true""#), json!([null]));
    assert_eq!(output(&env, r#"exec --json --shell "echo 7""#), json!([7]));
    assert_eq!(
        output(&env, r#"exec --json --shell "echo '{\"a\":[1,\"]\"]}'""#),
        json!([{"a": [1, "]"]}])
    );
}

#[test]
fn the_output_cap_still_applies_while_streaming() {
    let env = Env::new();
    let r = env.run(&[
        "run",
        "--mode",
        "tool",
        "--max-stdout-bytes",
        "4096",
        "exec --shell 'yes' | where x!=1",
    ]);
    assert_eq!(r.code, 1, "{r:?}");
    assert_eq!(
        r.json()["error"]["message"],
        "lobster stdout exceeded maxStdoutBytes"
    );
}

#[test]
fn top_k_matches_the_full_sort_through_the_binary() {
    let env = Env::new();
    let items = r#"[{"k":3,"i":0},{"i":1},{"k":"10","i":2},{"k":null,"i":3},{"k":9,"i":4},{"k":true,"i":5},{"k":3,"i":6},{"k":{"o":1},"i":7},{"k":"b","i":8}]"#;
    for desc in ["", " --desc"] {
        let full = output(&env, &format!("{} | sort --key k{desc}", env.source(items)));
        for n in [0, 1, 5, 9, 12] {
            let top = output(
                &env,
                &format!("{} | sort --key k{desc} | head --n {n}", env.source(items)),
            );
            let want: Vec<Value> = full.as_array().unwrap().iter().take(n).cloned().collect();
            assert_eq!(top, Value::Array(want), "n {n}{desc}");
        }
    }
}
