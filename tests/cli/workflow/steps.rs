//! What steps do with their inputs: templating without shell injection,
//! stdin forms and JSON paths, pipeline steps in process, data commands and
//! renderers, env, cwd and shell variables, plain commands, here-documents,
//! oversized inputs truncated in the envelope.

use super::{error_message, ok_output};
use crate::common::{token_of, Env};
use serde_json::json;

// ------------------------------------------------- templating and injection

#[test]
fn step_output_and_args_cannot_inject_shell_syntax() {
    let env = Env::new();
    let pwned = env.work_path("pwned");
    let f = env.wf(
        "inj.lobster",
        "args:\n  name:\n    default: x\nsteps:\n  - id: evil\n    run: printf '%s' '; touch pwned; echo $(touch pwned) `touch pwned`'\n  - id: use\n    run: echo $evil.stdout \"q:$evil.stdout\" 'sq:$evil.stdout' ${name}\n",
    );
    let r = env.wf_tool(&f, Some(r#"{"name":"$(touch pwned)"}"#));
    let out = ok_output(&r);
    let evil = "; touch pwned; echo $(touch pwned) `touch pwned`";
    assert_eq!(
        out,
        json!([format!("{evil} q:{evil} sq:{evil} $(touch pwned)\n")])
    );
    assert!(!pwned.exists(), "injected command ran");
    // Pipeline text: a value is one DSL token, it cannot add stages.
    let f = env.wf(
        "pinj.lobster",
        "steps:\n  - id: evil\n    run: printf '%s' 'x | exec --shell \"touch pwned\"'\n  - id: p\n    pipeline: exec --json --shell 'echo [1]' | head --n $evil.stdout\n",
    );
    let r = env.wf_tool(&f, None);
    assert!(!pwned.exists(), "injected stage ran: {r:?}");
}

#[test]
fn stdin_forms_and_json_paths() {
    let env = Env::new();
    let f = env.wf(
        "s.lobster",
        "steps:\n  - id: a\n    run: echo '{\"user\":{\"name\":\"ann\"},\"list\":[5,6]}'\n  - id: raw\n    run: cat\n    stdin: $a.stdout\n  - id: name\n    run: cat\n    stdin: $a.json.user.name\n  - id: idx\n    run: cat\n    stdin: $a.json.list.1\n  - id: obj\n    run: cat\n    stdin: $a.json.user\n  - id: tpl\n    run: cat\n    stdin: \"name=$name.stdout, n=$idx.json\"\n",
    );
    assert_eq!(ok_output(&env.wf_tool(&f, None)), json!(["name=ann, n=6"]));
}

// --------------------------------------------------------- pipeline steps

#[test]
fn pipeline_steps_run_in_process_with_stdin_items() {
    let env = Env::new();
    let f = env.wf(
        "p.lobster",
        "args:\n  n:\n    default: 2\nsteps:\n  - id: src\n    run: echo '[1,2,3]'\n  - id: top\n    pipeline: head --n ${n}\n    stdin: $src.json\n  - id: shell\n    pipeline: exec --shell 'echo one; echo two'\n  - id: last\n    run: echo \"$top.json $shell.stdout\"\n",
    );
    assert_eq!(
        ok_output(&env.wf_tool(&f, None)),
        json!(["[1,2] one\ntwo\n"])
    );
    let f = env.wf(
        "halt.lobster",
        "steps:\n  - id: p\n    pipeline: exec --json --shell 'echo [1]' | approve --prompt ok\n",
    );
    let r = env.wf_tool(&f, None);
    assert_eq!(r.code, 1);
    assert_eq!(
        error_message(&r),
        "Workflow step p halted for approval inside pipeline stage approve. Use a separate approval step in the workflow file."
    );
}

#[test]
fn pipeline_steps_use_data_commands_and_capture_renderers() {
    let env = Env::new();
    let f = env.wf(
        "d.lobster",
        "steps:\n  - id: src\n    run: echo '[{\"v\":1,\"n\":\"a\"},{\"v\":5,\"n\":\"b\"}]'\n  - id: thr\n    run: printf 2\n  - id: big\n    pipeline: where v>$thr.stdout | map --wrap item\n    stdin: $src.json\n  - id: js\n    pipeline: json\n    stdin: $big.json\n  - id: out\n    run: echo \"$big.json.item.n $js.json.0.item.v\"\n",
    );
    assert_eq!(ok_output(&env.wf_tool(&f, None)), json!(["b 5\n"]));
}

#[test]
fn step_env_cwd_and_shell_variables() {
    let env = Env::new();
    std::fs::create_dir_all(env.work_path("sub")).unwrap();
    let f = env.wf(
        "e.lobster",
        "args:\n  dir:\n    default: sub\nenv:\n  A: wf\n  B: wf\ncwd: ${dir}\nsteps:\n  - id: a\n    env:\n      B: step-$A\n    run: echo \"$A $B $(basename $(pwd)) $HOME.json\"\n  - id: b\n    cwd: .\n    run: basename $(pwd)\n",
    );
    let home = std::env::var("HOME").unwrap_or_default();
    let r = env.wf_tool(&f, None);
    assert_eq!(
        ok_output(&r),
        json!([env
            .work
            .path()
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .to_string()
            + "\n"])
    );
    let f2 = env.wf(
        "e2.lobster",
        &std::fs::read_to_string(&f)
            .unwrap()
            .replace("  - id: b\n    cwd: .\n    run: basename $(pwd)\n", ""),
    );
    assert_eq!(
        ok_output(&env.wf_tool(&f2, None)),
        json!([format!("wf step-wf sub {home}.json\n")])
    );
}

#[test]
fn oversized_input_subjects_are_truncated_in_the_envelope_only() {
    let env = Env::new();
    let f = env.wf(
        "big.lobster",
        "steps:\n  - id: big\n    run: python3 -c 'import json; print(json.dumps([\"x\" * 100] * 3000))'\n  - id: ask\n    input:\n      prompt: ok?\n      responseSchema: {type: boolean}\n  - id: count\n    run: python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'\n    stdin: $ask.subject\n",
    );
    let v = env.wf_tool(&f, None).json();
    let subject = &v["requiresInput"]["subject"];
    assert_eq!(subject["truncated"], true, "{subject}");
    assert!(subject["bytes"].as_u64().unwrap() > 192_000);
    assert_eq!(subject["preview"].as_str().unwrap().chars().count(), 2000);
    let r = env.run(&[
        "resume",
        "--token",
        &token_of(&v),
        "--response-json",
        "true",
    ]);
    assert_eq!(ok_output(&r), json!([3000]));
}

#[test]
fn plain_commands_and_missing_programs() {
    let env = Env::new();
    let f = env.wf(
        "p.lobster",
        "steps:\n  - id: a\n    run: printf hi\n  - id: b\n    run: wc -c\n    stdin: $a.stdout\n  - id: c\n    run: no-such-program-xyz --flag\n    on_error: continue\n  - id: d\n    run: no-such-program-xyz $b.json\n    on_error: continue\n  - id: e\n    run: echo \"$c.errorMessage|$d.error\"\n",
    );
    assert_eq!(
        ok_output(&env.wf_tool(&f, None)),
        json!(["workflow command failed (127): no-such-program-xyz: not found|true\n"])
    );
}

#[test]
fn here_documents_receive_values_as_data() {
    let env = Env::new();
    let f = env.wf(
        "h.lobster",
        "steps:\n  - id: evil\n    run: printf 'x\\nEOF\\ntouch pwned\\n'\n  - id: doc\n    run: |\n      cat <<EOF\n      got: $evil.stdout\n      EOF\n",
    );
    let out = ok_output(&env.wf_tool(&f, None));
    assert_eq!(out, json!(["got: x\nEOF\ntouch pwned\n\n"]));
    assert!(!env.work_path("pwned").exists());
    let f = env.wf(
        "q.lobster",
        "steps:\n  - id: a\n    run: printf hi\n  - id: doc\n    run: |\n      cat <<'EOF'\n      $a.stdout\n      EOF\n",
    );
    let r = env.wf_tool(&f, None);
    assert!(
        error_message(&r).starts_with(
            "Workflow step doc: $a.stdout cannot be used inside a quoted here-document"
        ),
        "{r:?}"
    );
}
