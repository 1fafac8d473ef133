//! Control flow: strict conditions and visible skips, the output of the
//! last completed step, `on_error`, retries and timeouts, `for_each`,
//! `parallel` and composition of sub-workflows.

use super::{error_message, ok_output};
use crate::common::Env;
use serde_json::json;

// -------------------------------------------------------------- conditions

#[test]
fn conditions_are_strict_and_skips_are_visible() {
    let env = Env::new();
    let f = env.wf(
        "c.lobster",
        "steps:\n  - id: a\n    run: echo '{\"n\":\"10\",\"m\":10,\"s\":\"ok\"}'\n  - id: strict\n    when: $a.json.n == 10\n    run: echo no\n  - id: numeric\n    when: $a.json.n > 9 && $a.json.m >= 10 && $a.json.s == ok\n    run: echo yes\n  - id: neg\n    condition: \"!($a.json.s != 'ok') || false\"\n    run: echo neg\n  - id: off\n    when: false\n    run: echo off\n  - id: report\n    run: echo \"$strict.skipped $numeric.skipped $off.skipped $neg.stdout\"\n",
    );
    assert_eq!(
        ok_output(&env.wf_tool(&f, None)),
        json!(["true false true neg\n\n"])
    );
}

#[test]
fn output_is_the_last_completed_step() {
    let env = Env::new();
    let f = env.wf(
        "o.lobster",
        "steps:\n  - id: a\n    run: echo '[1,2]'\n  - id: b\n    when: false\n    run: echo 3\n",
    );
    assert_eq!(ok_output(&env.wf_tool(&f, None)), json!([1, 2]));
    let f = env.wf("e.lobster", "steps:\n  - id: a\n    run: 'true'\n");
    assert_eq!(ok_output(&env.wf_tool(&f, None)), json!([]));
    // Human mode prints nothing for an empty output, else the JSON.
    let r = env.run(&["run", "--file", &f]);
    assert_eq!((r.code, r.stdout.as_str()), (0, ""));
}

// ------------------------------------------------ errors, retry, timeout

#[test]
fn on_error_policies() {
    let env = Env::new();
    let f = env.wf(
        "e.lobster",
        "steps:\n  - id: ok\n    run: echo fine\n  - id: bad\n    run: echo oops >&2; exit 3\n    on_error: continue\n  - id: after\n    run: echo \"$bad.error $bad.errorMessage\"\n",
    );
    assert_eq!(
        ok_output(&env.wf_tool(&f, None)),
        json!(["true workflow command failed (3): oops\n"])
    );
    let f = env.wf(
        "s.lobster",
        "steps:\n  - id: ok\n    run: echo fine\n  - id: bad\n    run: exit 1\n    on_error: skip_rest\n  - id: never\n    run: echo never\n",
    );
    assert_eq!(ok_output(&env.wf_tool(&f, None)), json!(["fine\n"]));
    let f = env.wf("x.lobster", "steps:\n  - id: bad\n    run: exit 4\n");
    let r = env.wf_tool(&f, None);
    assert_eq!(r.code, 1);
    assert_eq!(error_message(&r), "workflow command failed (4): exit 4");
}

#[test]
fn retry_counts_total_attempts_and_timeout_is_per_attempt() {
    let env = Env::new();
    let f = env.wf(
        "r.lobster",
        "steps:\n  - id: flaky\n    run: echo x >> count; [ $(wc -l < count) -ge 3 ] && echo done\n    retry:\n      max: 3\n      delay_ms: 10\n",
    );
    let r = env.wf_tool(&f, None);
    assert_eq!(ok_output(&r), json!(["done\n"]));
    assert!(
        r.stderr
            .contains("[RETRY] Step 'flaky' failed (attempt 1/3): "),
        "{r:?}"
    );
    assert!(r.stderr.contains("Retrying in 10ms..."), "{r:?}");
    let f = env.wf(
        "t.lobster",
        "steps:\n  - id: slow\n    run: sleep 5\n    timeout_ms: 200\n    retry:\n      max: 2\n      delay_ms: 0\n",
    );
    let start = std::time::Instant::now();
    let r = env.wf_tool(&f, None);
    assert!(start.elapsed().as_secs_f64() < 3.0);
    assert_eq!(r.code, 1);
    assert_eq!(error_message(&r), "Step 'slow' timed out after 200ms");
    assert!(r.stderr.contains("attempt 1/2"), "{r:?}");
}

// ---------------------------------------------- for_each, parallel, compose

#[test]
fn for_each_iterates_with_scoped_refs() {
    let env = Env::new();
    let f = env.wf(
        "f.lobster",
        "steps:\n  - id: list\n    run: echo '[\"a\",\"b\"]'\n  - id: each\n    for_each: $list.json\n    steps:\n      - id: up\n        run: echo \"$index.stdout:$item.stdout\" | tr a-z A-Z\n      - id: skip\n        when: $index.json == 0\n        run: echo first\n",
    );
    assert_eq!(
        ok_output(&env.wf_tool(&f, None)),
        json!([
            {"item": "a", "index": 0, "up": "0:A\n", "skip": "first\n"},
            {"item": "b", "index": 1, "up": "1:B\n"}
        ])
    );
    let f = env.wf(
        "nf.lobster",
        "steps:\n  - id: one\n    run: echo 1\n  - id: each\n    for_each: $one.json\n    steps:\n      - id: x\n        run: echo\n",
    );
    let r = env.wf_tool(&f, None);
    assert_eq!(
        error_message(&r),
        "Workflow step each for_each: expected array, got number"
    );
}

#[test]
fn parallel_all_any_and_timeout() {
    let env = Env::new();
    let f = env.wf(
        "p.lobster",
        "steps:\n  - id: par\n    parallel:\n      branches:\n        - id: a\n          run: sleep 0.2; echo '{\"v\":1}'\n        - id: b\n          run: echo '{\"v\":2}'\n        - id: c\n          run: echo text\n  - id: sum\n    run: echo \"$a.json.v+$b.json.v $par.json.b.v\"\n",
    );
    let start = std::time::Instant::now();
    assert_eq!(ok_output(&env.wf_tool(&f, None)), json!(["1+2 2\n"]));
    assert!(start.elapsed().as_secs_f64() < 2.0);
    let f = env.wf(
        "any.lobster",
        "steps:\n  - id: par\n    parallel:\n      wait: any\n      branches:\n        - id: slow\n          run: sleep 5; echo slow\n        - id: fast\n          run: echo '\"fast\"'\n",
    );
    let start = std::time::Instant::now();
    assert_eq!(ok_output(&env.wf_tool(&f, None)), json!([{"fast": "fast"}]));
    assert!(start.elapsed().as_secs_f64() < 3.0);
    let f = env.wf(
        "to.lobster",
        "steps:\n  - id: par\n    parallel:\n      timeout_ms: 200\n      branches:\n        - id: s\n          run: sleep 5\n",
    );
    let r = env.wf_tool(&f, None);
    assert_eq!(error_message(&r), "Parallel step par timed out after 200ms");
    let f = env.wf(
        "fail.lobster",
        "steps:\n  - id: par\n    parallel:\n      branches:\n        - id: s\n          run: exit 2\n        - id: t\n          run: echo ok\n",
    );
    assert_eq!(
        error_message(&env.wf_tool(&f, None)),
        "Parallel branch failed: workflow command failed (2): exit 2"
    );
}

#[test]
fn composition_passes_args_and_detects_cycles() {
    let env = Env::new();
    env.wf(
        "sub/child.lobster",
        "args:\n  who:\n    required: true\nsteps:\n  - id: c\n    run: echo \"{\\\"who\\\":\\\"${who}\\\"}\"\n",
    );
    let f = env.wf(
        "parent.lobster",
        "steps:\n  - id: name\n    run: printf ann\n  - id: sub\n    workflow: sub/child.lobster\n    workflow_args:\n      who: $name.stdout\n  - id: out\n    run: echo \"$sub.json.who\"\n",
    );
    assert_eq!(ok_output(&env.wf_tool(&f, None)), json!(["ann\n"]));
    env.wf(
        "a.lobster",
        "steps:\n  - id: to_b\n    workflow: b.lobster\n",
    );
    env.wf(
        "b.lobster",
        "steps:\n  - id: to_a\n    workflow: a.lobster\n",
    );
    let r = env.wf_tool(&env.work_path("a.lobster").display().to_string(), None);
    assert_eq!(r.code, 2);
    assert!(
        error_message(&r).contains("Workflow step to_a creates a cycle: "),
        "{r:?}"
    );
    assert!(
        error_message(&r).ends_with("a.lobster is already being executed"),
        "{r:?}"
    );
    let f = env.wf(
        "m.lobster",
        "steps:\n  - id: s\n    workflow: missing.lobster\n",
    );
    assert!(
        error_message(&env.wf_tool(&f, None)).contains("Workflow step s workflow file not found: ")
    );
    env.wf("gated.lobster", "steps:\n  - id: g\n    approval: inner?\n");
    let f = env.wf(
        "outer.lobster",
        "steps:\n  - id: s\n    workflow: gated.lobster\n",
    );
    let r = env.wf_tool(&f, None);
    assert_eq!(
        error_message(&r),
        "Workflow step s sub-workflow halted for approval. Sub-workflow approval/input gates are not supported in composition."
    );
    assert_eq!(
        env.state_files(),
        Vec::<String>::new(),
        "no orphan child state"
    );
}
