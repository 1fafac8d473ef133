//! A SIGKILL of `lobster` itself (no handler runs) still takes the whole
//! process group of a running host step with it: the reaper
//! (runtime/src/executor/reaper.rs) kills every listed group, and a step
//! spawned before the reaper was up also has PR_SET_PDEATHSIG.

use crate::common::{alive, read, write, Env};
use std::time::Duration;

/// The two pids (background grandchild, shell) the step wrote to `path`.
fn wait_for_pids(path: &std::path::Path) -> (u32, u32) {
    for _ in 0..400 {
        let s = read(path);
        if s.ends_with('\n') {
            let pids: Vec<u32> = s.split_whitespace().map(|p| p.parse().unwrap()).collect();
            return (pids[0], pids[1]);
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("{} never appeared", path.display());
}

/// Wait until `parent` has started its reaper (a `/bin/sh -c` child running
/// the reaper loop). It starts on a thread at the first host step, so a
/// SIGKILL in the first millisecond of that step is not covered (documented).
fn wait_for_reaper(parent: u32) {
    for _ in 0..400 {
        let found = std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            let dir = e.path();
            let stat = std::fs::read_to_string(dir.join("stat")).unwrap_or_default();
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|p| p.parse::<u32>().ok());
            ppid == Some(parent)
                && std::fs::read(dir.join("cmdline"))
                    .is_ok_and(|c| String::from_utf8_lossy(&c).contains("groups="))
        });
        if found {
            // Its pending list is written right after it starts.
            std::thread::sleep(Duration::from_millis(50));
            return;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("lobster {parent} started no reaper");
}

#[test]
fn sigkill_of_lobster_kills_the_grandchildren_of_a_shell_step() {
    let env = Env::new();
    let pidfile = env.work_path("pids");
    let line = format!("sleep 31 & echo $! $$ > {}; sleep 31", pidfile.display());
    let workflow = write(
        &env,
        "bg.lobster",
        &format!("name: bg\nsteps:\n  - id: s\n    run: '{line}'\n"),
    );
    let stage = format!("exec --shell '{line}'");
    for args in [
        vec!["run", "--mode", "tool", stage.as_str()],
        vec!["run", "--mode", "tool", workflow.to_str().unwrap()],
    ] {
        let _ = std::fs::remove_file(&pidfile);
        let mut lobster = env.spawn(&args);
        let (grandchild, shell) = wait_for_pids(&pidfile);
        assert!(alive(grandchild) && alive(shell), "{args:?}");
        wait_for_reaper(lobster.id());
        kill_and_expect_gone(&mut lobster, grandchild, shell, &format!("{args:?}"));
    }
}

/// A host step that starts once the reaper is up is spawned without
/// PR_SET_PDEATHSIG (a `posix_spawn`, no fork of lobster): the reaper alone
/// must take its shell and the shell's children with lobster.
#[test]
fn sigkill_of_lobster_kills_a_shell_started_after_the_reaper_is_up() {
    let env = Env::new();
    let pidfile = env.work_path("pids");
    let line = format!("sleep 31 & echo $! $$ > {}; sleep 31", pidfile.display());
    // The first step lists a group (the reaper starts) and ends; the second
    // starts after a pause, by when the reaper is watching.
    let workflow = write(
        &env,
        "late.lobster",
        &format!(
            "name: late\nsteps:\n  - id: first\n    run: 'true'\n  - id: later\n    run: 'sleep 0.5; {line}'\n"
        ),
    );
    let mut lobster = env.spawn(&["run", "--mode", "tool", workflow.to_str().unwrap()]);
    wait_for_reaper(lobster.id());
    let (grandchild, shell) = wait_for_pids(&pidfile);
    assert!(alive(grandchild) && alive(shell));
    kill_and_expect_gone(&mut lobster, grandchild, shell, "a late step");
}

/// SIGKILL `lobster` (no handler of ours runs) and expect its step's shell
/// and the shell's background child gone within 3 s.
fn kill_and_expect_gone(
    lobster: &mut std::process::Child,
    grandchild: u32,
    shell: u32,
    what: &str,
) {
    lobster.kill().unwrap();
    lobster.wait().unwrap();
    let gone = (0..120).any(|_| {
        std::thread::sleep(Duration::from_millis(25));
        !alive(grandchild) && !alive(shell)
    });
    assert!(
        gone,
        "{what}: after SIGKILL of lobster the shell is alive: {}, its background sleep: {}",
        alive(shell),
        alive(grandchild)
    );
}
