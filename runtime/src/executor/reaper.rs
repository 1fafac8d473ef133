//! The process groups of host steps outlive nothing, not even a SIGKILL of
//! Lobster.
//!
//! Cancellation ([`super::Cancel`]) kills a step's whole process group, and
//! `PR_SET_PDEATHSIG` kills the direct child when Lobster dies; but after a
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
//! Limits, by construction: a SIGKILL between `spawn` and the `+PGID` write
//! (microseconds) leaves that group unlisted; a process that leaves its
//! group (`setsid`) escapes, as it escapes cancellation; if `/bin/sh` cannot
//! start, nothing changes from before (no reaper, no error: the direct
//! child still dies with its parent).

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::{Mutex, OnceLock};

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

/// The pipe to the reaper, once started (`None`: it could not start).
static REAPER: OnceLock<Option<Mutex<ChildStdin>>> = OnceLock::new();

fn reaper() -> Option<&'static Mutex<ChildStdin>> {
    REAPER
        .get_or_init(|| {
            let mut child = Command::new("/bin/sh")
                .args(["-c", SCRIPT])
                // Builtins only: no PATH; no run directory held open.
                .env_clear()
                .current_dir("/")
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .process_group(0)
                .spawn()
                .ok()?;
            let pipe = child.stdin.take()?;
            // Never waited for: it must outlive us. Reaped by init after we
            // exit; while we live it sleeps in `read`.
            std::mem::forget(child);
            Some(Mutex::new(pipe))
        })
        .as_ref()
}

fn send(line: &str) {
    if let Some(pipe) = reaper() {
        // A reaper that died (killed by hand) makes this fail: nothing to do.
        let _ = pipe.lock().unwrap().write_all(line.as_bytes());
    }
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
