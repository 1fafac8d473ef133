//! Conformance of keys and values: round trips, atomic replace, create-new
//! raced by 50, prefix listing, ages, tenants kept apart, and the store
//! used from inside a tokio runtime.

use super::{fixture, Kind};
use lobster::resume::claim::claim;
use lobster::resume::interrupted::error_for;
use lobster::resume::token::{self, TokenKind};
use lobster::state::random_hex;
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

pub(super) fn create_new_is_won_by_exactly_one_of_50_racers(kind: Kind) {
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

pub(super) fn list_prefix_lists_that_prefix_only(kind: Kind) {
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

pub(super) fn age_counts_from_the_last_write(kind: Kind) {
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

pub(super) fn kv_round_trip(kind: Kind) {
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

pub(super) fn atomic_replace(kind: Kind) {
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

pub(super) fn tenants_are_isolated(kind: Kind) {
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

pub(super) fn works_inside_a_tokio_runtime(kind: Kind) {
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
