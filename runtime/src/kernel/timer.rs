//! One thread for every timed event of the process's runs: deadlines and
//! the grace a cancelled run gets to stop. A run holds no thread of its own
//! for them (a server with many runs keeps one sleeping thread, not one per
//! run). Callbacks run on the timer thread and must be quick: they trigger
//! a cancellation or hand longer work to a thread of its own.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Instant;

type Callback = Box<dyn FnOnce() + Send>;

struct Entry {
    due: Instant,
    seq: u64,
    callback: Callback,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        (self.due, self.seq) == (other.due, other.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.due, self.seq).cmp(&(other.due, other.seq))
    }
}

#[derive(Default)]
struct Queue {
    entries: BinaryHeap<Reverse<Entry>>,
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
pub fn at(due: Instant, f: impl FnOnce() + Send + 'static) {
    let t = timer();
    let mut q = t.queue.lock().unwrap_or_else(|p| p.into_inner());
    let seq = q.next_seq;
    q.next_seq += 1;
    q.entries.push(Reverse(Entry {
        due,
        seq,
        callback: Box::new(f),
    }));
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
    t.changed.notify_one();
}

fn run() {
    let t = timer();
    let mut q = t.queue.lock().unwrap_or_else(|p| p.into_inner());
    loop {
        let now = Instant::now();
        match q.entries.peek() {
            None => q = t.changed.wait(q).unwrap_or_else(|p| p.into_inner()),
            Some(Reverse(e)) if e.due > now => {
                let wait = e.due - now;
                q = t
                    .changed
                    .wait_timeout(q, wait)
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
            }
            Some(_) => {
                let Some(Reverse(e)) = q.entries.pop() else {
                    continue;
                };
                drop(q);
                (e.callback)();
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
}
