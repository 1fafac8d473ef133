//! The run registry and the runs API: every run has a record, so `GET
//! /v1/runs/{runId}` answers after a restart. A run whose id was handed out
//! before it settled (a 202, a resume, any run on PostgreSQL) has a key in
//! its tenant's store (`serve_run_<runId>`, a [`crate::state::RunRecord`]), written when it starts and
//! when it settles (a record left `running` by a process that ended reads
//! `interrupted`). A run answered within its `wait` on the files store was
//! never seen by anyone before it settled: its one record is a line in the
//! tenant's run log ([`crate::state::runlog`]), group-committed instead of
//! a file and two fsyncs of its own. Run ids begin with the second they
//! were made, which is how the log finds old records. Each run
//! paused at a gate has a key of its own (`serve_pending_<runId>`), listed
//! by prefix (the approvals list): nothing is read-modified-written by
//! several nodes. A gate is decided through [`crate::app::gate::take`], as
//! at every door: the decision is checked first (an invalid answer leaves
//! the gate open), then the gate is taken once by a mark keyed by the
//! paused run in the tenant's store: of racers on any node and any door,
//! one wins; the others get 409.
//!
//! With a PostgreSQL store several nodes share the records: a run's record
//! names its `node`, stored `running` as soon as it starts; each node
//! refreshes `serve_node_<node>` in the root store every third of the
//! lease, so a `running` record whose node stopped beating for a lease
//! reads `interrupted` on every node.
//!
//! The work itself is [`crate::app::start`] (on the blocking pool), with
//! the tenant's settings (policy, catalog, steps,
//! store): the same authority, limits, claims and digests as the CLI.
//!
//! The rooms: [`handlers`] (the HTTP handlers and their bodies),
//! [`registry`] (record and pending keys, reading and saving records,
//! heartbeats), [`launch`] (starting a run, run slots),
//! [`settle`] (a settled run's record and waiter), [`gate`] (deciding a
//! paused run's gate) and [`recovery`] (a `running` record whose process
//! ended).

pub mod gate;
pub mod handlers;
pub mod launch;
pub mod recovery;
pub mod registry;
pub mod settle;

pub use gate::{
    decide, decide_call, decide_settled, find_paused, gate_token, may_approve, may_decide, refusal,
};
pub use handlers::{create, get, resume_by_token, resume_run, DEFAULT_WAIT_MS};
pub use launch::{slot, start, start_attached, Attach, Launch};
pub use recovery::current_record;
pub use registry::{
    beat, cancel_all, keep_beating, load_record, pending, read_record, valid_run_id,
};
pub use settle::{Settled, SettledRx};
