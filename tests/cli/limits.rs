//! The tool contract's limits: timeout, output caps.

use crate::common::Env;
use serde_json::json;
use std::time::{Duration, Instant};

#[test]
fn timeout_kills_the_child_tree() {
    let env = Env::new();
    let pidfile = env.work_path("pid");
    let start = Instant::now();
    let r = env.run(&[
        "run",
        "--mode",
        "tool",
        "--timeout-ms",
        "300",
        &format!(
            "exec --shell 'sleep 30 & echo $! > {}; wait'",
            pidfile.display()
        ),
    ]);
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "took {:?}",
        start.elapsed()
    );
    assert_eq!(r.code, 1, "{r:?}");
    assert_eq!(
        r.json()["error"],
        json!({"type":"runtime_error","message":"lobster runtime timed out"})
    );
    let pid: u32 = crate::common::read(&pidfile).trim().parse().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        !crate::common::alive(pid),
        "grandchild {pid} survived the timeout"
    );
}

#[test]
fn timeout_is_clamped_to_200ms() {
    let env = Env::new();
    // 1 ms would kill even `echo`; the floor of 200 ms lets it finish.
    let r = env.run(&[
        "run",
        "--mode",
        "tool",
        "--timeout-ms",
        "1",
        "exec --json --shell 'echo [1]'",
    ]);
    assert_eq!(r.json()["output"], json!([1]), "{r:?}");
}

#[test]
fn child_output_cap() {
    let env = Env::new();
    let r = env.run(&[
        "run",
        "--mode",
        "tool",
        "--max-stdout-bytes",
        "2000",
        "exec --shell 'yes | head -c 100000'",
    ]);
    assert_eq!(r.code, 1, "{r:?}");
    assert_eq!(
        r.json()["error"]["message"],
        "lobster stdout exceeded maxStdoutBytes"
    );
    let r = env.run(&[
        "run",
        "--mode",
        "tool",
        "--max-stdout-bytes",
        "2000",
        "exec --shell 'yes >&2 | head -c 100000 >&2'",
    ]);
    assert_eq!(
        r.json()["error"]["message"],
        "lobster stderr exceeded maxStdoutBytes",
        "{r:?}"
    );
}

#[test]
fn envelope_cap_and_env_variable() {
    let env = Env::new();
    // 692 bytes from the child (under every cap below), ~1.9 kB as an envelope.
    let big = "exec --json --shell 'echo [$(seq -s, 1 200)]'";
    let r = env.run(&["run", "--mode", "tool", "--max-stdout-bytes", "1024", big]);
    assert_eq!(r.code, 1, "{r:?}");
    assert_eq!(
        r.json()["error"]["message"],
        "lobster runtime result exceeded maxStdoutBytes"
    );
    let r = env.run(&["run", "--mode", "tool", big]);
    assert_eq!(
        r.json()["output"].as_array().map(Vec::len),
        Some(200),
        "{r:?}"
    );
    // `LOBSTER_MAX_OUTPUT_BYTES` caps each child (as in the reference), not
    // the envelope: 692 bytes of child output pass a 1500-byte cap.
    let r = crate::common::finish(
        env.command(&["run", "--mode", "tool", big])
            .env("LOBSTER_MAX_OUTPUT_BYTES", "1500")
            .output()
            .unwrap(),
    );
    assert_eq!(
        r.json()["output"].as_array().map(Vec::len),
        Some(200),
        "{r:?}"
    );
}

#[test]
fn human_mode_has_no_default_cap() {
    let env = Env::new();
    let r = env.run(&["exec --shell 'yes | head -c 1000000'"]);
    assert_eq!(r.code, 0);
    assert!(r.stdout.len() > 1_000_000);
}

/// `steps/` in a fresh work directory with the `hostile` and `probe` guests.
fn guests() -> Option<Env> {
    let env = Env::new();
    std::fs::create_dir_all(env.work_path("steps")).unwrap();
    for name in ["hostile", "probe"] {
        let built = crate::common::test_guest(name)?;
        std::fs::copy(built, env.work_path(&format!("steps/{name}.wasm"))).unwrap();
    }
    Some(env)
}

#[test]
fn wasm_steps_run_under_a_strict_address_space_limit() {
    let Some(env) = guests() else { return };
    // A 4 GiB reservation per memory does not fit in 2 GiB of address
    // space; the engine sees the limit and reserves nothing, limits intact.
    let run = |pipeline: &str| {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "ulimit -v 2000000 && exec \"$0\" run --mode tool '{pipeline}'"
            ))
            .arg(crate::common::bin())
            .current_dir(env.work.path())
            .env("LOBSTER_STATE_DIR", env.state.path())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        crate::common::finish(out)
    };
    let r = run("probe args");
    assert_eq!(r.json()["ok"], true, "{r:?}");
    let r = run("hostile grow");
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("exceeded its memory limit"),
        "{r:?}"
    );
}

#[test]
fn the_wasm_allocator_can_be_chosen_and_a_bad_choice_is_named() {
    let Some(env) = guests() else { return };
    let run = |allocator: &str, pipeline: &str| {
        crate::common::finish(
            env.command(&["run", "--mode", "tool", pipeline])
                .env("LOBSTER_WASM_ALLOCATOR", allocator)
                .output()
                .unwrap(),
        )
    };
    let r = run("compact", "hostile loop");
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("ran out of fuel"),
        "{r:?}"
    );
    for allocator in ["compact", "reserved", "pooling"] {
        let r = run(allocator, "probe args");
        assert_eq!(r.json()["ok"], true, "{allocator}: {r:?}");
    }
    let r = run("mmap-everything", "probe args");
    assert_eq!(r.code, 1, "{r:?}");
    assert_eq!(
        r.json()["error"]["message"],
        "wasm runtime: LOBSTER_WASM_ALLOCATOR must be reserved, compact or pooling, got \"mmap-everything\""
    );
}
