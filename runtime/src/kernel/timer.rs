//! One thread for every timed event of the process's runs: deadlines and
//! the grace a cancelled run gets to stop. A run holds no thread of its own
//! for them (a server with many runs keeps one sleeping thread, not one per
//! run). Callbacks run on the timer thread and must be quick: they trigger
//! a cancellation or hand longer work to a thread of its own.

use std::collections::BTreeMap;
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Instant;

type Callback = Box<dyn FnOnce() + Send>;

/// An event scheduled with [`at`]: pass it to [`forget`] when it is no
/// longer wanted (a run that ended before its deadline), so that a busy
/// server's queue holds only the deadlines of runs still going on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Scheduled {
    due: Instant,
    seq: u64,
}

#[derive(Default)]
struct Queue {
    entries: BTreeMap<Scheduled, Callback>,
    next_seq: u64,
    started: bool,
}

struct Timer {
    queue: Mutex<Queue>,
    changed: Condvar,
}

fn timer() -> &'static Timer {
    static TIMER: OnceLock<Timer> = OnceLock::new();
    TIMER.get_or_init(|| Timer {
        queue: Mutex::default(),
        changed: Condvar::new(),
    })
}

/// Call `f` on the timer thread once `due` has passed.
pub fn at(due: Instant, f: impl FnOnce() + Send + 'static) -> Scheduled {
    let t = timer();
    let mut q = t.queue.lock().unwrap_or_else(|p| p.into_inner());
    let key = Scheduled {
        due,
        seq: q.next_seq,
    };
    q.next_seq += 1;
    // The thread sleeps until the earliest event: only a new earliest one
    // needs to wake it (one wake-up per run's deadline cost a context
    // switch per run on a busy server).
    let earliest = q.entries.first_key_value().is_none_or(|(k, _)| key < *k);
    q.entries.insert(key, Box::new(f));
    if !q.started {
        q.started = true;
        let spawned = std::thread::Builder::new()
            .name("lobster-timer".into())
            .spawn(run);
        if spawned.is_err() {
            // No thread: nothing would ever fire. Try again at the next call.
            q.started = false;
        }
    }
    if earliest {
        t.changed.notify_one();
    }
    key
}

/// Drop a scheduled event before it fires; `false` when it fired (or was
/// forgotten) already.
pub fn forget(key: Scheduled) -> bool {
    let removed = {
        let t = timer();
        let mut q = t.queue.lock().unwrap_or_else(|p| p.into_inner());
        q.entries.remove(&key)
    };
    // Dropped outside the lock: a callback may own anything.
    removed.is_some()
}

fn run() {
    let t = timer();
    let mut q = t.queue.lock().unwrap_or_else(|p| p.into_inner());
    loop {
        let now = Instant::now();
        match q.entries.first_key_value() {
            None => q = t.changed.wait(q).unwrap_or_else(|p| p.into_inner()),
            Some((k, _)) if k.due > now => {
                let wait = k.due - now;
                q = t
                    .changed
                    .wait_timeout(q, wait)
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
            }
            Some(_) => {
                let Some((_, callback)) = q.entries.pop_first() else {
                    continue;
                };
                drop(q);
                callback();
                q = t.queue.lock().unwrap_or_else(|p| p.into_inner());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    #[test]
    fn callbacks_fire_in_due_order() {
        let (tx, rx) = mpsc::channel();
        let now = Instant::now();
        for (i, ms) in [(1, 60u64), (2, 20), (3, 40)] {
            let tx = tx.clone();
            at(now + Duration::from_millis(ms), move || {
                let _ = tx.send(i);
            });
        }
        let got: Vec<i32> = (0..3)
            .map(|_| rx.recv_timeout(Duration::from_secs(10)).unwrap())
            .collect();
        assert_eq!(got, [2, 3, 1]);
        assert!(now.elapsed() >= Duration::from_millis(60));
    }

    #[test]
    fn a_forgotten_event_never_fires() {
        let (tx, rx) = mpsc::channel();
        let now = Instant::now();
        let t1 = tx.clone();
        let gone = at(now + Duration::from_millis(20), move || {
            let _ = t1.send("forgotten");
        });
        at(now + Duration::from_millis(60), move || {
            let _ = tx.send("kept");
        });
        assert!(forget(gone));
        assert!(!forget(gone), "forgotten twice");
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Ok("kept"));
        assert!(rx.try_recv().is_err());
    }

    #[test]
    fn an_event_that_fired_cannot_be_forgotten() {
        let (tx, rx) = mpsc::channel();
        let key = at(Instant::now(), move || {
            let _ = tx.send(());
        });
        rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(!forget(key));
    }
}
