//! The threads runs execute on. Every run gets a thread of its own, so the
//! caller can answer at its deadline even when the run does not stop (see
//! `exec::supervised`); a long-running process (`lobster serve`, `lobster
//! mcp`) reuses those threads instead of starting one per run. A thread
//! start costs a stack mapping, a clone and wasmtime's per-thread signal
//! stack set-up — a few percent of a short run under load.
//!
//! A run always gets a thread at once: an idle one if there is one, else a
//! new one (a run that never stops keeps its thread, as before). Threads
//! idle for [`IDLE_FOR`] end.
//!
//! Reuse across runs (and tenants) carries nothing over: Lobster keeps no
//! thread-local state, a run's `Context` is moved into the job and dropped
//! with it, and wasmtime's per-thread state (trap handling, the signal
//! stack) is made for many stores on one thread — tokio's blocking pool,
//! which calls `app::run`, already reuses its threads the same way.

use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// How long an idle thread waits for another run before it ends.
pub const IDLE_FOR: Duration = Duration::from_secs(30);

type Job = Box<dyn FnOnce() + Send>;

/// The idle threads, each by the sender of its own job channel, with an id
/// so a thread that times out can find (and withdraw) itself.
#[derive(Default)]
struct Idle {
    next_id: u64,
    threads: Vec<(u64, Sender<Job>)>,
}

fn idle() -> &'static Mutex<Idle> {
    static IDLE: OnceLock<Mutex<Idle>> = OnceLock::new();
    IDLE.get_or_init(Default::default)
}

/// Run `job` on an idle run thread, or on a new one.
pub fn spawn(job: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
    let mut job: Job = Box::new(job);
    loop {
        let taken = idle()
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .threads
            .pop();
        let Some((_, tx)) = taken else { break };
        // A thread that withdrew or died drops its receiver: try the next.
        match tx.send(job) {
            Ok(()) => return Ok(()),
            Err(mpsc::SendError(back)) => job = back,
        }
    }
    let (tx, rx) = mpsc::channel::<Job>();
    let id = {
        let mut idle = idle().lock().unwrap_or_else(|p| p.into_inner());
        idle.next_id += 1;
        idle.next_id
    };
    std::thread::Builder::new()
        .name("lobster-run".into())
        .spawn(move || {
            let mut next = Some(job);
            while let Some(job) = next.take() {
                job();
                idle()
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .threads
                    .push((id, tx.clone()));
                next = match rx.recv_timeout(IDLE_FOR) {
                    Ok(job) => Some(job),
                    Err(RecvTimeoutError::Timeout) => {
                        let mut idle = idle().lock().unwrap_or_else(|p| p.into_inner());
                        match idle.threads.iter().position(|(i, _)| *i == id) {
                            // Still listed: nobody will send; withdraw and end.
                            Some(at) => {
                                idle.threads.swap_remove(at);
                                None
                            }
                            // Taken meanwhile: its job is on the way.
                            None => {
                                drop(idle);
                                rx.recv().ok()
                            }
                        }
                    }
                    Err(RecvTimeoutError::Disconnected) => None,
                };
            }
        })
        .map(|_| ())
}

/// How many run threads are idle now (tests).
pub fn idle_count() -> usize {
    idle()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .threads
        .len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[test]
    fn threads_are_reused_and_every_job_runs_once() {
        let ran = Arc::new(AtomicUsize::new(0));
        let names = Arc::new(Mutex::new(std::collections::HashSet::new()));
        for _ in 0..200 {
            let (done_tx, done_rx) = mpsc::channel();
            let (ran, names) = (ran.clone(), names.clone());
            spawn(move || {
                ran.fetch_add(1, Ordering::SeqCst);
                names
                    .lock()
                    .unwrap()
                    .insert(format!("{:?}", std::thread::current().id()));
                done_tx.send(()).unwrap();
            })
            .unwrap();
            done_rx.recv().unwrap();
        }
        assert_eq!(ran.load(Ordering::SeqCst), 200);
        // One after another: far fewer threads than runs (other tests of
        // this process may hold some at the same time).
        assert!(
            names.lock().unwrap().len() < 50,
            "{:?}",
            names.lock().unwrap().len()
        );
    }

    #[test]
    fn a_busy_thread_does_not_hold_up_the_next_run() {
        let (release_tx, release_rx) = mpsc::channel::<()>();
        spawn(move || {
            let _ = release_rx.recv();
        })
        .unwrap();
        let (done_tx, done_rx) = mpsc::channel();
        for _ in 0..8 {
            let done_tx = done_tx.clone();
            spawn(move || done_tx.send(()).unwrap()).unwrap();
        }
        for _ in 0..8 {
            done_rx
                .recv_timeout(Duration::from_secs(10))
                .expect("every run started at once");
        }
        release_tx.send(()).unwrap();
    }
}
