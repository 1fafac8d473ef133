//! The store conformance suite: every test runs against the files store and
//! against PostgreSQL (`LOBSTER_TEST_PG_URL`, e.g. from `bash tests/pg.sh
//! start`; each test in a tenant of its own). Without that URL the
//! PostgreSQL half fails under `CI=true` and skips loudly elsewhere.
//!
//! It drives the store through its public items only (and the resume
//! room's claims, tokens and approval ids, which sit on top of it).

use lobster::resume::claim::claim;
use lobster::resume::interrupted::error_for;
use lobster::resume::token::{self, TokenKind};
use lobster::state::{pg, random_hex, StateStore};
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Files,
    Pg,
}

struct Fixture {
    store: StateStore,
    _dir: tempfile::TempDir,
}

fn fixture(kind: Kind) -> Option<Fixture> {
    let dir = tempfile::tempdir().unwrap();
    let store = match kind {
        Kind::Files => StateStore::new(dir.path().join("state")),
        Kind::Pg => StateStore::postgres(&pg_url()?, dir.path().join("local"))
            .for_tenant(&format!("test-{}", random_hex(6))),
    };
    Some(Fixture { store, _dir: dir })
}

macro_rules! conformance {
    ($($name:ident),* $(,)?) => {
        mod files {
            $( #[test] fn $name() { super::$name(super::Kind::Files) } )*
        }
        mod postgres {
            $( #[test] fn $name() { super::$name(super::Kind::Pg) } )*
        }
    };
}

conformance!(
    kv_round_trip,
    atomic_replace,
    claim_exactly_once_among_50_racers_100_times,
    lease_expiry_turns_the_run_interrupted,
    a_pure_run_whose_claimer_died_is_claimed_again,
    heartbeats_keep_a_running_claim,
    epoch_fencing_rejects_a_stale_holder,
    tenants_are_isolated,
    token_key_is_stable_and_created_once,
    approval_ids_alias_once,
    works_inside_a_tokio_runtime,
    dangling_approval_aliases_are_swept,
    queued_jobs_are_taken_in_order_once_each,
    fifty_racing_takers_take_each_job_exactly_once,
    a_taken_job_whose_lease_expires_is_interrupted_not_requeued,
    an_enqueue_wakes_a_waiting_worker,
    create_new_is_won_by_exactly_one_of_50_racers,
    list_prefix_lists_that_prefix_only,
    age_counts_from_the_last_write,
);

fn create_new_is_won_by_exactly_one_of_50_racers(kind: Kind) {
    let Some(f) = fixture(kind) else { return };
    for trial in 0..20 {
        let key = format!("once_{trial}");
        let wins = Arc::new(AtomicUsize::new(0));
        let barrier = Arc::new(Barrier::new(50));
        let racers: Vec<_> = (0..50)
            .map(|i| {
                let (s, key, wins, barrier) =
                    (f.store.clone(), key.clone(), wins.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    if s.create_new(&key, &json!({ "by": i })).unwrap() {
                        wins.fetch_add(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        for r in racers {
            r.join().unwrap();
        }
        assert_eq!(wins.load(Ordering::SeqCst), 1, "trial {trial}");
        assert!(f.store.get(&key).unwrap().unwrap()["by"].is_number());
    }
    // An existing key (written by set) is not replaced.
    f.store.set("kept", &json!(1)).unwrap();
    assert!(!f.store.create_new("kept", &json!(2)).unwrap());
    assert_eq!(f.store.get("kept").unwrap(), Some(json!(1)));
    let err = f
        .store
        .create_new("pipeline_resume_x", &json!(1))
        .unwrap_err();
    assert!(err.to_string().contains("paused run"), "{err}");
}

fn list_prefix_lists_that_prefix_only(kind: Kind) {
    let Some(f) = fixture(kind) else { return };
    let s = &f.store;
    assert!(s.list_prefix("p_").unwrap().is_empty());
    s.set("p_b", &json!(2)).unwrap();
    s.set("p_a", &json!(1)).unwrap();
    s.create_new("p_c", &json!(3)).unwrap();
    s.set("pa", &json!("not mine")).unwrap();
    s.set("q_a", &json!("not mine")).unwrap();
    s.set("pipeline_resume_p_", &json!("a run")).unwrap();
    let got = s.list_prefix("p_").unwrap();
    assert_eq!(
        got,
        vec![
            ("p_a".to_string(), json!(1)),
            ("p_b".to_string(), json!(2)),
            ("p_c".to_string(), json!(3)),
        ]
    );
    s.remove("p_b").unwrap();
    assert_eq!(s.list_prefix("p_").unwrap().len(), 2);
    // `_` and `%` are not wildcards.
    s.set("pxa", &json!(0)).unwrap();
    assert_eq!(s.list_prefix("p_").unwrap().len(), 2);
    assert!(s.list_prefix("pipeline").unwrap().is_empty());
    for bad in ["", "_p", "P", "p%", "a/b"] {
        let e = s.list_prefix(bad).unwrap_err();
        assert!(e.to_string().contains("must be"), "{bad}: {e}");
    }
    // Another tenant's keys are not listed.
    let other = s.for_tenant(&format!("other-{}", random_hex(4)));
    assert!(other.list_prefix("p_").unwrap().is_empty());
}

fn age_counts_from_the_last_write(kind: Kind) {
    let Some(f) = fixture(kind) else { return };
    let s = &f.store;
    // An age is at most the time since just before the write, plus the
    // file system's coarse clock (a tick): bounds measured here, not
    // guessed, so a stalled (loaded) machine cannot break them.
    const TICK: Duration = Duration::from_millis(50);
    assert_eq!(s.age("beat").unwrap(), None);
    let before = std::time::Instant::now();
    s.set("beat", &json!(1)).unwrap();
    let age = s.age("beat").unwrap().unwrap();
    assert!(age <= before.elapsed() + TICK, "{age:?}");
    std::thread::sleep(Duration::from_millis(1100));
    let old = s.age("beat").unwrap().unwrap();
    assert!(old >= Duration::from_millis(1000), "{old:?}");
    let before = std::time::Instant::now();
    s.set("beat", &json!(2)).unwrap();
    let age = s.age("beat").unwrap().unwrap();
    assert!(age <= before.elapsed() + TICK, "{age:?} (before: {old:?})");
}

fn kv_round_trip(kind: Kind) {
    let Some(f) = fixture(kind) else { return };
    let s = &f.store;
    assert_eq!(s.get("k").unwrap(), None);
    s.set("k", &json!({"a": [1, 2]})).unwrap();
    // Keys are case-insensitive and normalised alike in both stores.
    assert_eq!(s.get("K").unwrap(), Some(json!({"a": [1, 2]})));
    assert_eq!(
        s.get_text("k").unwrap().unwrap(),
        "{\n  \"a\": [\n    1,\n    2\n  ]\n}\n"
    );
    s.remove("k").unwrap();
    s.remove("k").unwrap();
    assert_eq!(s.get("k").unwrap(), None);
    // A compact write over its limit writes nothing.
    let err = s
        .set_compact("big", &json!("x".repeat(100)), 50)
        .unwrap_err();
    assert!(err.to_string().contains("limit 50"), "{err}");
    assert_eq!(s.get("big").unwrap(), None);
    assert_eq!(s.set_compact("small", &json!([1]), 50).unwrap(), 3);
    assert_eq!(s.get("small").unwrap(), Some(json!([1])));
    // Resume states round-trip through the same calls.
    s.set("pipeline_resume_rt", &json!({"p": 1})).unwrap();
    assert_eq!(s.get("pipeline_resume_rt").unwrap(), Some(json!({"p": 1})));
    s.remove("pipeline_resume_rt").unwrap();
    assert_eq!(s.get("pipeline_resume_rt").unwrap(), None);
    assert!(s.set("///", &json!(1)).is_err());
}

fn atomic_replace(kind: Kind) {
    let Some(f) = fixture(kind) else { return };
    let pad = "x".repeat(20_000);
    f.store.set("k", &json!({"n": -1, "pad": pad})).unwrap();
    let writers_done = Arc::new(AtomicUsize::new(0));
    let mut handles = Vec::new();
    for w in 0..4 {
        let (s, pad, done) = (f.store.clone(), pad.clone(), writers_done.clone());
        handles.push(std::thread::spawn(move || {
            for i in 0..25 {
                s.set("k", &json!({"n": w * 100 + i, "pad": pad})).unwrap();
            }
            done.fetch_add(1, Ordering::SeqCst);
            0
        }));
    }
    for _ in 0..2 {
        let (s, done) = (f.store.clone(), writers_done.clone());
        handles.push(std::thread::spawn(move || {
            let mut reads = 0;
            while done.load(Ordering::SeqCst) < 4 {
                // Every read is a whole value, old or new.
                let v = s.get("k").unwrap().expect("never missing");
                assert_eq!(v["pad"].as_str().unwrap().len(), 20_000);
                reads += 1;
            }
            reads
        }));
    }
    let reads: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert!(reads > 0);
    let last = f.store.get("k").unwrap().unwrap();
    assert_eq!(last["n"].as_i64().unwrap() % 100, 24);
}

fn claim_exactly_once_among_50_racers_100_times(kind: Kind) {
    const RACERS: usize = 50;
    const TRIALS: usize = 100;
    let Some(f) = fixture(kind) else { return };
    let start = Arc::new(Barrier::new(RACERS + 1));
    let end = Arc::new(Barrier::new(RACERS + 1));
    let wins: Arc<Vec<AtomicUsize>> = Arc::new((0..TRIALS).map(|_| AtomicUsize::new(0)).collect());
    let racers: Vec<_> = (0..RACERS)
        .map(|_| {
            let (s, start, end, wins) = (f.store.clone(), start.clone(), end.clone(), wins.clone());
            std::thread::spawn(move || {
                for (t, won) in wins.iter().enumerate() {
                    start.wait();
                    if let Some(c) = claim(&s, &format!("pipeline_resume_t{t}")).unwrap() {
                        assert_eq!(c.state, json!({"trial": t}));
                        won.fetch_add(1, Ordering::SeqCst);
                    }
                    end.wait();
                }
            })
        })
        .collect();
    for t in 0..TRIALS {
        let key = format!("pipeline_resume_t{t}");
        f.store.set(&key, &json!({"trial": t})).unwrap();
        start.wait();
        end.wait();
        assert_eq!(wins[t].load(Ordering::SeqCst), 1, "trial {t}");
        // The winner's claim ended: nothing of the run is left.
        assert_eq!(f.store.get(&key).unwrap(), None);
        assert!(error_for(&f.store, &key).is_none(), "trial {t}");
    }
    for r in racers {
        r.join().unwrap();
    }
}

const WF_STATE: &str =
    r#"{"resumeAtIndex": 2, "stepId": "gate", "haltType": "approval", "steps": {"a": {}}}"#;

fn lease_expiry_turns_the_run_interrupted(kind: Kind) {
    let Some(f) = fixture(kind) else { return };
    let s = f.store.clone().with_lease(Duration::from_millis(600));
    let key = "workflow_resume_lease";
    s.set(key, &serde_json::from_str(WF_STATE).unwrap())
        .unwrap();
    let held = claim(&s, key).unwrap().unwrap();
    assert!(claim(&s, key).unwrap().is_none(), "claimed once only");
    if kind == Kind::Pg {
        let e = error_for(&s, key).unwrap().to_string();
        assert!(
            e.starts_with("this run is being resumed right now (after approval at step 2 (gate)"),
            "{e}"
        );
    }
    // The claimer dies: no release, no more heartbeats.
    held.abandon();
    if kind == Kind::Pg {
        std::thread::sleep(Duration::from_millis(900));
    }
    let e = error_for(&s, key).unwrap().to_string();
    assert!(
        e.starts_with("this run was interrupted after approval at step 2 (gate)"),
        "{e}"
    );
    // Never silently re-run: the run stays interrupted, and its state
    // cannot be written back as paused by PostgreSQL (the files store has
    // no such guard: a write there makes a new state file under the key).
    assert!(claim(&s, key).unwrap().is_none());
    if kind == Kind::Pg {
        let e = s.set(key, &json!({"again": true})).unwrap_err().to_string();
        assert!(e.contains("already claimed"), "{e}");
    }
    assert_eq!(s.get(key).unwrap(), None);
    assert!(error_for(&s, key).is_some());
}

fn a_pure_run_whose_claimer_died_is_claimed_again(kind: Kind) {
    let Some(f) = fixture(kind) else { return };
    let s = f.store.clone().with_lease(Duration::from_millis(600));
    let key = "workflow_resume_rerun";
    let mut state: serde_json::Value = serde_json::from_str(WF_STATE).unwrap();
    state[lobster::state::RERUN_SAFE] = json!(true);
    s.set(key, &state).unwrap();
    let held = claim(&s, key).unwrap().unwrap();
    let first_epoch = held.epoch();
    assert!(claim(&s, key).unwrap().is_none(), "claimed once while held");
    let e = error_for(&s, key).unwrap();
    assert!(e.to_string().contains("being resumed right now"), "{e}");
    let hint = e.hint().unwrap_or_default().to_string();
    assert!(
        hint.contains("what runs after the gate may run again"),
        "{hint}"
    );
    let record_key = lobster::resume::interrupted::record_key(key);
    if kind == Kind::Files {
        // A claimer that is another live process (pid 1) is not taken over.
        let mut record = s.get(&record_key).unwrap().unwrap();
        record["pid"] = json!(1);
        s.set(&record_key, &record).unwrap();
        assert!(claim(&s, key).unwrap().is_none(), "a live claimer keeps it");
    }
    // The claimer dies: no release, no more heartbeats.
    held.abandon();
    match kind {
        Kind::Pg => std::thread::sleep(Duration::from_millis(900)),
        Kind::Files => {
            let mut record = s.get(&record_key).unwrap().unwrap();
            record["pid"] = json!(u32::MAX); // no such process
            s.set(&record_key, &record).unwrap();
        }
    }
    // Every step after its gate is pure: the run is claimed again, whole,
    // by exactly one of the racers.
    let again: Vec<_> = std::thread::scope(|scope| {
        let racers: Vec<_> = (0..8)
            .map(|_| scope.spawn(|| claim(&s, key).unwrap()))
            .collect();
        racers
            .into_iter()
            .filter_map(|r| r.join().unwrap())
            .collect()
    });
    assert_eq!(again.len(), 1, "exactly one racer takes it over");
    let second = again.into_iter().next().unwrap();
    assert_eq!(second.state, state);
    if let (Some(old), Some(new)) = (first_epoch, second.epoch()) {
        assert!(new > old, "a new epoch fences the dead claimer off");
        let pg = s.pg().unwrap().unwrap().clone();
        let name = lobster::state::key_to_file_name(key).unwrap();
        assert!(!pg.heartbeat(&name, old).unwrap());
        assert!(!pg.release(&name, old).unwrap());
    }
    second.check_held().unwrap();
    // The second resume finishes: nothing is left to claim or report.
    drop(second);
    assert!(claim(&s, key).unwrap().is_none());
    assert!(error_for(&s, key).is_none());
}

fn heartbeats_keep_a_running_claim(kind: Kind) {
    let Some(f) = fixture(kind) else { return };
    let s = f.store.clone().with_lease(Duration::from_millis(600));
    let key = "workflow_resume_beat";
    s.set(key, &serde_json::from_str(WF_STATE).unwrap())
        .unwrap();
    let held = claim(&s, key).unwrap().unwrap();
    // Three leases long: only the heartbeat keeps the claim.
    std::thread::sleep(Duration::from_millis(1800));
    held.check_held().unwrap();
    if kind == Kind::Pg {
        let e = error_for(&s, key).unwrap().to_string();
        assert!(e.contains("being resumed right now"), "{e}");
    }
    drop(held);
    assert!(error_for(&s, key).is_none());
    assert!(claim(&s, key).unwrap().is_none());
}

fn epoch_fencing_rejects_a_stale_holder(kind: Kind) {
    let Some(f) = fixture(kind) else { return };
    let s = f.store.clone().with_lease(Duration::from_millis(600));
    let key = "workflow_resume_fence";
    s.set(key, &serde_json::from_str(WF_STATE).unwrap())
        .unwrap();
    let mut held = claim(&s, key).unwrap().unwrap();
    let Some(epoch) = held.epoch() else {
        // Files: a claim is the renamed file itself; it cannot expire.
        assert_eq!(kind, Kind::Files);
        held.check_held().unwrap();
        return;
    };
    let pg = s.pg().unwrap().unwrap().clone();
    let name = lobster::state::key_to_file_name(key).unwrap();
    // Another epoch cannot write to the claimed row.
    assert!(!pg.heartbeat(&name, epoch + 1).unwrap());
    assert!(!pg.release(&name, epoch - 1).unwrap());
    held.check_held().unwrap();
    // The holder hangs past its lease; someone looks and finds it expired.
    held.stop_heartbeat();
    std::thread::sleep(Duration::from_millis(900));
    let e = error_for(&s, key).unwrap().to_string();
    assert!(e.starts_with("this run was interrupted"), "{e}");
    // The stale holder wakes up: its fenced writes are refused.
    let stale = held.check_held().unwrap_err().to_string();
    assert!(stale.contains("expired while it ran"), "{stale}");
    assert!(!pg.heartbeat(&name, epoch).unwrap());
    drop(held);
    // Its release did not erase the record of the interrupted run.
    let e = error_for(&s, key).unwrap().to_string();
    assert!(e.starts_with("this run was interrupted"), "{e}");
}

fn tenants_are_isolated(kind: Kind) {
    let Some(f) = fixture(kind) else { return };
    let a = f.store.for_tenant("alpha");
    let b = f.store.for_tenant("beta");
    assert_eq!(a.tenant(), "alpha");
    a.set("k", &json!(1)).unwrap();
    assert_eq!(b.get("k").unwrap(), None);
    assert_eq!(a.get("k").unwrap(), Some(json!(1)));
    a.set("pipeline_resume_iso", &json!({"t": "a"})).unwrap();
    assert!(claim(&b, "pipeline_resume_iso").unwrap().is_none());
    assert!(error_for(&b, "pipeline_resume_iso").is_none());
    // Each tenant has its own token key: a's tokens are forgeries to b.
    let t = token::issue(&a, TokenKind::Pipeline, "pipeline_resume_iso").unwrap();
    token::issue(&b, TokenKind::Pipeline, "pipeline_resume_other").unwrap();
    assert!(token::decode(&b, &t).is_err());
    assert_eq!(
        token::decode(&a, &t).unwrap().state_key,
        "pipeline_resume_iso"
    );
    let id = lobster::resume::approval_id::publish(&a, "pipeline_resume_iso")
        .unwrap()
        .unwrap();
    assert!(lobster::resume::approval_id::lookup(&b, &id).is_err());
    assert!(claim(&a, "pipeline_resume_iso").unwrap().is_some());
    // Names that are not plain ids cannot collide with one.
    assert_ne!(f.store.for_tenant("Alpha").tenant(), "alpha");
    assert_ne!(
        f.store.for_tenant("../alpha").tenant(),
        f.store.for_tenant("alpha").tenant()
    );
    if kind == Kind::Files {
        assert!(a.dir().ends_with("tenants/alpha"));
        assert_eq!(f.store.for_tenant("default").dir(), f.store.dir());
        assert_eq!(a.for_tenant("beta").dir(), b.dir());
    }
}

fn token_key_is_stable_and_created_once(kind: Kind) {
    let Some(f) = fixture(kind) else { return };
    let barrier = Arc::new(Barrier::new(16));
    let tokens: Vec<String> = (0..16)
        .map(|_| {
            let (s, barrier) = (f.store.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                token::issue(&s, TokenKind::Workflow, "workflow_resume_same").unwrap()
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|h| h.join().unwrap())
        .collect();
    // One key won the race: every token is the same and verifies, also
    // through a handle opened afresh.
    assert!(tokens.iter().all(|t| t == &tokens[0]));
    let fresh = match kind {
        Kind::Files => StateStore::new(f.store.dir()),
        Kind::Pg => {
            StateStore::postgres(&pg_url().unwrap(), f.store.dir()).for_tenant(&f.store.tenant())
        }
    };
    assert_eq!(
        token::decode(&fresh, &tokens[0]).unwrap().state_key,
        "workflow_resume_same"
    );
}

fn approval_ids_alias_once(kind: Kind) {
    let Some(f) = fixture(kind) else { return };
    use lobster::resume::approval_id;
    let s = &f.store;
    let ids: std::collections::HashSet<String> = (0..50)
        .map(|i| {
            let id = approval_id::publish(s, &format!("pipeline_resume_{i}"))
                .unwrap()
                .unwrap();
            assert_eq!(
                approval_id::lookup(s, &format!(" {id} ")).unwrap().1,
                format!("pipeline_resume_{i}")
            );
            id
        })
        .collect();
    assert_eq!(ids.len(), 50);
    let id = ids.iter().next().unwrap();
    approval_id::remove(s, id);
    let e = approval_id::lookup(s, id).unwrap_err().to_string();
    assert!(e.contains("not found or expired"), "{e}");
}

fn works_inside_a_tokio_runtime(kind: Kind) {
    let Some(f) = fixture(kind) else { return };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let s = f.store.clone();
    // On a spawn_blocking thread, as `lobster serve` calls the store, and on
    // the runtime's own thread: both are inside the runtime's context.
    let got = rt.block_on(async move {
        let inner = s.clone();
        let from_blocking = tokio::task::spawn_blocking(move || {
            inner.set("pipeline_resume_rt", &json!({"in": "blocking"}))?;
            let c = claim(&inner, "pipeline_resume_rt")?.expect("claimed");
            let state = c.state.clone();
            drop(c);
            inner.set("k", &state)?;
            inner.get("k")
        })
        .await
        .unwrap()
        .unwrap();
        s.set("k2", &json!(2)).unwrap();
        (from_blocking, s.get("k2").unwrap())
    });
    assert_eq!(got, (Some(json!({"in": "blocking"})), Some(json!(2))));
}

fn dangling_approval_aliases_are_swept(kind: Kind) {
    use lobster::resume::approval_id;
    let Some(f) = fixture(kind) else { return };
    let s = &f.store;
    s.set("pipeline_resume_live", &json!({"p": 1})).unwrap();
    let live = approval_id::publish(s, "pipeline_resume_live")
        .unwrap()
        .unwrap();
    // A pause that published its alias and then failed to save its state.
    let dangling = approval_id::publish(s, "pipeline_resume_gone")
        .unwrap()
        .unwrap();
    // Young: maybe a pause in progress.
    s.sweep_orphans(lobster::state::ORPHAN_AGE);
    assert!(approval_id::lookup(s, &dangling).is_ok());
    assert_eq!(s.sweep_orphans(Duration::ZERO), 1);
    assert!(approval_id::lookup(s, &dangling).is_err());
    assert_eq!(
        approval_id::lookup(s, &live).unwrap().1,
        "pipeline_resume_live"
    );
}

fn queued_jobs_are_taken_in_order_once_each(kind: Kind) {
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

fn fifty_racing_takers_take_each_job_exactly_once(kind: Kind) {
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

fn a_taken_job_whose_lease_expires_is_interrupted_not_requeued(kind: Kind) {
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

fn an_enqueue_wakes_a_waiting_worker(kind: Kind) {
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

/// Not parameterised: these need no running database.
#[test]
fn an_unreachable_database_is_a_clear_error_naming_it_without_its_password() {
    let dir = tempfile::tempdir().unwrap();
    let s = StateStore::postgres("postgres://app:s3cret@127.0.0.1:1/lobster", dir.path());
    for e in [
        s.set("k", &json!(1)).unwrap_err(),
        s.get("k").unwrap_err(),
        claim(&s, "pipeline_resume_x").unwrap_err(),
        token::issue(&s, TokenKind::Pipeline, "pipeline_resume_x").unwrap_err(),
    ] {
        let text = e.to_string();
        assert!(
            text.starts_with(
                "cannot connect to the PostgreSQL store at postgres://app:***@127.0.0.1:1/lobster"
            ),
            "{text}"
        );
        assert!(text.contains("this call wrote nothing"), "{text}");
        assert!(!text.contains("s3cret"), "{text}");
    }
    // Nothing fell back to the local directory.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    let bad = StateStore::open("mysql://root:pw@h/db", dir.path());
    let e = bad.set("k", &json!(1)).unwrap_err().to_string();
    assert!(
        e.starts_with("unknown store \"mysql://root:***@h/db\""),
        "{e}"
    );
    let e = StateStore::postgres("postgres://h:notaport/db", dir.path())
        .get("k")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("invalid PostgreSQL store URL"), "{e}");
}

#[test]
fn a_lost_connection_fails_one_call_then_reconnects() {
    let Some(url) = pg_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let tag = format!("lobster-reconnect-{}", random_hex(4));
    let s = StateStore::postgres(&own_pool(&url, &tag), dir.path())
        .for_tenant(&format!("test-{}", random_hex(6)));
    s.set("k", &json!(1)).unwrap();
    // Every connection this pool opened is cut (the pool may hold several).
    let other = pg::open(&url);
    let killed: i64 = other
        .run(move |c| {
            c.query_one(
                "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                 WHERE application_name = $1) t",
                &[&tag],
            )
            .map(|r| r.get(0))
            .map_err(|e| lobster::error::Error::runtime(e.to_string()))
        })
        .unwrap();
    assert!(killed >= 1);
    std::thread::sleep(Duration::from_millis(200));
    // At most one call per lost connection fails (clearly): its worker
    // reconnects, and everything else succeeds.
    let mut failed = 0;
    for _ in 0..(3 * killed + 3) {
        match s.get("k") {
            Ok(v) => assert_eq!(v, Some(json!(1))),
            Err(e) => {
                assert!(e.to_string().contains("PostgreSQL store at"), "{e}");
                failed += 1;
            }
        }
    }
    assert!(
        failed <= killed,
        "{failed} calls failed for {killed} lost connections"
    );
    assert_eq!(s.get("k").unwrap(), Some(json!(1)));
}

/// A pool of its own (a URL no other test uses) for tests that count or
/// break connections.
fn own_pool(url: &str, tag: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}application_name={tag}")
}

#[test]
fn the_pool_never_opens_more_than_its_cap_under_load() {
    let Some(url) = pg_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let s = StateStore::postgres(&own_pool(&url, "lobster-cap"), dir.path())
        .for_tenant(&format!("test-{}", random_hex(6)));
    let barrier = Arc::new(Barrier::new(50));
    let handles: Vec<_> = (0..50)
        .map(|i| {
            let (s, barrier) = (s.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                for j in 0..10 {
                    s.set(&format!("k{i}_{j}"), &json!(j)).unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let db = s.pg().unwrap().unwrap().db.clone();
    let n = db.connections();
    assert!((1..=pg::MAX_CONNECTIONS).contains(&n), "{n}");
    assert_eq!(s.get("k49_9").unwrap(), Some(json!(9)));
}

#[test]
fn statements_run_under_a_timeout_and_say_so_when_they_hit_it() {
    let Some(url) = pg_url() else { return };
    let db = pg::open(&url);
    let shown: String = db
        .run(|c| {
            c.query_one("SHOW statement_timeout", &[])
                .map(|r| r.get(0))
                .map_err(|e| lobster::error::Error::runtime(e.to_string()))
        })
        .unwrap();
    assert_eq!(shown, format!("{}s", pg::STATEMENT_TIMEOUT.as_secs()));
    // The same cancellation, with a timeout short enough for a test.
    let inner = db.clone();
    let e = db
        .run(move |c| {
            let mut tx = c
                .client()
                .transaction()
                .map_err(|e| inner.error("cannot read from", e))?;
            tx.batch_execute("SET LOCAL statement_timeout = 50")
                .map_err(|e| inner.error("cannot read from", e))?;
            tx.batch_execute("SELECT pg_sleep(2)")
                .map_err(|e| inner.error("cannot read from", e))
        })
        .unwrap_err()
        .to_string();
    assert!(e.contains("a statement ran past statement_timeout"), "{e}");
    // The connection is still good afterwards.
    StateStore::postgres(&url, tempfile::tempdir().unwrap().path())
        .ping()
        .unwrap();
}

#[test]
fn a_fresh_database_is_migrated_once_on_first_use_by_racing_processes() {
    let Some(url) = pg_url() else { return };
    let admin = pg::open(&url);
    let db_name = format!("lobster_mig_{}", random_hex(6));
    let create = format!("CREATE DATABASE {db_name}");
    admin
        .run(move |c| {
            c.client()
                .batch_execute(&create)
                .map_err(|e| lobster::error::Error::runtime(e.to_string()))
        })
        .unwrap();
    let sep = if url.contains('?') { '&' } else { '?' };
    // Eight pools (as eight processes would have) race to first use.
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let u = format!("{url}{sep}dbname={db_name}&application_name=mig{i}");
            std::thread::spawn(move || {
                let dir = tempfile::tempdir().unwrap();
                let s = StateStore::postgres(&u, dir.path());
                s.set(&format!("k{i}"), &json!(i)).unwrap();
                pg::open(&u)
            })
        })
        .collect();
    let pools: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let versions: Vec<(i32, String)> = pools[0]
        .run(|c| {
            c.query("SELECT version, name FROM lobster_schema_version", &[])
                .map(|rows| rows.iter().map(|r| (r.get(0), r.get(1))).collect())
                .map_err(|e| lobster::error::Error::runtime(e.to_string()))
        })
        .unwrap();
    let all: Vec<(i32, String)> = pg::MIGRATIONS
        .iter()
        .map(|(v, name, _)| (*v, name.to_string()))
        .collect();
    assert_eq!(versions, all);
    let drop_db = format!("DROP DATABASE {db_name} WITH (FORCE)");
    admin
        .run(move |c| {
            c.client()
                .batch_execute(&drop_db)
                .map_err(|e| lobster::error::Error::runtime(e.to_string()))
        })
        .unwrap();
}

#[path = "../../tests/own_pg.rs"]
mod own_pg;
use own_pg::{pg_sh, pg_url, OwnCluster};

#[test]
fn a_database_restart_under_load_fails_calls_cleanly_then_recovers_losing_nothing() {
    // A cluster of its own, so stopping it disturbs no other test.
    if pg_url().is_none() {
        return;
    }
    let cluster = OwnCluster::start();
    let (dir, url) = (cluster.dir.clone(), cluster.url.clone());
    let local = tempfile::tempdir().unwrap();
    let s = StateStore::postgres(&url, local.path());
    s.ping().unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let restarted = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let (s, stop, restarted) = (s.clone(), stop.clone(), restarted.clone());
            std::thread::spawn(move || {
                let (mut acked, mut failed, mut after) = (Vec::new(), 0, 0);
                let mut i = 0;
                while !stop.load(Ordering::SeqCst) {
                    let key = format!("w{w}_{i}");
                    match s.set(&key, &json!(i)) {
                        Ok(()) => {
                            acked.push(key);
                            if restarted.load(Ordering::SeqCst) {
                                after += 1;
                            }
                        }
                        Err(e) => {
                            let text = e.to_string();
                            assert!(text.contains("the PostgreSQL store at"), "{text}");
                            assert!(text.contains("this call wrote nothing"), "{text}");
                            failed += 1;
                            std::thread::sleep(Duration::from_millis(20));
                        }
                    }
                    i += 1;
                }
                (acked, failed, after)
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(400));
    pg_sh(&dir, "kill");
    std::thread::sleep(Duration::from_millis(600));
    pg_sh(&dir, "start");
    restarted.store(true, Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(800));
    stop.store(true, Ordering::SeqCst);
    let results: Vec<_> = writers.into_iter().map(|h| h.join().unwrap()).collect();
    let failed: usize = results.iter().map(|r| r.1).sum();
    assert!(failed > 0, "the database was down for a while");
    for (acked, _, after) in &results {
        // Recovered: writes went through after the restart too…
        assert!(*after > 0, "no write after the restart");
        // …and every acknowledged write is there.
        for key in acked {
            assert!(s.get(key).unwrap().is_some(), "{key} lost");
        }
    }
}

#[test]
fn a_database_restart_while_a_resume_ends_does_not_interrupt_the_run() {
    // A cluster of its own, stopped while a claim is checked and released.
    if pg_url().is_none() {
        return;
    }
    let cluster = OwnCluster::start();
    let (dir, url) = (cluster.dir.clone(), cluster.url.clone());
    let local = tempfile::tempdir().unwrap();
    let s = StateStore::postgres(&url, local.path())
        .for_tenant("restart")
        .with_lease(Duration::from_secs(5));
    // Down for a second while the lease (5 s) holds: restarted meanwhile.
    let outage = |dir: &std::path::Path| {
        pg_sh(dir, "kill");
        let dir = dir.to_path_buf();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(1000));
            pg_sh(&dir, "start");
        })
    };
    let key = "workflow_resume_restart";
    s.set(key, &serde_json::from_str(WF_STATE).unwrap())
        .unwrap();
    let held = claim(&s, key).unwrap().unwrap();
    // The fenced check before the result is saved…
    let back = outage(&dir);
    held.check_held().unwrap();
    back.join().unwrap();
    // …and the release when the resume ends: both wait out the outage.
    let back = outage(&dir);
    drop(held);
    back.join().unwrap();
    assert!(
        error_for(&s, key).is_none(),
        "the finished run reads interrupted"
    );
    assert!(claim(&s, key).unwrap().is_none());
    // A queued run's job, finished while the database restarts: gone, not
    // left to be read as interrupted.
    s.enqueue("restart-job", &json!({"n": 1})).unwrap();
    let job = s.take_job().unwrap().unwrap();
    let back = outage(&dir);
    assert!(job.finish_retrying(std::time::Instant::now()).unwrap());
    back.join().unwrap();
    assert_eq!(s.job_status("restart-job").unwrap(), None);

    // Down for longer than the lease: the check gives up once the lease is
    // over (the run is then interrupted, its result not saved).
    let s = s.with_lease(Duration::from_millis(800));
    let key = "workflow_resume_restart_long";
    s.set(key, &serde_json::from_str(WF_STATE).unwrap())
        .unwrap();
    let held = claim(&s, key).unwrap().unwrap();
    pg_sh(&dir, "kill");
    let t = std::time::Instant::now();
    let e = held.check_held().unwrap_err().to_string();
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    assert!(e.contains("PostgreSQL"), "{e}");
    held.abandon();
    pg_sh(&dir, "start");
}
