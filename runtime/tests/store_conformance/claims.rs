//! Conformance of what resume sits on: claims raced exactly once, leases
//! that expire into `interrupted`, pure runs claimed again, heartbeats,
//! epoch fencing, token keys and approval ids.

use super::own_pg::pg_url;
use super::{fixture, Kind, WF_STATE};
use lobster::resume::claim::claim;
use lobster::resume::interrupted::error_for;
use lobster::resume::token::{self, TokenKind};
use lobster::state::StateStore;
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

pub(super) fn claim_exactly_once_among_50_racers_100_times(kind: Kind) {
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

pub(super) fn lease_expiry_turns_the_run_interrupted(kind: Kind) {
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

pub(super) fn a_pure_run_whose_claimer_died_is_claimed_again(kind: Kind) {
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

pub(super) fn heartbeats_keep_a_running_claim(kind: Kind) {
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

pub(super) fn epoch_fencing_rejects_a_stale_holder(kind: Kind) {
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

pub(super) fn token_key_is_stable_and_created_once(kind: Kind) {
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

pub(super) fn approval_ids_alias_once(kind: Kind) {
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

pub(super) fn dangling_approval_aliases_are_swept(kind: Kind) {
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
