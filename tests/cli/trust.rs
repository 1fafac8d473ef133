//! The trust layer through the binary: operator policy refusals at plan
//! time, `lobster check` of components, bundles and lock files, pins, and
//! approvals bound to a plan digest.

use crate::common::{err_message, guest, root, test_guest, token_of, write, Env};
use serde_json::Value;
use std::path::PathBuf;

#[test]
fn untrusted_policy_refuses_host_exec_before_anything_runs() {
    let env = Env::new();
    write(&env, "policy.toml", "trust = \"untrusted\"\n");
    let pipeline = "exec --shell 'touch first' | head | exec --shell 'touch second'";
    let r = env.run(&["run", "--mode", "tool", "--policy", "policy.toml", pipeline]);
    assert_eq!(r.code, 1, "{r:?}");
    let msg = err_message(&r);
    assert!(
        msg.starts_with("policy refuses this run: stage 1 (exec) runs host processes, which the untrusted policy forbids; stage 3 (exec) runs host processes"),
        "{msg}"
    );
    assert!(!env.work_path("first").exists() && !env.work_path("second").exists());

    // The same through LOBSTER_POLICY, and --dry-run refuses too.
    let out = env
        .command(&["run", "--dry-run", pipeline])
        .env("LOBSTER_POLICY", env.work_path("policy.toml"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("untrusted policy forbids"));
    // The caller cannot swap the operator's policy.
    let out = env
        .command(&["run", "--policy", "lax.toml", "head"])
        .env("LOBSTER_POLICY", env.work_path("policy.toml"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));

    // Without a policy (trusted, the reference's default) host exec runs.
    let r = env.tool("exec --shell 'touch first'");
    assert_eq!(r.code, 0, "{r:?}");
    assert!(env.work_path("first").exists());
}

#[test]
fn over_broad_grants_and_limits_are_each_named() {
    let env = Env::new();
    for d in ["data", "mail", "secrets", "database"] {
        std::fs::create_dir(env.work_path(d)).unwrap();
    }
    write(
        &env,
        "policy.yaml",
        "trust: untrusted\nroots: [data, mail]\nenv: [LANG]\nmax:\n  timeout_ms: 5000\n  output_bytes: 100000\n",
    );
    let r = env.run(&[
        "run",
        "--mode",
        "tool",
        "--policy",
        "policy.yaml",
        "--allow-read",
        "data",
        "--allow-write",
        "secrets",
        "--allow-read",
        "database",
        "--allow-env",
        "LANG",
        "--allow-env",
        "API_TOKEN",
        "--timeout-ms",
        "9000",
        "--max-stdout-bytes",
        "200000",
        "exec --shell 'touch ran'",
    ]);
    assert_eq!(r.code, 1, "{r:?}");
    assert_eq!(
        err_message(&r),
        "policy refuses this run: stage 1 (exec) runs host processes, which the untrusted policy forbids; \
         --allow-read database is outside the allowed roots [data, mail]; \
         --allow-write secrets is outside the allowed roots [data, mail]; \
         --allow-env API_TOKEN is not among the allowed variables [LANG]; \
         --timeout-ms 9000 is above the maximum 5000; \
         --max-stdout-bytes 200000 is above the maximum 100000"
    );
    assert!(!env.work_path("ran").exists());

    // Within the policy, a pure pipeline runs (tool-mode defaults above the
    // maxima are lowered, not refused).
    let r = env.run(&[
        "run",
        "--mode",
        "tool",
        "--policy",
        "policy.yaml",
        "--allow-read",
        "data",
        "--allow-env",
        "LANG",
        "commands.list | head --n 1",
    ]);
    assert_eq!(r.code, 0, "{r:?}");
}

#[test]
fn a_bad_policy_file_is_a_parse_error_naming_file_and_field() {
    let env = Env::new();
    write(
        &env,
        "p.toml",
        "trust = \"untrusted\"\nroots = [\"data\"]\n[max]\nfule = 5\n",
    );
    let r = env.run(&["run", "--mode", "tool", "--policy", "p.toml", "head"]);
    assert_eq!(r.code, 2, "{r:?}");
    let msg = err_message(&r);
    assert!(msg.contains("p.toml") && msg.contains("fule"), "{msg}");
    let r = env.run(&["run", "--mode", "tool", "--policy", "missing.toml", "head"]);
    assert_eq!(r.code, 2);
    assert!(err_message(&r).contains("missing.toml"));
}

#[test]
fn untrusted_policy_runs_sandboxed_steps_inside_the_roots() {
    let Some(list) = guest("examples/steps", "inbox_list") else {
        return;
    };
    let env = Env::new();
    let steps = env.work_path("steps");
    std::fs::create_dir(&steps).unwrap();
    std::fs::copy(&list, steps.join("inbox_list.wasm")).unwrap();
    let mail = env.work_path("mail");
    std::fs::create_dir(&mail).unwrap();
    std::fs::copy(
        root().join("examples/mail/001-budget-review.eml"),
        mail.join("001.eml"),
    )
    .unwrap();
    write(
        &env,
        "policy.toml",
        "trust = \"untrusted\"\nroots = [\"mail\"]\n[max]\nfuel = 5000000000\n",
    );
    let r = env.run(&[
        "run",
        "--mode",
        "tool",
        "--policy",
        "policy.toml",
        "--allow-read",
        "mail",
        "inbox.list | pick subject",
    ]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.json()["output"].as_array().map(Vec::len), Some(1));
}

#[test]
fn check_rejects_a_component_importing_what_the_host_lacks() {
    let Some(phone) = test_guest("phonehome") else {
        return;
    };
    let env = Env::new();
    let r = env.run(&["check", phone.to_str().unwrap()]);
    assert_eq!(r.code, 1, "{r:?}");
    let line = format!(
        "{}: imports lobster-test:phone/home, an interface the Lobster host does not provide",
        phone.display()
    );
    assert!(r.stdout.lines().any(|l| l == line), "{}", r.stdout);
    // A run refuses such a step before anything runs: the policy names the
    // import, or (as here, since resolving the stage links it) the linker
    // does, naming the interface the host lacks.
    let steps = env.work_path("steps");
    std::fs::create_dir(&steps).unwrap();
    std::fs::copy(&phone, steps.join("phonehome.wasm")).unwrap();
    write(&env, "p.toml", "trust = \"untrusted\"\n");
    let r = env.run(&["run", "--mode", "tool", "--policy", "p.toml", "phonehome"]);
    assert_eq!(r.code, 1, "{r:?}");
    let msg = err_message(&r);
    assert!(
        msg.contains("lobster-test:phone/home")
            && (msg.contains("which the untrusted policy refuses")
                || msg.contains("imports something Lobster does not provide")),
        "{msg}"
    );
    let r = env.run(&["check", "--format", "json", phone.to_str().unwrap()]);
    let doc = r.json();
    assert_eq!(doc["ok"], Value::Bool(false));
    assert!(doc["problems"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["message"]
            .as_str()
            .unwrap()
            .contains("lobster-test:phone/home")));
}

/// A component importing `wasi:sockets` passes `check` and the untrusted
/// policy (the host links sockets with every use refused), and when it
/// tries TCP, UDP and name lookup at run time each attempt is refused:
/// a listener on loopback sees no connection and no datagram.
#[test]
fn a_sockets_component_passes_check_and_every_use_is_refused() {
    let Some(net) = test_guest("net") else { return };
    let env = Env::new();
    let r = env.run(&["check", net.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{r:?}");
    let steps = env.work_path("steps");
    std::fs::create_dir(&steps).unwrap();
    std::fs::copy(&net, steps.join("net.wasm")).unwrap();
    write(&env, "p.toml", "trust = \"untrusted\"\n");
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    tcp.set_nonblocking(true).unwrap();
    let addr = tcp.local_addr().unwrap();
    let udp = std::net::UdpSocket::bind(addr).unwrap();
    udp.set_nonblocking(true).unwrap();
    let r = env.run(&[
        "run",
        "--mode",
        "tool",
        "--policy",
        "p.toml",
        &format!("net {addr}"),
    ]);
    assert_eq!(r.code, 0, "{r:?}");
    let out = r.json()["output"].clone();
    let attempts: Vec<&str> = out
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["attempt"].as_str().unwrap())
        .collect();
    assert_eq!(
        attempts,
        ["tcp connect", "tcp listen", "udp send", "lookup"],
        "{out}"
    );
    // Creating a TCP or UDP socket is refused with "access denied"; a
    // refused lookup reaches std as a resolver failure (EAI_FAIL).
    for item in &out.as_array().unwrap()[..3] {
        let why = item["refused"].as_str().unwrap().to_lowercase();
        assert!(why.contains("denied"), "{item}");
    }
    assert!(out[3]["refused"].as_str().is_some_and(|s| !s.is_empty()));
    assert!(tcp.accept().is_err(), "a TCP connection reached the host");
    let mut buf = [0u8; 16];
    assert!(
        udp.recv_from(&mut buf).is_err(),
        "a datagram reached the host"
    );
}

/// A bundle of the capgrab guest built through the CLI.
fn capgrab_bundle(env: &Env) -> Option<PathBuf> {
    let wasm = test_guest("capgrab")?;
    let src = env.work_path("src");
    std::fs::create_dir(&src).unwrap();
    std::fs::copy(wasm, src.join("capgrab.wasm")).unwrap();
    write(
        env,
        "src/bundle.toml",
        "source = \"https://example.org/capgrab\"\nlicense = \"MIT\"\n",
    );
    let r = env.run(&["bundle", "build", "src", "--out", "capgrab.bundle"]);
    assert_eq!(r.code, 0, "{r:?}");
    let manifest = std::fs::read_to_string(env.work_path("capgrab.bundle/manifest.toml")).unwrap();
    assert!(
        manifest.contains("capabilities = [\"write /mail\", \"env API_TOKEN\"]"),
        "{manifest}"
    );
    assert!(
        manifest.contains("license = \"MIT\"")
            && manifest.contains("world = \"lobster:step/step@0.1.0\"")
    );
    let r = env.run(&["bundle", "verify", "capgrab.bundle"]);
    assert_eq!(r.code, 0, "{r:?}");
    Some(env.work_path("capgrab.bundle"))
}

#[test]
fn check_rejects_a_manifest_that_lies_about_capabilities() {
    let env = Env::new();
    let Some(bundle) = capgrab_bundle(&env) else {
        return;
    };
    let manifest = bundle.join("manifest.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let lie = text.replace(
        "capabilities = [\"write /mail\", \"env API_TOKEN\"]",
        "capabilities = []",
    );
    std::fs::write(&manifest, &lie).unwrap();
    let line = lie
        .lines()
        .position(|l| l.starts_with("capabilities"))
        .unwrap()
        + 1;
    let r = env.run(&["check", "capgrab.bundle"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stdout.contains(&format!(
            "capgrab.bundle/manifest.toml:{line}: manifest says capabilities [], but describe returns [write /mail, env API_TOKEN]"
        )),
        "{}",
        r.stdout
    );
    assert_eq!(env.run(&["bundle", "verify", "capgrab.bundle"]).code, 1);
}

#[test]
fn check_rejects_a_tampered_bundle() {
    let env = Env::new();
    let Some(bundle) = capgrab_bundle(&env) else {
        return;
    };
    let Some(noop) = test_guest("noop") else {
        return;
    };
    std::fs::copy(noop, bundle.join("step.wasm")).unwrap();
    let r = env.run(&["check", "capgrab.bundle/manifest.toml"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stdout
            .contains("capgrab.bundle/manifest.toml:7: component step.wasm has blake3 "),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("the bundle was tampered with or is stale"),
        "{}",
        r.stdout
    );
}

#[test]
fn pins_refuse_a_changed_step_at_plan_time_and_in_check() {
    let (Some(noop), Some(grab)) = (test_guest("noop"), test_guest("capgrab")) else {
        return;
    };
    let env = Env::new();
    let steps = env.work_path("steps");
    std::fs::create_dir(&steps).unwrap();
    std::fs::copy(&noop, steps.join("noop.wasm")).unwrap();
    let r = env.run(&["lock"]);
    assert_eq!(r.code, 0, "{r:?}");
    let lock = std::fs::read_to_string(env.work_path("lobster.lock")).unwrap();
    assert!(lock.contains("\"noop\" = \""), "{lock}");
    assert_eq!(env.run(&["lock"]).code, 0);
    assert_eq!(
        std::fs::read_to_string(env.work_path("lobster.lock")).unwrap(),
        lock,
        "deterministic"
    );
    assert_eq!(env.tool("noop").code, 0);
    assert_eq!(env.run(&["check", "lobster.lock"]).code, 0);

    // Swap the component behind the name: the run is refused before anything runs.
    std::fs::copy(&grab, steps.join("noop.wasm")).unwrap();
    let r = env.tool("exec --shell 'touch ran' | noop");
    assert_eq!(r.code, 1, "{r:?}");
    let msg = err_message(&r);
    assert!(
        msg.starts_with("step noop does not match its pin in lobster.lock (pinned blake3 "),
        "{msg}"
    );
    assert!(!env.work_path("ran").exists());
    let r = env.run(&["check", "lobster.lock"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stdout
            .starts_with("lobster.lock:5: step noop is pinned to blake3 "),
        "{}",
        r.stdout
    );

    // Locking a pipeline pins only the steps it uses (built-ins are not pinned).
    let r = env.run(&["lock", "head --n 1 | noop"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(env.run(&["check", "lobster.lock"]).code, 0);
    let lock = std::fs::read_to_string(env.work_path("lobster.lock")).unwrap();
    assert_eq!(lock.matches(" = \"").count(), 1, "{lock}");
    std::fs::write(
        env.work_path("lobster.lock"),
        lock.replace("noop\" = \"", "noop\" = \"x"),
    )
    .unwrap();
    let r = env.run(&["check", "lobster.lock"]);
    assert_eq!(r.code, 1);
    assert!(r.stdout.contains("must be a blake3 digest"), "{}", r.stdout);
}

#[test]
fn check_passes_the_example_steps() {
    let Some(list) = guest("examples/steps", "inbox_list") else {
        return;
    };
    let dir = list.parent().unwrap();
    let mut args: Vec<String> = vec!["check".into()];
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "wasm") {
            args.push(e.path().display().to_string());
        }
    }
    let env = Env::new();
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = env.run(&refs);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.ends_with("0 problems\n"), "{}", r.stdout);
}

#[test]
fn check_arguments_and_unknown_files() {
    let env = Env::new();
    assert_eq!(env.run(&["check", "--format", "xml"]).code, 2);
    write(&env, "notes.txt", "hi");
    let r = env.run(&["check", "notes.txt", "nope.wasm"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stdout.contains("notes.txt: not a component"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("nope.wasm: "), "{}", r.stdout);
}

#[test]
fn approvals_carry_a_plan_digest_that_resume_verifies() {
    let env = Env::new();
    let pipeline = format!(
        "{} | approve --prompt 'go?' | exec --shell 'touch applied'",
        env.source("[{\"a\":1}]")
    );
    let r = env.tool(&pipeline);
    assert_eq!(r.code, 0, "{r:?}");
    let doc = r.json();
    let req = &doc["requiresApproval"];
    let keys = crate::common::keys(req);
    assert_eq!(
        keys[keys.len() - 4..],
        ["resumeToken", "approvalId", "planDigest", "capabilities"]
    );
    assert_eq!(req["planDigest"].as_str().unwrap().len(), 64);
    assert_eq!(
        req["capabilities"],
        serde_json::json!(["stage 3 (exec): runs host processes"])
    );

    // Tamper with what would run after the gate (the gated items): refused
    // before the claim, so nothing runs and the token stays usable.
    let state_file = env.state_file("pipeline_resume_");
    let original = std::fs::read_to_string(&state_file).unwrap();
    let mut state: Value = serde_json::from_str(&original).unwrap();
    state["items"] = serde_json::json!([{"a": 2}]);
    std::fs::write(&state_file, state.to_string()).unwrap();
    let token = token_of(&doc);
    let r = env.run(&["resume", "--token", &token, "--approve", "yes"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        err_message(&r).starts_with("the plan after the gate changed since it was approved"),
        "{r:?}"
    );
    assert!(!env.work_path("applied").exists());
    std::fs::write(&state_file, original).unwrap();
    let r = env.run(&["resume", "--token", &token, "--approve", "yes"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(env.work_path("applied").exists());
}

#[test]
fn untrusted_policy_refuses_workflow_host_steps_before_anything_runs() {
    let env = Env::new();
    write(&env, "policy.toml", "trust = \"untrusted\"\n");
    write(
        &env,
        "sub.lobster",
        "steps:\n  - id: inner\n    run: touch inner\n",
    );
    write(
        &env,
        "wf.lobster",
        "name: wf\nsteps:\n  - id: pure\n    pipeline: commands.list | head --n 1\n  - id: shell\n    run: touch ran\n  - id: piped\n    pipeline: exec --shell 'touch piped'\n  - id: nested\n    workflow: sub.lobster\n",
    );
    let r = env.run(&[
        "run",
        "--mode",
        "tool",
        "--policy",
        "policy.toml",
        "--file",
        "wf.lobster",
    ]);
    assert_eq!(r.code, 1, "{r:?}");
    let msg = err_message(&r);
    assert!(msg.starts_with("policy refuses this run: "), "{msg}");
    assert!(msg.contains("wf.lobster:5:5: step shell runs a host shell command, which the untrusted policy forbids"), "{msg}");
    assert!(
        msg.contains("step piped stage 1 (exec) runs host processes"),
        "{msg}"
    );
    assert!(
        msg.contains("step inner runs a host shell command"),
        "{msg}"
    );
    for f in ["ran", "piped", "inner"] {
        assert!(!env.work_path(f).exists(), "{f} ran");
    }
    // Trusted (no policy): the same workflow runs.
    let r = env.run(&["run", "--mode", "tool", "--file", "wf.lobster"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(env.work_path("ran").exists() && env.work_path("inner").exists());
}

#[test]
fn check_validates_workflow_files() {
    let env = Env::new();
    write(
        &env,
        "good.lobster",
        "steps:\n  - id: a\n    pipeline: head --n 1\n",
    );
    write(
        &env,
        "bad.lobster",
        "steps:\n  - id: a\n    pipeline: head --n 1\n  - id: a\n    run: echo\n",
    );
    assert_eq!(env.run(&["check", "good.lobster"]).code, 0);
    let r = env.run(&["check", "good.lobster", "bad.lobster"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stdout.starts_with("bad.lobster:4: "), "{}", r.stdout);
    assert!(
        r.stdout
            .contains("lobster check: 2 files checked, 1 problem"),
        "{}",
        r.stdout
    );
}

#[test]
fn workflow_permissions_narrow_what_steps_get() {
    let Some(grab) = test_guest("capgrab") else {
        return;
    };
    let env = Env::new();
    std::fs::create_dir(env.work_path("mail")).unwrap();
    std::fs::copy(&grab, env.work_path("capgrab.wasm")).unwrap();
    let wf = |perms: &str| {
        format!("permissions:\n{perms}steps:\n  - id: grab\n    uses: capgrab.wasm\n")
    };
    let run = |env: &Env| {
        env.command(&[
            "run",
            "--mode",
            "tool",
            "--allow-write",
            "mail",
            "--allow-env",
            "API_TOKEN",
            "--file",
            "wf.lobster",
        ])
        .env("API_TOKEN", "t")
        .output()
        .unwrap()
    };
    // Declared write + env: the step gets what it asks for.
    write(
        &env,
        "wf.lobster",
        &wf("  write: [mail]\n  env: [API_TOKEN]\n"),
    );
    let out = run(&env);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // Declared read only: the run's write grant is narrowed, so the step that
    // asks for write access is refused when the workflow is planned (the
    // workflow layer reports plan problems as parse errors).
    write(
        &env,
        "wf.lobster",
        &wf("  read: [mail]\n  env: [API_TOKEN]\n"),
    );
    let out = run(&env);
    assert_eq!(out.status.code(), Some(2));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("write access to /mail"), "{stdout}");
    // host_exec: false refuses host steps before anything runs.
    write(
        &env,
        "wf.lobster",
        "permissions:\n  host_exec: false\nsteps:\n  - id: sh\n    run: touch ran\n",
    );
    let r = env.run(&["run", "--mode", "tool", "--file", "wf.lobster"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(err_message(&r).contains("step sh runs a host shell command, which the workflow's permissions forbid (host_exec: false)"), "{r:?}");
    assert!(!env.work_path("ran").exists());
    // A bad block is a validation error naming the key.
    write(
        &env,
        "wf.lobster",
        "permissions:\n  nework: true\nsteps:\n  - id: sh\n    run: echo\n",
    );
    let r = env.run(&["check", "wf.lobster"]);
    assert_eq!(r.code, 1);
    assert!(r.stdout.contains("nework"), "{}", r.stdout);
}

#[test]
fn workflow_approvals_carry_a_plan_digest_that_resume_verifies() {
    let env = Env::new();
    write(
        &env,
        "wf.lobster",
        "steps:\n  - id: list\n    run: echo '[1,2]'\n  - id: review\n    approval: Go?\n  - id: apply\n    run: touch applied\n",
    );
    let r = env.run(&["run", "--mode", "tool", "--file", "wf.lobster"]);
    assert_eq!(r.code, 0, "{r:?}");
    let doc = r.json();
    assert_eq!(doc["status"], "needs_approval", "{doc}");
    let req = &doc["requiresApproval"];
    assert_eq!(req["planDigest"].as_str().map(str::len), Some(64), "{req}");
    assert_eq!(
        req["capabilities"],
        serde_json::json!(["step apply: runs a host shell command"])
    );
    let state_file = env.state_file("workflow_resume_");
    let original = std::fs::read_to_string(&state_file).unwrap();
    let mut state: Value = serde_json::from_str(&original).unwrap();
    state["steps"]["list"]["stdout"] = Value::String("[3]\n".into());
    std::fs::write(&state_file, state.to_string()).unwrap();
    let token = token_of(&doc);
    let r = env.run(&["resume", "--token", &token, "--approve", "yes"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        err_message(&r).starts_with("the plan after the gate changed"),
        "{r:?}"
    );
    assert!(!env.work_path("applied").exists());
    std::fs::write(&state_file, original).unwrap();
    let r = env.run(&["resume", "--token", &token, "--approve", "yes"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(env.work_path("applied").exists());
}

#[test]
fn workflow_steps_are_locked_and_pins_refuse_a_swap() {
    let (Some(noop), Some(probe)) = (test_guest("noop"), test_guest("probe")) else {
        return;
    };
    let env = Env::new();
    std::fs::copy(&noop, env.work_path("step.wasm")).unwrap();
    write(
        &env,
        "wf.lobster",
        "steps:\n  - id: a\n    uses: step.wasm\n  - id: b\n    run: touch ran\n",
    );
    let r = env.run(&["lock", "wf.lobster"]);
    assert_eq!(r.code, 0, "{r:?}");
    let lock = std::fs::read_to_string(env.work_path("lobster.lock")).unwrap();
    assert!(lock.contains("\"step.wasm\" = \""), "{lock}");
    assert_eq!(
        env.run(&["run", "--mode", "tool", "--file", "wf.lobster"])
            .code,
        0
    );
    std::fs::remove_file(env.work_path("ran")).unwrap();
    std::fs::copy(&probe, env.work_path("step.wasm")).unwrap();
    let r = env.run(&["run", "--mode", "tool", "--file", "wf.lobster"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        err_message(&r).starts_with("step step.wasm does not match its pin in lobster.lock"),
        "{r:?}"
    );
    assert!(!env.work_path("ran").exists());
    let r = env.run(&["check", "lobster.lock"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stdout
            .starts_with("lobster.lock:5: step step.wasm is pinned to blake3 "),
        "{}",
        r.stdout
    );
    // Checking the workflow alone reads ./lobster.lock too, as its run does.
    let r = env.run(&["check", "wf.lobster"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stdout
            .contains("step step.wasm does not match its pin in lobster.lock"),
        "{}",
        r.stdout
    );
}
