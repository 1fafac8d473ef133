//! Behaviour of real children: argv vs shell, stdin, EPIPE, exit codes,
//! missing programs, the output cap, cancellation of whole trees, PATH.

use super::*;
use crate::error::Error;
use crate::kernel::{Cancel, CancelReason, Context, Mode};
use crate::state::StateStore;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn ctx_in(dir: &Path) -> Context {
    let mut ctx = Context::builder(Mode::Tool, StateStore::new(dir.join("state"))).build();
    ctx.cwd = dir.to_path_buf();
    ctx
}

fn with_env(ctx: &mut Context, f: impl FnOnce(&mut BTreeMap<String, String>)) {
    let mut env = (*ctx.env).clone();
    f(&mut env);
    ctx.env = Arc::new(env);
}

/// Whether `pid` is a live (not zombie) process.
fn alive(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    state_of(&stat).is_some_and(|s| s != 'Z' && s != 'X')
}

fn state_of(stat: &str) -> Option<char> {
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// Whether any live (not zombie) process is in group `pgid`.
fn group_alive(pgid: i32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|e| {
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            return false;
        };
        let Some((_, rest)) = stat.rsplit_once(')') else {
            return false;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        // After the command: state, ppid, pgrp, …
        fields.len() > 2 && fields[2] == pgid.to_string() && fields[0] != "Z" && fields[0] != "X"
    })
}

/// Wait (up to 5 s) for `cond` to hold; reaping by init may take a moment.
fn eventually(cond: impl Fn() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    cond()
}

fn read_pid(path: &Path) -> i32 {
    let start = Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            if let Ok(pid) = text.trim().parse() {
                return pid;
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "no pid in {path:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Arm the run's deadline only once the child wrote `pidfile`, so a slow
/// machine cannot cancel the child before it reported its pid.
fn deadline_once_written(ctx: &Context, pidfile: &Path, timeout: Duration) {
    let cancel = ctx.cancel.clone();
    let pidfile = pidfile.to_path_buf();
    std::thread::spawn(move || {
        read_pid(&pidfile);
        cancel.arm_deadline(timeout);
    });
}

fn message(e: &Error) -> String {
    e.to_string()
}

#[test]
fn argv_is_not_shell_interpreted() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx_in(dir.path());
    let done = Invocation::argv("echo", ["$HOME", "a  b", "*"])
        .run(&ctx)
        .unwrap();
    assert_eq!(done.stdout, "$HOME a  b *\n");
    assert!(done.success());
}

#[test]
fn shell_line_is_interpreted() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx_in(dir.path());
    let done = Invocation::shell("x=2; echo $((x+1)) | tr 3 Z")
        .run(&ctx)
        .unwrap();
    assert_eq!(done.stdout, "Z\n");
}

#[test]
fn stdin_is_fed_then_closed() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx_in(dir.path());
    let done = Invocation::shell("cat; echo end")
        .stdin(b"a\nb".to_vec())
        .run(&ctx)
        .unwrap();
    assert_eq!(done.stdout, "a\nbend\n");
    // No stdin given: an empty, closed pipe (cat must not hang).
    let done = Invocation::argv("cat", Vec::<String>::new())
        .run(&ctx)
        .unwrap();
    assert_eq!(done.stdout, "");
}

#[test]
fn child_exiting_without_reading_stdin_is_fine() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx_in(dir.path());
    let done = Invocation::argv("true", Vec::<String>::new())
        .stdin(vec![b'x'; 1 << 20])
        .run(&ctx)
        .unwrap();
    assert!(done.success());
}

#[test]
fn exit_code_and_signal_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx_in(dir.path());
    let done = Invocation::shell("echo out; echo err >&2; exit 3")
        .run(&ctx)
        .unwrap();
    assert_eq!(done.code, Some(3));
    assert_eq!(done.code_text(), "3");
    assert_eq!(
        (done.stdout.as_str(), done.stderr.as_str()),
        ("out\n", "err\n")
    );
    let done = Invocation::shell("kill -9 $$").run(&ctx).unwrap();
    assert_eq!((done.code, done.signal), (None, Some(9)));
    assert_eq!(done.code_text(), "null");
}

#[test]
fn invalid_utf8_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx_in(dir.path());
    let done = Invocation::shell("printf 'a\\377b'").run(&ctx).unwrap();
    assert_eq!(done.stdout, "a\u{FFFD}b");
}

#[test]
fn missing_program_and_shell() {
    let dir = tempfile::tempdir().unwrap();
    let mut ctx = ctx_in(dir.path());
    let err = Invocation::argv("lobster-no-such-program-xyz", ["a"])
        .run(&ctx)
        .unwrap_err();
    assert_eq!(
        message(&err),
        "command not found: lobster-no-such-program-xyz"
    );
    let err = Invocation::argv("./nope", Vec::<String>::new())
        .not_found("exec command not found: ./nope")
        .run(&ctx)
        .unwrap_err();
    assert_eq!(message(&err), "exec command not found: ./nope");
    let err = Invocation::argv("", Vec::<String>::new())
        .run(&ctx)
        .unwrap_err();
    assert_eq!(message(&err), "command not found: ");

    with_env(&mut ctx, |env| {
        env.insert("LOBSTER_SHELL".into(), "/nonexistent/shell".into());
    });
    let err = Invocation::shell("echo hi")
        .not_found("exec shell not found; check LOBSTER_SHELL or ComSpec")
        .run(&ctx)
        .unwrap_err();
    assert_eq!(
        message(&err),
        "exec shell not found; check LOBSTER_SHELL or ComSpec"
    );
}

#[test]
fn missing_cwd_is_not_reported_as_missing_program() {
    let dir = tempfile::tempdir().unwrap();
    let mut ctx = ctx_in(dir.path());
    ctx.cwd = dir.path().join("gone");
    let err = Invocation::argv("true", Vec::<String>::new())
        .run(&ctx)
        .unwrap_err();
    assert!(
        message(&err).starts_with("working directory not found: "),
        "{err}"
    );
}

#[test]
fn nul_bytes_are_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx_in(dir.path());
    assert!(Invocation::argv("echo", ["a\0b"]).run(&ctx).is_err());
    assert!(Invocation::shell("echo a\0b").run(&ctx).is_err());
}

#[test]
fn env_is_exactly_the_context_env_and_cwd_is_used() {
    let dir = tempfile::tempdir().unwrap();
    let mut ctx = ctx_in(dir.path());
    let path = ctx.env.get("PATH").cloned().unwrap_or_default();
    ctx.env = Arc::new(BTreeMap::from([
        ("PATH".to_string(), path),
        ("ONLY_THIS".to_string(), "yes".to_string()),
    ]));
    let done = Invocation::shell("echo \"$ONLY_THIS:${HOME-unset}\"; pwd -P")
        .run(&ctx)
        .unwrap();
    let real = std::fs::canonicalize(dir.path()).unwrap();
    assert_eq!(done.stdout, format!("yes:unset\n{}\n", real.display()));
}

#[test]
fn callers_path_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let tool = bin.join("lobster-test-tool");
    std::fs::write(&tool, "#!/bin/sh\necho found \"$@\"\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut ctx = ctx_in(dir.path());
    with_env(&mut ctx, |env| {
        let old = env.get("PATH").cloned().unwrap_or_default();
        env.insert("PATH".into(), format!("{}:{old}", bin.display()));
    });
    let done = Invocation::shell("lobster-test-tool via-shell")
        .run(&ctx)
        .unwrap();
    assert_eq!(done.stdout, "found via-shell\n");
    let done = Invocation::argv("lobster-test-tool", ["direct"])
        .run(&ctx)
        .unwrap();
    assert_eq!(done.stdout, "found direct\n");
}

#[test]
fn output_cap_kills_the_group() {
    for (stream, redirect) in [("stdout", ""), ("stderr", " >&2")] {
        let dir = tempfile::tempdir().unwrap();
        let mut ctx = ctx_in(dir.path());
        ctx.limits.max_output_bytes = Some(1024);
        let pidfile = dir.path().join("pid");
        let line = format!(
            "echo $$ > '{}'; yes | head -c 2000000{redirect}; sleep 30",
            pidfile.display()
        );
        let start = Instant::now();
        let err = Invocation::shell(line).run(&ctx).unwrap_err();
        assert_eq!(
            message(&err),
            format!("lobster {stream} exceeded maxStdoutBytes")
        );
        assert!(start.elapsed() < Duration::from_secs(10));
        let pgid = read_pid(&pidfile);
        assert!(eventually(|| !group_alive(pgid)), "group {pgid} survived");
    }
}

#[test]
fn output_at_the_cap_is_fine_and_override_wins() {
    let dir = tempfile::tempdir().unwrap();
    let mut ctx = ctx_in(dir.path());
    ctx.limits.max_output_bytes = Some(4);
    let done = Invocation::shell("printf abcd").run(&ctx).unwrap();
    assert_eq!(done.stdout, "abcd");
    let done = Invocation::shell("printf abcdef")
        .max_output_bytes(None)
        .run(&ctx)
        .unwrap();
    assert_eq!(done.stdout, "abcdef");
}

#[test]
fn timeout_kills_the_whole_tree() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx_in(dir.path());
    let pidfile = dir.path().join("pid");
    deadline_once_written(&ctx, &pidfile, Duration::from_millis(200));
    let start = Instant::now();
    let line = format!("sleep 30 & echo $! > '{}'; wait", pidfile.display());
    let err = Invocation::shell(line).run(&ctx).unwrap_err();
    assert_eq!(message(&err), "lobster runtime timed out");
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    let grandchild = read_pid(&pidfile);
    assert!(
        eventually(|| !alive(grandchild)),
        "sleep {grandchild} survived"
    );
}

#[test]
fn grandchild_holding_the_pipe_does_not_block_cancel() {
    // The grandchild leaves the group (setsid-like via a new group) but keeps
    // stdout open; the cancelled capture must still return.
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx_in(dir.path());
    if !Invocation::shell("command -v perl")
        .run(&ctx)
        .unwrap()
        .success()
    {
        eprintln!("skipped: no perl to leave the process group with");
        return;
    }
    let pidfile = dir.path().join("pid");
    deadline_once_written(&ctx, &pidfile, Duration::from_millis(200));
    let start = Instant::now();
    let line = format!(
        "perl -e 'setpgrp(0,0); sleep 20' & echo $! > '{}'; wait",
        pidfile.display()
    );
    let err = Invocation::shell(line).run(&ctx).unwrap_err();
    assert_eq!(message(&err), "lobster runtime timed out");
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    let stray = read_pid(&pidfile);
    kill_group(stray, libc::SIGKILL);
}

#[test]
fn an_already_cancelled_run_starts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx_in(dir.path());
    ctx.cancel.trigger(CancelReason::Timeout);
    let marker = dir.path().join("ran");
    let err = Invocation::shell(format!("touch '{}'", marker.display()))
        .run(&ctx)
        .unwrap_err();
    assert_eq!(message(&err), "lobster runtime timed out");
    assert!(!marker.exists());
}

#[test]
fn signal_cancels_with_term_then_kill() {
    let dir = tempfile::tempdir().unwrap();
    let mut ctx = ctx_in(dir.path());
    let cancel = Cancel::default();
    ctx.cancel = cancel.clone();
    signals::install(&[("SIGHUP", libc::SIGHUP)], &cancel).unwrap();
    let pidfile = dir.path().join("pid");
    let raiser = {
        let pidfile = pidfile.clone();
        std::thread::spawn(move || {
            read_pid(&pidfile);
            // Only this process gets SIGHUP; its handler was installed above.
            signal_hook::low_level::raise(libc::SIGHUP).unwrap();
            std::thread::sleep(Duration::from_millis(50));
            signal_hook::low_level::raise(libc::SIGHUP).unwrap();
        })
    };
    let start = Instant::now();
    // The child ignores SIGTERM (and so does its sleep): only SIGKILL stops it.
    let line = format!("trap '' TERM; echo $$ > '{}'; sleep 30", pidfile.display());
    let err = Invocation::shell(line).run(&ctx).unwrap_err();
    raiser.join().unwrap();
    assert_eq!(message(&err), "Received SIGHUP");
    assert_eq!(err.exit_code(), 129);
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    let pgid = read_pid(&pidfile);
    assert!(eventually(|| !group_alive(pgid)), "group {pgid} survived");
    assert_eq!(
        cancel.reason(),
        Some(CancelReason::Signal {
            name: "SIGHUP",
            number: libc::SIGHUP
        })
    );
}
