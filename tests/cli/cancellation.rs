//! Signals: the whole process group dies, exit 128+n, and a killed run
//! leaves no partial file in the state directory.

use crate::common::Env;
use std::time::Duration;

fn wait_for(path: &std::path::Path) -> String {
    for _ in 0..200 {
        let s = crate::common::read(path);
        if s.ends_with('\n') {
            return s;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("{} never appeared", path.display());
}

fn signal(pid: u32, sig: i32) {
    // SAFETY: kill(2) on our own child.
    unsafe {
        libc::kill(pid as i32, sig);
    }
}

#[test]
fn sigterm_kills_children_and_exits_143() {
    let env = Env::new();
    let pidfile = env.work_path("pid");
    let child = env.spawn(&[
        "run",
        "--mode",
        "tool",
        &format!(
            "exec --shell 'sleep 30 & echo $! > {}; wait'",
            pidfile.display()
        ),
    ]);
    let grandchild: u32 = wait_for(&pidfile).trim().parse().unwrap();
    signal(child.id(), libc::SIGTERM);
    let r = crate::common::finish(child.wait_with_output().unwrap());
    assert_eq!(r.code, 143, "{r:?}");
    assert_eq!(r.json()["error"]["message"], "Received SIGTERM");
    std::thread::sleep(Duration::from_millis(400));
    assert!(!crate::common::alive(grandchild), "grandchild survived");
}

#[test]
fn sigint_in_human_mode_exits_130() {
    let env = Env::new();
    let pidfile = env.work_path("pid");
    let child = env.spawn(&[&format!(
        "exec --shell 'echo $$ > {}; sleep 30'",
        pidfile.display()
    )]);
    wait_for(&pidfile);
    signal(child.id(), libc::SIGINT);
    let r = crate::common::finish(child.wait_with_output().unwrap());
    assert_eq!(
        (r.code, crate::common::without_run_line(&r.stderr)),
        (130, "Error: Received SIGINT\n")
    );
}

#[test]
fn killed_run_leaves_no_partial_state() {
    let env = Env::new();
    let pidfile = env.work_path("pid");
    // A run that is killed while it sits between writes of its state.
    let child = env.spawn(&[&format!(
        "exec --json --shell 'echo [1]' | state.set k1 | exec --shell 'echo $$ > {}; sleep 30'",
        pidfile.display()
    )]);
    wait_for(&pidfile);
    signal(child.id(), libc::SIGKILL);
    let _ = child.wait_with_output();
    let files = env.state_files();
    assert!(
        files.iter().all(|f| !f.ends_with(".tmp")),
        "partial files: {files:?}"
    );
    assert_eq!(files, vec!["k1.json".to_string()]);
}
