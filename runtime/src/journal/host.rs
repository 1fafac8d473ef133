//! How a pipeline's `exec` stage ended, carried from the stage to its
//! `step` event.
//!
//! An `exec` stage's items stream into the next stage, and the executor
//! writes the pipeline's built-in stages' events when the pipeline ends
//! (`executor::run`). The stage itself knows how its process ended — exit
//! code, the stdout its stream kept, the stdin it was fed — so it leaves a
//! [`HostEnd`] when its stream ends or is dropped, and the executor takes
//! them in stage order. They are kept per thread: a pipeline's stages are
//! pulled on the thread that runs it (a workflow's parallel branches each
//! on their own), and one thread runs one pipeline at a time, which
//! [`clear`] starts and ends. An `exec` drains its input before it spawns,
//! so the stages of one pipeline end in stage order.
//!
//! A replay goes the other way: the executor takes the `exec` stage's
//! recorded step from the run being replayed (by the stage's index and
//! the workflow step it runs within, [`Journal::within`]) and
//! leaves it with [`Journal::stand_in`] just before the stage runs; the
//! stage takes it ([`Journal::take_stand_in`]) and decodes the recorded
//! stdout instead of spawning a process.

use super::{Journal, Step};
use std::cell::RefCell;
use std::collections::VecDeque;

/// How one `exec` stage ended (see the module docs).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HostEnd {
    /// The exit code (`None`: a signal ended it, or it never ended because
    /// the next stage stopped reading and it was killed).
    pub exit_code: Option<i32>,
    /// blake3 of the bytes written to its stdin (`--stdin`).
    pub input_digest: Option<String>,
    /// Its stdout as the stream kept it: in full when `output_digest` is
    /// set, else the first 64 KiB (what an `exec failed` message quotes).
    pub output: Option<String>,
    /// blake3 of its stdout, when `output` is all of it.
    pub output_digest: Option<String>,
}

thread_local! {
    static ENDS: RefCell<VecDeque<HostEnd>> = const { RefCell::new(VecDeque::new()) };
    static STAND_IN: RefCell<Option<Step>> = const { RefCell::new(None) };
}

/// Forget the ends and the stand-in this thread holds (a pipeline begins
/// or has ended).
pub fn clear() {
    ENDS.with(|e| e.borrow_mut().clear());
    STAND_IN.with(|s| *s.borrow_mut() = None);
}

impl Journal {
    /// Leave how an `exec` stage ended for its `step` event (nothing when
    /// the journal is off).
    pub fn host_ended(&self, end: HostEnd) {
        if self.is_on() {
            ENDS.with(|e| e.borrow_mut().push_back(end));
        }
    }

    /// The earliest `exec` stage's end on this thread not yet written.
    pub fn take_host_end(&self) -> Option<HostEnd> {
        ENDS.with(|e| e.borrow_mut().pop_front())
    }

    /// During a replay, leave the recorded step of the `exec` stage about
    /// to run on this thread (the stage at `index` of the pipeline, within
    /// this handle's workflow step if any), if the run being replayed
    /// recorded one; anything left before is dropped.
    /// Not replaying: nothing is left.
    pub fn stand_in(&self, index: usize) {
        let step = self
            .replaying()
            .and_then(|r| r.take_host_output(self.within_step(), &index.to_string(), "exec"));
        STAND_IN.with(|s| *s.borrow_mut() = step);
    }

    /// The recorded step left for the `exec` stage now running on this
    /// thread (see [`Journal::stand_in`]), taken.
    pub fn take_stand_in(&self) -> Option<Step> {
        STAND_IN.with(|s| s.borrow_mut().take())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ends are taken in the order they were left, on the thread that left
    /// them, and only while the journal is on.
    #[test]
    fn ends_are_taken_in_order_per_thread() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::state::StateStore::new(dir.path());
        let started = super::super::RunStarted {
            run_id: "r1".into(),
            door: "cli".into(),
            ..Default::default()
        };
        let on = Journal::start(&store, started).unwrap();
        let end = |code| HostEnd {
            exit_code: Some(code),
            ..Default::default()
        };
        clear();
        Journal::off().host_ended(end(9));
        assert_eq!(on.take_host_end(), None);
        on.host_ended(end(1));
        on.host_ended(end(2));
        let other = on.clone();
        std::thread::spawn(move || {
            assert_eq!(other.take_host_end(), None);
            other.host_ended(end(3));
        })
        .join()
        .unwrap();
        assert_eq!(on.take_host_end(), Some(end(1)));
        assert_eq!(on.take_host_end(), Some(end(2)));
        assert_eq!(on.take_host_end(), None);
        on.host_ended(end(4));
        clear();
        assert_eq!(on.take_host_end(), None);
    }
}
