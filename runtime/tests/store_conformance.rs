//! The store conformance suite: every test runs against the files store and
//! against PostgreSQL (`LOBSTER_TEST_PG_URL`, e.g. from `bash tests/pg.sh
//! start`; each test in a tenant of its own). Without that URL the
//! PostgreSQL half fails under `CI=true` and skips loudly elsewhere.
//!
//! It drives the store through its public items only (and the resume
//! room's claims, tokens and approval ids, which sit on top of it).
//!
//! The suite's tests are in `store_conformance/`, one file per concept, and
//! listed below; the tests outside the suite are in `database.rs`.

use lobster::state::{random_hex, StateStore};

#[path = "../../tests/own_pg.rs"]
mod own_pg;
use own_pg::pg_url;

#[path = "store_conformance/claims.rs"]
mod claims;
#[path = "store_conformance/database.rs"]
mod database;
#[path = "store_conformance/kv.rs"]
mod kv;
#[path = "store_conformance/queue.rs"]
mod queue;
use claims::{
    a_pure_run_whose_claimer_died_is_claimed_again, approval_ids_alias_once,
    claim_exactly_once_among_50_racers_100_times, dangling_approval_aliases_are_swept,
    epoch_fencing_rejects_a_stale_holder, heartbeats_keep_a_running_claim,
    lease_expiry_turns_the_run_interrupted, token_key_is_stable_and_created_once,
};
use kv::{
    age_counts_from_the_last_write, atomic_replace, create_new_is_won_by_exactly_one_of_50_racers,
    kv_round_trip, list_prefix_lists_that_prefix_only, tenants_are_isolated,
    works_inside_a_tokio_runtime,
};
use queue::{
    a_taken_job_whose_lease_expires_is_interrupted_not_requeued, an_enqueue_wakes_a_waiting_worker,
    fifty_racing_takers_take_each_job_exactly_once, queued_jobs_are_taken_in_order_once_each,
};

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

const WF_STATE: &str =
    r#"{"resumeAtIndex": 2, "stepId": "gate", "haltType": "approval", "steps": {"a": {}}}"#;
