//! Cancellation: a run-wide flag set by a deadline or a signal, plus the set of
//! child process groups to kill when it fires.

use crate::error::Error;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

/// Why a run was cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelReason {
    /// `--timeout-ms` ran out.
    Timeout,
    /// SIGINT, SIGTERM, SIGHUP or SIGQUIT.
    Signal { name: &'static str, number: i32 },
}

impl CancelReason {
    /// The error the run ends with.
    pub fn to_error(self) -> Error {
        match self {
            CancelReason::Timeout => Error::runtime("lobster runtime timed out"),
            CancelReason::Signal { name, number } => Error::Signal { name, number },
        }
    }
}

/// Called once with the reason a run was cancelled.
type Hook = Box<dyn FnOnce(CancelReason) + Send>;

/// A cloneable handle shared by the run, its stages and its watchdogs.
#[derive(Clone, Default)]
pub struct Cancel(Arc<Inner>);

#[derive(Default)]
struct Inner {
    fired: AtomicBool,
    reason: Mutex<Option<CancelReason>>,
    fired_cv: Condvar,
    groups: Mutex<BTreeSet<i32>>,
    children: Mutex<Vec<Weak<Inner>>>,
    /// The run's deadline, once armed (for messages).
    deadline_ms: Mutex<Option<u64>>,
    /// Called once with the reason when the run is cancelled.
    hooks: Mutex<Vec<Hook>>,
    /// The deadline's event on the timer thread, forgotten when the run's
    /// last handle drops (a server's queue holds only live runs' deadlines).
    armed: Mutex<Option<super::timer::Scheduled>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        let armed = self.armed.get_mut().unwrap_or_else(|p| p.into_inner());
        if let Some(key) = armed.take() {
            super::timer::forget(key);
        }
    }
}

impl Cancel {
    /// `Err` once the run was cancelled; call between items and stages.
    pub fn check(&self) -> Result<(), Error> {
        if self.0.fired.load(Ordering::Relaxed) {
            return Err(self
                .reason()
                .map_or_else(|| Error::runtime("cancelled"), CancelReason::to_error));
        }
        Ok(())
    }

    /// Whether the run was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.0.fired.load(Ordering::Relaxed)
    }

    /// The first reason given, if cancelled.
    pub fn reason(&self) -> Option<CancelReason> {
        *self.0.reason.lock().unwrap()
    }

    /// Cancel the run (the first reason wins) and kill every registered
    /// process group: at once with SIGKILL for a timeout, SIGTERM then SIGKILL
    /// after 250 ms for a signal.
    pub fn trigger(&self, reason: CancelReason) {
        {
            let mut slot = self.0.reason.lock().unwrap();
            if slot.is_none() {
                *slot = Some(reason);
            }
            self.0.fired.store(true, Ordering::SeqCst);
            self.0.fired_cv.notify_all();
        }
        let first = self.reason().unwrap_or(reason);
        let hooks: Vec<_> = self.0.hooks.lock().unwrap().drain(..).collect();
        for hook in hooks {
            hook(first);
        }
        let children: Vec<_> = self.0.children.lock().unwrap().drain(..).collect();
        for child in children.iter().filter_map(Weak::upgrade) {
            Cancel(child).trigger(reason);
        }
        match reason {
            CancelReason::Timeout => self.kill_groups(libc::SIGKILL),
            CancelReason::Signal { .. } => {
                self.kill_groups(libc::SIGTERM);
                let me = self.clone();
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(250));
                    me.kill_groups(libc::SIGKILL);
                });
            }
        }
    }

    /// A handle that is cancelled with this one, and can also be cancelled
    /// on its own (a workflow step's `timeout_ms`, a losing parallel branch)
    /// without cancelling this one.
    pub fn child(&self) -> Cancel {
        let child = Cancel::default();
        {
            let mut children = self.0.children.lock().unwrap();
            children.retain(|w| w.strong_count() > 0);
            children.push(Arc::downgrade(&child.0));
        }
        if let Some(reason) = self.reason() {
            child.trigger(reason);
        }
        child
    }

    /// Call `hook` with the reason once the run is cancelled (at once when
    /// it is already). It runs on the cancelling thread: keep it quick.
    pub fn on_trigger(&self, hook: impl FnOnce(CancelReason) + Send + 'static) {
        let mut hooks = self.0.hooks.lock().unwrap();
        match self.reason() {
            Some(reason) => {
                drop(hooks);
                hook(reason);
            }
            None => hooks.push(Box::new(hook)),
        }
    }

    /// Block until the run is cancelled; returns the reason.
    pub fn wait(&self) -> CancelReason {
        let mut slot = self.0.reason.lock().unwrap();
        loop {
            if let Some(reason) = *slot {
                return reason;
            }
            slot = self.0.fired_cv.wait(slot).unwrap();
        }
    }

    /// Send `signal` to every registered process group.
    pub fn kill_groups(&self, signal: i32) {
        for &pgid in self.0.groups.lock().unwrap().iter() {
            // SAFETY: kill(2) with a negative pid signals a process group; no memory is touched.
            unsafe {
                libc::kill(-pgid, signal);
            }
        }
    }

    /// Track a child's process group until the guard drops. If the run is
    /// already cancelled the group is killed at once.
    /// The group is also listed with the process-wide reaper (`reaper.rs`),
    /// which kills it if this process dies (even by SIGKILL) first.
    pub fn register_group(&self, pgid: i32) -> GroupGuard {
        super::reaper::list(pgid);
        self.0.groups.lock().unwrap().insert(pgid);
        if self.is_cancelled() {
            // SAFETY: as in kill_groups.
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
        GroupGuard {
            cancel: self.clone(),
            pgid,
        }
    }

    /// The error this cancellation ends the run with; a deadline that fired
    /// while a wasm step was executing names the step, the export it was in
    /// and the limit (`running` as from [`crate::sandbox::activity`]).
    pub fn error_during(&self, running: Option<String>) -> Error {
        match (self.reason(), running) {
            (None, _) => Error::runtime("cancelled"),
            (Some(CancelReason::Timeout), Some(running)) => {
                let limit = self
                    .0
                    .deadline_ms
                    .lock()
                    .unwrap()
                    .map(|ms| format!(" ({ms}ms)"))
                    .unwrap_or_default();
                Error::runtime(format!(
                    "lobster runtime timed out: {running} when the run's deadline{limit} passed"
                ))
                .with_hint("raise --timeout-ms, or give the step less to do")
            }
            (Some(reason), _) => reason.to_error(),
        }
    }

    /// Fire [`CancelReason::Timeout`] after `timeout` unless the process ends
    /// first. Time spent while deadlines are paused ([`pause_deadlines`]:
    /// compiling a component) does not count.
    pub fn arm_deadline(&self, timeout: Duration) {
        self.arm(timeout, true);
    }

    /// Fire [`CancelReason::Timeout`] `timeout` from now by the wall clock
    /// (a server's runs: one run's compile does not stop another's clock).
    pub fn arm_wall_deadline(&self, timeout: Duration) {
        self.arm(timeout, false);
    }

    fn arm(&self, timeout: Duration, pauses: bool) {
        *self.0.deadline_ms.lock().unwrap() = Some(timeout.as_millis() as u64);
        let start = Instant::now();
        let paused_before = paused_total();
        let me = Arc::downgrade(&self.0);
        let key = super::timer::at(start + timeout, move || {
            deadline_due(me, start, timeout, pauses.then_some(paused_before))
        });
        self.0.set_armed(key);
    }
}

impl Inner {
    /// Keep `key` as the deadline's event, forgetting one armed before.
    fn set_armed(&self, key: super::timer::Scheduled) {
        let before = self
            .armed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .replace(key);
        if let Some(before) = before {
            super::timer::forget(before);
        }
    }
}

/// A deadline's time came: fire it, or (while compiles pause deadlines, or
/// when they did meanwhile) look again later. A run that is gone is left.
fn deadline_due(
    run: Weak<Inner>,
    start: Instant,
    timeout: Duration,
    paused_before: Option<Duration>,
) {
    let Some(inner) = run.upgrade() else { return };
    let cancel = Cancel(inner);
    if cancel.is_cancelled() {
        return;
    }
    let now = Instant::now();
    if let Some(before) = paused_before {
        let (total, active) = paused_state();
        let due = start + timeout + total.saturating_sub(before);
        if active || due > now {
            let next = if active {
                now + Duration::from_millis(10)
            } else {
                due
            };
            let weak = Arc::downgrade(&cancel.0);
            let key = super::timer::at(next, move || {
                deadline_due(weak, start, timeout, Some(before))
            });
            cancel.0.set_armed(key);
            return;
        }
    }
    cancel.trigger(CancelReason::Timeout);
}

/// Process-wide pause of every run deadline: how long deadlines were
/// paused so far, how many pauses are active, and since when.
#[derive(Default)]
struct Paused {
    total: Duration,
    active: usize,
    since: Option<Instant>,
}

fn paused() -> &'static Mutex<Paused> {
    static PAUSED: OnceLock<Mutex<Paused>> = OnceLock::new();
    PAUSED.get_or_init(Default::default)
}

fn paused_state() -> (Duration, bool) {
    let p = paused().lock().unwrap_or_else(|e| e.into_inner());
    let running = p.since.map(|s| s.elapsed()).unwrap_or_default();
    (p.total + running, p.active > 0)
}

fn paused_total() -> Duration {
    paused_state().0
}

/// Stop every run deadline's clock until the guard drops. Compiling a
/// component is not the run's work (a Python step compiles for ~16 s once,
/// then loads from the cache in milliseconds), so it must not eat the
/// run's `--timeout-ms`; compiles have their own bound instead.
pub fn pause_deadlines() -> DeadlinePause {
    let mut p = paused().lock().unwrap_or_else(|e| e.into_inner());
    if p.active == 0 {
        p.since = Some(Instant::now());
    }
    p.active += 1;
    DeadlinePause(())
}

/// Resumes the deadlines' clocks when dropped (see [`pause_deadlines`]).
pub struct DeadlinePause(());

impl Drop for DeadlinePause {
    fn drop(&mut self) {
        let mut p = paused().lock().unwrap_or_else(|e| e.into_inner());
        p.active = p.active.saturating_sub(1);
        if p.active == 0 {
            if let Some(since) = p.since.take() {
                p.total += since.elapsed();
            }
        }
    }
}

/// Removes a process group from the kill set when dropped.
pub struct GroupGuard {
    cancel: Cancel,
    pgid: i32,
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.cancel.0.groups.lock().unwrap().remove(&self.pgid);
        super::reaper::unlist(self.pgid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_that_ends_takes_its_deadline_off_the_timer() {
        let cancel = Cancel::default();
        cancel.arm_wall_deadline(Duration::from_secs(3600));
        let first = cancel.0.armed.lock().unwrap().expect("armed");
        // Armed again: the first event is gone at once.
        cancel.arm_deadline(Duration::from_secs(3600));
        assert!(
            !super::super::timer::forget(first),
            "the first deadline stayed"
        );
        let second = cancel.0.armed.lock().unwrap().expect("armed");
        let clone = cancel.clone();
        drop(cancel);
        // A handle is left: the deadline stands.
        assert!(clone.0.armed.lock().unwrap().is_some());
        drop(clone);
        assert!(
            !super::super::timer::forget(second),
            "the deadline outlived its run"
        );
    }

    #[test]
    fn children_follow_their_parent_but_not_the_other_way() {
        let parent = Cancel::default();
        let child = parent.child();
        child.trigger(CancelReason::Timeout);
        assert!(child.is_cancelled());
        assert!(!parent.is_cancelled());
        let other = parent.child();
        parent.trigger(CancelReason::Signal {
            name: "SIGTERM",
            number: 15,
        });
        assert!(other.is_cancelled());
        assert_eq!(
            other.reason(),
            Some(CancelReason::Signal {
                name: "SIGTERM",
                number: 15
            })
        );
        // A child made after the parent fired is born cancelled.
        assert!(parent.child().is_cancelled());
    }

    #[test]
    fn hooks_run_once_with_the_first_reason() {
        let cancel = Cancel::default();
        let (tx, rx) = std::sync::mpsc::channel();
        let t = tx.clone();
        cancel.on_trigger(move |r| t.send(r).unwrap());
        cancel.trigger(CancelReason::Timeout);
        cancel.trigger(CancelReason::Signal {
            name: "SIGINT",
            number: 2,
        });
        assert_eq!(rx.try_recv(), Ok(CancelReason::Timeout));
        assert!(rx.try_recv().is_err());
        // Registered after the fact: called at once.
        cancel.on_trigger(move |r| tx.send(r).unwrap());
        assert_eq!(rx.try_recv(), Ok(CancelReason::Timeout));
    }

    #[test]
    fn a_wall_deadline_fires_and_a_dropped_run_is_left() {
        let cancel = Cancel::default();
        cancel.arm_wall_deadline(Duration::from_millis(20));
        assert_eq!(cancel.wait(), CancelReason::Timeout);
        // Nothing holds a run whose handle is gone.
        Cancel::default().arm_wall_deadline(Duration::from_millis(1));
        std::thread::sleep(Duration::from_millis(30));
    }

    #[test]
    fn a_paused_deadline_does_not_fire_until_resumed() {
        let cancel = Cancel::default();
        let pause = pause_deadlines();
        cancel.arm_deadline(Duration::from_millis(20));
        std::thread::sleep(Duration::from_millis(150));
        assert!(!cancel.is_cancelled(), "fired while paused");
        drop(pause);
        assert_eq!(cancel.wait(), CancelReason::Timeout);
    }
}
