//! Conformance of the job queue: jobs taken in order once each, fifty
//! racing takers, an expired lease interrupts rather than requeues, an
//! enqueue wakes a waiting worker.

use super::{fixture, Kind};
use lobster::state::random_hex;
use serde_json::json;
use std::sync::{Arc, Barrier};
use std::time::Duration;

pub(super) fn queued_jobs_are_taken_in_order_once_each(kind: Kind) {
    use lobster::state::JobStatus;
    let Some(f) = fixture(kind) else { return };
    let s = &f.store;
    for (i, id) in ["Job-A", "job-b", "job-c"].iter().enumerate() {
        assert!(s.enqueue(id, &json!({"n": i})).unwrap());
    }
    // Ids are case-insensitive keys: no second job-a.
    assert!(!s.enqueue("job-a", &json!({"n": 9})).unwrap());
    assert_eq!(s.job_status("job-b").unwrap(), Some(JobStatus::Queued));
    assert_eq!(s.job_status("nope").unwrap(), None);
    assert_eq!(s.queue_depth().unwrap(), 3);
    // Another tenant sees none of them.
    let other = s.for_tenant(&format!("other-{}", random_hex(4)));
    assert!(other.take_job().unwrap().is_none());
    assert_eq!(other.queue_depth().unwrap(), 0);
    let a = s.take_job().unwrap().unwrap();
    assert_eq!((a.id.as_str(), &a.payload), ("Job-A", &json!({"n": 0})));
    assert_eq!(s.job_status("job-a").unwrap(), Some(JobStatus::Running));
    assert!(a.heartbeat().unwrap());
    let b = s.take_job().unwrap().unwrap();
    assert_eq!(b.id, "job-b");
    assert_eq!(s.queue_depth().unwrap(), 1);
    assert!(a.finish().unwrap());
    assert_eq!(s.job_status("job-a").unwrap(), None);
    // Finished, the id may be queued again.
    assert!(s.enqueue("job-a", &json!({"n": 3})).unwrap());
    assert_eq!(s.take_job().unwrap().unwrap().id, "job-c");
    assert_eq!(s.take_job().unwrap().unwrap().payload, json!({"n": 3}));
    assert!(s.take_job().unwrap().is_none());
    assert!(b.finish().unwrap());
}

pub(super) fn fifty_racing_takers_take_each_job_exactly_once(kind: Kind) {
    let Some(f) = fixture(kind) else { return };
    const JOBS: usize = 200;
    for i in 0..JOBS {
        assert!(f.store.enqueue(&format!("j{i}"), &json!(i)).unwrap());
    }
    let barrier = Arc::new(Barrier::new(50));
    let takers: Vec<_> = (0..50)
        .map(|_| {
            let (s, barrier) = (f.store.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                let mut got = Vec::new();
                while let Some(job) = s.take_job().unwrap() {
                    got.push(job.payload.as_u64().unwrap() as usize);
                    assert!(job.finish().unwrap());
                }
                got
            })
        })
        .collect();
    let mut all: Vec<usize> = takers.into_iter().flat_map(|h| h.join().unwrap()).collect();
    all.sort();
    assert_eq!(all, (0..JOBS).collect::<Vec<_>>());
}

pub(super) fn a_taken_job_whose_lease_expires_is_interrupted_not_requeued(kind: Kind) {
    use lobster::state::JobStatus;
    let Some(f) = fixture(kind) else { return };
    let s = f.store.clone().with_lease(Duration::from_millis(600));
    assert!(s.enqueue("slow", &json!(1)).unwrap());
    let job = s.take_job().unwrap().unwrap();
    if kind == Kind::Files {
        // One node: the taker is this live process. (A dead taker's pid
        // reads as interrupted, as with interrupted-run records.)
        assert_eq!(s.job_status("slow").unwrap(), Some(JobStatus::Running));
        assert!(job.finish().unwrap());
        return;
    }
    // The taker dies (no heartbeats); its lease runs out.
    std::thread::sleep(Duration::from_millis(900));
    assert_eq!(s.job_status("slow").unwrap(), Some(JobStatus::Interrupted));
    assert!(s.take_job().unwrap().is_none(), "never re-queued");
    // The stale taker's fenced writes are refused and leave the record.
    assert!(!job.heartbeat().unwrap());
    assert!(!job.finish().unwrap());
    assert_eq!(s.job_status("slow").unwrap(), Some(JobStatus::Interrupted));
    assert!(!s.enqueue("slow", &json!(2)).unwrap());
}

pub(super) fn an_enqueue_wakes_a_waiting_worker(kind: Kind) {
    let Some(f) = fixture(kind) else { return };
    assert!(!f.store.wait_for_jobs(Duration::from_millis(300)).unwrap());
    let s = f.store.clone();
    // A long timeout, so a loaded machine's slow enqueues cannot outlast
    // it; how soon the wake follows the enqueue is measured from the
    // enqueue itself.
    let waiter = std::thread::spawn(move || {
        let woken = s.wait_for_jobs(Duration::from_secs(120)).unwrap();
        (woken, std::time::Instant::now())
    });
    std::thread::sleep(Duration::from_millis(300));
    // Another tenant's enqueue does not wake this one's worker…
    let other = f.store.for_tenant(&format!("other-{}", random_hex(4)));
    other.enqueue("x", &json!(0)).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert!(!waiter.is_finished());
    // …its own does.
    let before = std::time::Instant::now();
    f.store.enqueue("y", &json!(1)).unwrap();
    let enqueued = std::time::Instant::now();
    let (woken, at) = waiter.join().unwrap();
    assert!(woken);
    assert!(at >= before, "woken before its own enqueue");
    let after = at.saturating_duration_since(enqueued);
    assert!(after < Duration::from_secs(5), "{after:?}");
    assert_eq!(f.store.take_job().unwrap().unwrap().id, "y");
}
