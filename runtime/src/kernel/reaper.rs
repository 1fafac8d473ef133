//! The process groups of host steps outlive nothing, not even a SIGKILL of
//! Lobster.
//!
//! Cancellation ([`super::Cancel`]) kills a step's whole process group, and
//! `PR_SET_PDEATHSIG` kills the direct child when Lobster dies (only for
//! children spawned before the reaper is up: it needs a `fork` of Lobster,
//! which a long-running server with many threads pays for in page-table
//! copies and copy-on-write faults; once the reaper watches, children are
//! `posix_spawn`ed and the reaper alone takes them); but after a
//! SIGKILL no code of ours runs, so a grandchild (`sleep` started by
//! `sh -c 'sleep 300 & …'`) would live on. The reaper is a small `/bin/sh`
//! loop started once per process, at the first registered group, in a
//! process group of its own (so a signal to Lobster's group spares it). It
//! reads `+PGID` / `-PGID` lines from a pipe whose only writer is this
//! process; when the pipe closes — Lobster exited, however it died — it
//! SIGKILLs every group still listed and exits. A group is listed from the
//! moment its leader is spawned until that leader is reaped (the
//! [`super::GroupGuard`] drops), exactly as long as the cancellation tracks
//! it: a background process a step leaves behind after it ended normally is
//! not Lobster's to kill, as before.
//!
//! Limits, by construction: the reaper starts on a thread at the first
//! listed group (about a millisecond, off the run's path), and a SIGKILL
//! before it runs, or between a `spawn` and its `+PGID` write
//! (microseconds), leaves those groups unlisted (the direct child of a
//! spawn before the reaper was up still dies by its parent-death signal); a process that leaves its
//! group (`setsid`) escapes, as it escapes cancellation; if `/bin/sh` cannot
//! start, nothing changes from before (no reaper, no error: the direct
//! child still dies with its parent).

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::Mutex;

/// The reaper's loop (POSIX sh, builtins only: no process per message).
/// `groups` is a space-framed list; `-PGID` removes one entry.
const SCRIPT: &str = r#"groups=' '
while IFS= read -r line; do
  case $line in
    +*) groups="$groups${line#+} " ;;
    -*) g=${line#-}
        case $groups in *" $g "*) groups="${groups%%" $g "*} ${groups#*" $g "}" ;; esac ;;
  esac
done
for g in $groups; do kill -9 "-$g" 2>/dev/null; done
"#;

/// Where the reaper is. It starts on a thread of its own at the first
/// message (spawning `/bin/sh` costs about a millisecond, which a short run
/// should not wait for); messages sent meanwhile wait in `Starting`.
enum State {
    Idle,
    Starting(Vec<u8>),
    Ready(ChildStdin),
    /// It could not start, or its pipe broke: nothing to do any more.
    Off,
}

static REAPER: Mutex<State> = Mutex::new(State::Idle);

fn state() -> std::sync::MutexGuard<'static, State> {
    REAPER
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn send(line: &str) {
    let mut state = state();
    match &mut *state {
        State::Idle => {
            *state = State::Starting(line.as_bytes().to_vec());
            let started = std::thread::Builder::new()
                .name("lobster-reaper".into())
                .spawn(start);
            if started.is_err() {
                *state = State::Off;
            }
        }
        State::Starting(pending) => pending.extend_from_slice(line.as_bytes()),
        State::Ready(pipe) => {
            // A reaper that died (killed by hand) breaks the pipe.
            if pipe.write_all(line.as_bytes()).is_err() {
                *state = State::Off;
            }
        }
        State::Off => {}
    }
}

/// Spawn the reaper and hand it what was sent while it started.
fn start() {
    let spawned = Command::new("/bin/sh")
        .args(["-c", SCRIPT])
        // Builtins only: no PATH; no run directory held open.
        .env_clear()
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn();
    let mut state = state();
    let State::Starting(pending) = std::mem::replace(&mut *state, State::Off) else {
        return;
    };
    let Ok(mut child) = spawned else { return };
    let Some(mut pipe) = child.stdin.take() else {
        return;
    };
    // Never waited for: it must outlive us (init reaps it after we exit);
    // while we live it sleeps in `read`.
    std::mem::forget(child);
    if pipe.write_all(&pending).is_ok() {
        *state = State::Ready(pipe);
    }
}

/// Whether the reaper is running and listening: a group listed from now on
/// is killed if this process dies, however it dies. While it is, host
/// processes are spawned without `PR_SET_PDEATHSIG` (see
/// `process::spawn::die_with_parent`), which needs a `fork` of this whole
/// process instead of `posix_spawn`.
pub fn watching() -> bool {
    matches!(&*state(), State::Ready(_))
}

/// List `pgid` with the reaper (it is killed if this process dies first).
pub(super) fn list(pgid: i32) {
    if pgid > 1 {
        send(&format!("+{pgid}\n"));
    }
}

/// Take `pgid` off the reaper's list (its leader was reaped).
pub(super) fn unlist(pgid: i32) {
    if pgid > 1 {
        send(&format!("-{pgid}\n"));
    }
}

#[cfg(test)]
mod tests {
    use super::SCRIPT;
    use std::io::Write;
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};

    /// The loop itself: listed groups are killed at EOF, unlisted ones are
    /// not, and a `-PGID` that was never listed changes nothing.
    #[test]
    fn the_loop_kills_what_is_still_listed_when_its_pipe_closes() {
        let spawn_group = || {
            Command::new("sleep")
                .arg("30")
                .process_group(0)
                .spawn()
                .unwrap()
        };
        let (mut kept, mut dropped) = (spawn_group(), spawn_group());
        let mut reaper = Command::new("/bin/sh")
            .args(["-c", SCRIPT])
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        let mut pipe = reaper.stdin.take().unwrap();
        write!(
            pipe,
            "+{}\n+{}\n-{}\n-424242\n",
            kept.id(),
            dropped.id(),
            dropped.id()
        )
        .unwrap();
        drop(pipe);
        assert!(reaper.wait().unwrap().success());
        let status = kept.wait().unwrap();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(9),
            "the listed group was SIGKILLed"
        );
        assert!(
            dropped.try_wait().unwrap().is_none(),
            "an unlisted group lives on"
        );
        dropped.kill().unwrap();
        dropped.wait().unwrap();
    }
}
