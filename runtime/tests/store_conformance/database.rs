//! The PostgreSQL store outside the parameterised suite: an unreachable
//! database, a lost connection, the pool's cap, statement timeouts,
//! migration on first use by racers, and database restarts under load and
//! while a resume ends.

use super::own_pg::{pg_sh, pg_url, OwnCluster};
use super::WF_STATE;
use lobster::resume::claim::claim;
use lobster::resume::interrupted::error_for;
use lobster::resume::token::{self, TokenKind};
use lobster::state::{pg, random_hex, StateStore};
use serde_json::json;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Barrier};
use std::time::Duration;

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
