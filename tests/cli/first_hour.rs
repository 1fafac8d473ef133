//! What a new user meets in the first hour: mistyped subcommands and flags,
//! missing files, help for every subcommand, the version report, doctor on
//! a terminal, broken components and a missing Python SDK, and `lobster
//! check` finding what a run would fail on.

use crate::common::{bin, err_message, without_run_line, write, Env};
use serde_json::Value;

/// The subcommands `lobster help` documents.
const SUBCOMMANDS: &[&str] = &[
    "run",
    "resume",
    "call",
    "graph",
    "check",
    "bundle",
    "lock",
    "keys",
    "doctor",
    "mcp",
    "serve",
    "step",
    "steps",
    "store",
    "runs",
    "schema",
    "completions",
    "version",
    "help",
];

/// Run `command` (a shell line) under a pseudo-terminal (`script` from
/// util-linux), as a person at a terminal would; stdout and stderr both
/// arrive in the returned text.
pub fn on_a_terminal(env: &Env, command: &str, vars: &[(&str, &str)]) -> String {
    let mut c = std::process::Command::new("script");
    c.args(["-qec", command, "/dev/null"])
        .current_dir(env.work.path())
        .env("LOBSTER_STATE_DIR", env.state.path())
        .env("TERM", "xterm")
        .env_remove("NO_COLOR")
        .stdin(std::process::Stdio::null());
    for (k, v) in vars {
        c.env(k, v);
    }
    let out = c.output().expect("script(1) runs");
    String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n")
}

#[test]
fn a_mistyped_subcommand_is_suggested_from_subcommands_and_commands() {
    let env = Env::new();
    let r = env.run(&["rnu", "--mode", "tool", "head"]);
    assert_eq!(r.code, 1, "{r:?}");
    // Tool mode keeps the reference's message; the hint is for humans.
    assert_eq!(err_message(&r), "Unknown command: rnu");
    let r = env.run(&["rnu"]);
    assert_eq!(
        without_run_line(&r.stderr),
        "Error: Unknown command: rnu\n  rnu\n  ^^^\n  hint: did you mean `lobster run`? (`lobster help` lists the subcommands)\n"
    );
    let r = env.run(&["sortt"]);
    assert!(r.stderr.contains("hint: did you mean `sort`?"), "{r:?}");
    // A word near both: both are offered.
    let r = env.run(&["stor"]);
    assert!(
        r.stderr
            .contains("hint: did you mean the subcommand `lobster store` or the command `sort`?"),
        "{r:?}"
    );
    // `lobster help WORD` suggests from both too.
    let r = env.run(&["help", "doctr"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("did you mean `lobster doctor`?"), "{r:?}");
    // Subcommand words.
    let r = env.run(&["step", "bulid"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("hint: did you mean `build`?"), "{r:?}");
    let r = env.run(&["step", "publsh"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("hint: did you mean `publish`?"), "{r:?}");
    let r = env.run(&["rnus"]);
    assert!(r.stderr.contains("did you mean `lobster runs`?"), "{r:?}");
    let r = env.run(&["help", "veryfi"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("did you mean `lobster verify`?"), "{r:?}");
}

#[test]
fn mistyped_flags_of_subcommands_are_named_with_the_nearest() {
    let env = Env::new();
    for (argv, message) in [
        (
            &["run", "--mdoe", "tool", "head"][..],
            "lobster run: unknown flag --mdoe (did you mean --mode?)",
        ),
        (
            &["resume", "--tokn", "x", "--approve", "yes"][..],
            "lobster resume: unknown flag --tokn (did you mean --token?)",
        ),
        (
            &["check", "--fromat", "json"][..],
            "lobster check: unknown flag --fromat (did you mean --format?)",
        ),
        (
            &["mcp", "--polcy", "p.toml"][..],
            "lobster mcp: unknown flag --polcy (did you mean --policy?)",
        ),
        (
            &["serve", "--confg", "s.toml"][..],
            "lobster serve: unknown flag --confg (did you mean --config?)",
        ),
        (
            &["graph", "wf.lobster", "--fomat", "dot"][..],
            "lobster graph: unknown flag --fomat (did you mean --format?)",
        ),
        (
            &["steps", "precompile", "--step", "s"][..],
            "lobster steps: unknown flag --step (did you mean --steps?)",
        ),
        (
            &["step", "new", "x", "--lnag", "rust"][..],
            "lobster step: unknown flag --lnag (did you mean --lang?)",
        ),
        (
            &["keys", "new", "k", "--dri", "d"][..],
            "lobster keys: unknown flag --dri (did you mean --dir?)",
        ),
        (
            &["step", "pull", "oci://h/r:t", "--ot", "x"][..],
            "lobster step pull: unknown flag --ot (did you mean --out?)",
        ),
        (
            &["runs", "list", "--limt", "2"][..],
            "lobster runs: unknown flag --limt (did you mean --limit?)",
        ),
        (
            &["approvals", "--tenat", "t"][..],
            "lobster approvals: unknown flag --tenat (did you mean --tenant?)",
        ),
        (
            &["verify", "f.jsonl", "--rnu", "x"][..],
            "lobster verify: unknown flag --rnu (did you mean --run?)",
        ),
    ] {
        let r = env.run(argv);
        assert_eq!(r.code, 2, "{argv:?}: {r:?}");
        let text = if r.stdout.starts_with('{') {
            err_message(&r)
        } else {
            r.stderr.clone()
        };
        assert!(text.contains(message), "{argv:?}: {r:?}");
    }
    // Doctor's envelope (not a terminal) carries it too; notes stay notes.
    let r = env.run(&["doctor", "--stpes", "x"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert_eq!(
        err_message(&r),
        "lobster doctor: unknown flag --stpes (did you mean --steps?)"
    );
    let r = env.run(&["doctor", "a", "note"]);
    assert_eq!(
        r.json()["output"][0]["notes"],
        serde_json::json!(["a", "note"])
    );
}

/// A subcommand missing its argument says which one, and how to give it.
#[test]
fn a_subcommand_missing_its_argument_names_it() {
    let env = Env::new();
    for (argv, message) in [
        (
            &["keys", "new"][..],
            "lobster keys new needs the key's NAME",
        ),
        (&["runs", "show"][..], "lobster runs show takes one run id"),
        (
            &["runs", "export"][..],
            "lobster runs export takes one run id",
        ),
        (
            &["runs", "prune"][..],
            "lobster runs prune requires --older-than DURATION",
        ),
        (
            &["replay"][..],
            "lobster replay takes one run id or journal file",
        ),
        (&["step", "new"][..], "NAME is missing"),
    ] {
        let r = env.run(argv);
        assert_eq!(r.code, 2, "{argv:?}: {r:?}");
        assert!(r.stderr.contains(message), "{argv:?}: {r:?}");
    }
    let r = env.run(&["keys", "new"]);
    assert!(
        r.stderr.contains("hint: lobster keys new NAME [--dir DIR]"),
        "{r:?}"
    );
}

#[test]
fn a_missing_workflow_file_is_not_found_not_an_unknown_command() {
    let env = Env::new();
    let r = env.run(&["run", "wf/missing.lobster"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr
            .starts_with("Parse error: Workflow file not found: wf/missing.lobster\n"),
        "{r:?}"
    );
    let r = env.run(&["run", "--mode", "tool", "missing.yaml"]);
    assert_eq!(err_message(&r), "Workflow file not found: missing.yaml");
    let r = env.run(&["missing.lobster"]);
    assert_eq!(r.code, 2, "{r:?}");
}

#[test]
fn help_names_every_subcommand_and_each_has_its_own_help() {
    let env = Env::new();
    for name in SUBCOMMANDS {
        let r = env.run(&["help", name]);
        assert_eq!(r.code, 0, "{name}: {r:?}");
        assert!(
            r.stdout.starts_with(&format!("lobster {name} — ")),
            "{name}: {r:?}"
        );
    }
    // The journal's other two subcommands share `runs`' help, which shows them.
    for name in ["approvals", "verify"] {
        let r = env.run(&["help", name]);
        assert_eq!(r.code, 0, "{name}: {r:?}");
        assert!(r.stdout.starts_with("lobster runs — "), "{name}: {r:?}");
        assert!(
            r.stdout.contains(&format!("\n  lobster {name} ")),
            "{name}: {r:?}"
        );
    }
    // `lobster help` names every subcommand in its usage.
    let all = env.run(&["help"]);
    for name in SUBCOMMANDS.iter().chain(&["approvals", "verify"]) {
        assert!(
            all.stdout
                .lines()
                .any(|l| l.trim_start().starts_with("lobster ")
                    && l.split_whitespace().any(|w| w == *name)),
            "{name} missing from lobster help: {}",
            all.stdout
        );
    }
    // Pipeline commands keep the reference's help.
    let r = env.run(&["help", "head"]);
    assert_eq!(
        r.stdout,
        "head — take first N items\n\nUsage:\n  head --n 10\n"
    );
}

#[test]
fn version_is_the_references_and_verbose_names_commit_and_wasmtime() {
    let env = Env::new();
    let plain = env.run(&["version"]);
    assert_eq!(plain.stdout, format!("{}\n", env!("CARGO_PKG_VERSION")));
    assert_eq!(env.run(&["--version"]).stdout, plain.stdout);
    assert_eq!(env.run(&["-v"]).stdout, plain.stdout);
    let r = env.run(&["version", "--verbose"]);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines[0], format!("lobster {}", env!("CARGO_PKG_VERSION")));
    let commit = lines[1].strip_prefix("commit: ").expect("commit line");
    assert!(
        commit == "unknown"
            || (commit.len() == 12 && commit.bytes().all(|b| b.is_ascii_hexdigit())),
        "{commit}"
    );
    // The wasmtime the binary was built with, as Cargo.lock pins it.
    let lock = std::fs::read_to_string(crate::common::root().join("Cargo.lock")).unwrap();
    let locked = lock
        .split("[[package]]")
        .find(|p| p.contains("name = \"wasmtime\"\n"))
        .and_then(|p| p.lines().find_map(|l| l.strip_prefix("version = \"")))
        .map(|v| v.trim_end_matches('"'))
        .unwrap();
    assert_eq!(lines[2], format!("wasmtime: {locked}"));
    // The commit is this checkout's HEAD when git can tell.
    if let Ok(out) = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(crate::common::root())
        .output()
    {
        if out.status.success() && commit != "unknown" {
            let head = String::from_utf8_lossy(&out.stdout).trim().to_string();
            assert_eq!(commit, head, "rebuild after committing");
        }
    }
}

#[test]
fn doctor_names_commit_and_wasmtime_and_reads_well_on_a_terminal() {
    let env = Env::new();
    std::fs::set_permissions(
        env.state.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    let r = env.run(&["doctor"]);
    let report = &r.json()["output"][0];
    assert!(report["commit"].is_string(), "{r:?}");
    assert!(
        report["wasmtime"]
            .as_str()
            .is_some_and(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit())),
        "{r:?}"
    );
    let text = on_a_terminal(&env, &format!("{} doctor", bin()), &[("NO_COLOR", "1")]);
    assert!(
        text.starts_with(&format!("lobster {} (commit ", env!("CARGO_PKG_VERSION"))),
        "{text}"
    );
    assert!(text.contains("  ok  tool mode"), "{text}");
    assert!(text.contains("  ok  state directory"), "{text}");
    assert!(text.contains("checks passed."), "{text}");
    assert!(!text.contains('{'), "no JSON on a terminal: {text}");
    // --json on a terminal: the envelope.
    let text = on_a_terminal(&env, &format!("{} doctor --json", bin()), &[]);
    let v: Value = serde_json::from_str(&text).expect("an envelope");
    assert_eq!(v["ok"], true);
    // A problem shows its fix.
    std::fs::create_dir_all(env.work_path("state-open")).unwrap();
    let open = env.work_path("state-open");
    std::fs::set_permissions(&open, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let text = on_a_terminal(
        &env,
        &format!("{} doctor", bin()),
        &[
            ("LOBSTER_STATE_DIR", open.to_str().unwrap()),
            ("NO_COLOR", "1"),
        ],
    );
    assert!(text.contains("  !!  state directory"), "{text}");
    assert!(
        text.contains(&format!("fix: chmod 700 {}", open.display())),
        "{text}"
    );
    assert!(text.contains("1 problem found"), "{text}");
}

#[test]
fn colour_on_terminals_only_and_never_with_no_color() {
    let env = Env::new();
    let cmd = format!("{} sortt", bin());
    let coloured = on_a_terminal(&env, &cmd, &[]);
    assert!(coloured.contains("\x1b[1;31mError:\x1b[0m"), "{coloured:?}");
    assert!(coloured.contains("\x1b[36mhint:\x1b[0m"), "{coloured:?}");
    let plain = on_a_terminal(&env, &cmd, &[("NO_COLOR", "1")]);
    assert!(!plain.contains('\x1b'), "{plain:?}");
    assert!(
        plain.starts_with("Error: Unknown command: sortt"),
        "{plain:?}"
    );
    let never = on_a_terminal(&env, &format!("{} --color never sortt", bin()), &[]);
    assert!(!never.contains('\x1b'), "{never:?}");
    // Not a terminal: plain, unless asked.
    let r = env.run(&["sortt"]);
    assert!(!r.stderr.contains('\x1b'));
    let r = env.run(&["--color", "always", "sortt"]);
    assert!(r.stderr.starts_with("\x1b[1;31mError:\x1b[0m"), "{r:?}");
    let r = env.run(&["--color=sometimes", "sortt"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("--color must be auto, always or never"),
        "{r:?}"
    );
    // Envelopes are never coloured.
    let r = env.run(&["--color", "always", "run", "--mode", "tool", "sortt"]);
    assert!(!r.stdout.contains('\x1b'), "{r:?}");
}

#[test]
fn broken_components_are_described_plainly() {
    let env = Env::new();
    std::fs::create_dir_all(env.work_path("steps")).unwrap();
    std::fs::write(env.work_path("steps/junk.wasm"), b"garbage, not wasm").unwrap();
    std::fs::write(env.work_path("steps/core.wasm"), b"\0asm\x01\0\0\0").unwrap();
    std::fs::write(env.work_path("steps/cut.wasm"), b"\0asm\x0d\0\x01\0\x01").unwrap();
    let r = env.run(&["junk"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr
            .contains("junk.wasm: not a WebAssembly file (17 bytes, without the \\0asm header)"),
        "{r:?}"
    );
    let r = env.run(&["core"]);
    assert!(
        r.stderr
            .contains("core.wasm: a core WebAssembly module, not a component"),
        "{r:?}"
    );
    let r = env.run(&["cut"]);
    assert!(
        r.stderr
            .contains("cut.wasm: not a valid WebAssembly component:"),
        "{r:?}"
    );
    for r in [
        env.run(&["junk"]),
        env.run(&["cut"]),
        env.run(&["check", "steps"]),
        env.run(&["doctor"]),
    ] {
        let all = format!("{}{}", r.stdout, r.stderr);
        assert!(!all.contains("0x0,\n"), "no debug arrays: {all}");
        assert!(!all.contains("expected=[\n"), "{all}");
    }
    // `check` names the path once.
    let r = env.run(&["check", "steps/junk.wasm"]);
    assert!(
        r.stdout
            .starts_with("steps/junk.wasm: not a WebAssembly file"),
        "{r:?}"
    );
}

#[test]
fn a_python_step_without_the_sdk_says_how_to_install_it() {
    let env = Env::new();
    let Ok(python) = which("python3") else {
        eprintln!("SKIPPED: no python3");
        return;
    };
    let r = env.run(&["step", "new", "pystep", "--lang", "python"]);
    assert_eq!(r.code, 0, "{r:?}");
    let r = finish_in(
        &env,
        "pystep",
        &["step", "build"],
        &[("LOBSTER_PYTHON", &python)],
    );
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stderr.starts_with(&format!(
            "Error: the Python step SDK (module lobster_step) is not installed for {python}\n"
        )),
        "{r:?}"
    );
    assert!(r.stderr.contains("hint: install it into a virtual environment here: `python3 -m venv .venv && .venv/bin/pip install "), "{r:?}");
    assert!(r.stderr.contains("guest-sdk/python`"), "{r:?}");
}

fn which(name: &str) -> Result<String, ()> {
    let out = std::process::Command::new("sh")
        .args(["-c", &format!("command -v {name}")])
        .output()
        .map_err(|_| ())?;
    let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if out.status.success() && !path.is_empty() {
        Ok(path)
    } else {
        Err(())
    }
}

fn finish_in(env: &Env, dir: &str, args: &[&str], vars: &[(&str, &str)]) -> crate::common::Run {
    let mut c = env.command(args);
    c.current_dir(env.work_path(dir));
    for (k, v) in vars {
        c.env(k, v);
    }
    crate::common::finish(c.output().unwrap())
}

#[test]
fn check_resolves_uses_stage_names_and_flags_with_positions() {
    let env = Env::new();
    write(
        &env,
        "stages.lobster",
        "name: stages\nsteps:\n  - id: b\n    pipeline: exec --json --shell 'echo [1]' | sortt --key x\n  - id: c\n    pipeline: exec --json --shell 'echo [1]' | sort --kye x\n",
    );
    let r = env.run(&["check", "stages.lobster"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert_eq!(
        r.stdout,
        "stages.lobster:4: Workflow step b pipeline references unknown command: sortt (did you mean `sort`?)\n\
         stages.lobster:6: Workflow step c pipeline: Unknown flag --kye for sort (did you mean --key?)\n\
         lobster check: 1 file checked, 2 problems\n"
    );
    write(
        &env,
        "uses.lobster",
        "name: uses\nsteps:\n  - id: a\n    uses: steps/missing.wasm\n  - id: b\n    pipeline: exec --json --shell 'echo [1]' | nosuchstep\n",
    );
    let r = env.run(&["check", "uses.lobster"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stdout.contains(
            "uses.lobster:6: Workflow step b pipeline references unknown command: nosuchstep"
        ),
        "{r:?}"
    );
    write(
        &env,
        "uses2.lobster",
        "name: uses2\nsteps:\n  - id: a\n    uses: steps/missing.wasm\n",
    );
    let r = env.run(&["check", "uses2.lobster"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stdout.starts_with(
            "uses2.lobster:4: Workflow step a component not found: steps/missing.wasm"
        ),
        "{r:?}"
    );
    // The run fails the same way, before anything runs.
    let r = env.run(&["run", "--mode", "tool", "uses2.lobster"]);
    assert_ne!(r.code, 0);
    assert!(err_message(&r).contains("component not found"), "{r:?}");
}

#[test]
fn check_and_run_refuse_a_with_key_the_component_does_not_declare() {
    let env = Env::new();
    let Some(_) = env.copy_examples("steps") else {
        return;
    };
    write(
        &env,
        "list.lobster",
        "name: list\nsteps:\n  - id: first\n    run: touch ran\n  - id: list\n    uses: steps/inbox_list.wasm\n    with:\n      limt: 2\n",
    );
    let r = env.run(&["check", "list.lobster"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stdout.starts_with(
            "list.lobster:6: Workflow step list with: unknown key limt for inbox.list (did you mean limit?)\n"
        ),
        "{r:?}"
    );
    let r = env.run(&[
        "run",
        "--mode",
        "tool",
        "--allow-read",
        "mail",
        "list.lobster",
    ]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(err_message(&r).contains("with: unknown key limt"), "{r:?}");
    assert!(!env.work_path("ran").exists(), "nothing ran");
}

/// Run `argv` under a pseudo-terminal with `answer` typed in.
fn at_a_terminal_answering(env: &Env, argv: &[&str], answer: &str) -> String {
    let quoted: Vec<String> = std::iter::once(bin())
        .chain(argv.iter().copied())
        .map(|a| format!("'{}'", a.replace('\'', r"'\''")))
        .collect();
    let mut c = std::process::Command::new("script");
    c.args(["-qec", &quoted.join(" "), "/dev/null"])
        .current_dir(env.work.path())
        .env("LOBSTER_STATE_DIR", env.state.path())
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    let mut child = c.spawn().expect("script(1) runs");
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(answer.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n")
}

#[test]
fn the_terminal_approval_prompt_shows_what_is_approved_first() {
    let env = Env::new();
    let items: Vec<String> = (1..=12).map(|i| format!("\"send mail {i}\"")).collect();
    let src = env.source(&format!("[{}]", items.join(",")));
    let text = at_a_terminal_answering(
        &env,
        &[&format!(
            "{src} | approve --prompt 'Send them?' | head --n 1"
        )],
        "y\n",
    );
    let shown = "12 items:\n  1. send mail 1\n  2. send mail 2\n";
    let at = text.find(shown).unwrap_or_else(|| panic!("{text}"));
    let ask = text
        .find("Send them? [y/N] ")
        .unwrap_or_else(|| panic!("{text}"));
    assert!(at < ask, "the items come before the question: {text}");
    assert!(
        text.contains("  10. send mail 10\n  … and 2 more\n"),
        "{text}"
    );
    assert!(text.contains("\"send mail 1\"\n]"), "approved: {text}");
    // --preview-from-stdin: the preview is shown instead.
    let text = at_a_terminal_answering(
        &env,
        &[&format!(
            "{src} | approve --preview-from-stdin --limit 2 --prompt 'Send them?'"
        )],
        "n\n",
    );
    assert!(
        text.contains("  send mail 1\n  send mail 2\nSend them? [y/N] "),
        "{text}"
    );
    assert!(text.contains("Error: Not approved"), "{text}");
}

#[test]
fn a_workflow_gate_at_a_terminal_shows_its_plan() {
    let env = Env::new();
    write(
        &env,
        "wf.lobster",
        "name: plan\nsteps:\n  - id: plan\n    run: printf 'label 001 bills\\narchive 002\\n'\n  - id: ok\n    approval:\n      prompt: Apply the plan?\n      preview: $plan.stdout\n  - id: apply\n    run: echo applied\n",
    );
    let text = at_a_terminal_answering(&env, &["run", "wf.lobster"], "yes\n");
    assert!(
        text.contains("  label 001 bills\n  archive 002\nApply the plan? [y/N] "),
        "{text}"
    );
    assert!(text.contains("applied"), "{text}");
}

#[test]
fn without_a_terminal_the_pause_says_how_to_approve_by_id() {
    let env = Env::new();
    let r = env.run(&["exec --json --shell 'echo [1]' | approve --prompt ok?"]);
    assert_eq!(r.code, 0, "{r:?}");
    let id = r.json()[0]["approvalId"].as_str().unwrap().to_string();
    assert_eq!(
        without_run_line(&r.stderr),
        format!(
            "Paused for approval. Approve with: lobster resume --id {id} --approve yes (or --approve no to deny)\n"
        )
    );
    // The line is the command to run.
    let r = env.run(&["resume", "--id", &id, "--approve", "yes"]);
    assert_eq!(r.json()["output"], serde_json::json!([1]), "{r:?}");
    // A workflow's pause too; input gates name the token.
    write(
        &env,
        "gate.lobster",
        "name: gate\nsteps:\n  - id: ok\n    approval: Go?\n",
    );
    let r = env.run(&["run", "gate.lobster"]);
    assert!(
        r.stderr
            .starts_with("Paused for approval. Approve with: lobster resume --id "),
        "{r:?}"
    );
    let r = env.run(&["exec --json --shell 'echo [1]' | ask --prompt why"]);
    assert!(
        r.stderr
            .starts_with("Paused for input. Answer with: lobster resume --token "),
        "{r:?}"
    );
    assert!(
        without_run_line(&r.stderr).ends_with(" --response-json '<json>'\n"),
        "{r:?}"
    );
}
