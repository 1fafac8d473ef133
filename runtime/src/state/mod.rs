//! Durable state under `LOBSTER_STATE_DIR` (default `~/.lobster/state`):
//! key/value JSON files for `state.get`/`state.set`/`diff.last`, resume
//! states for paused runs, the tokens that point at them, and the short
//! `approvalId` aliases.
//!
//! Every write is atomic (temp file, fsync, rename, fsync of the directory)
//! and every file is 0600: a killed process leaves either the old file or the
//! new one, never half of one; the temp or claim file it may leave behind is
//! swept by a later pause or resume ([`sweep_now_and_then`], which keeps
//! the time of its last sweep in `.swept`).

mod atomic;
#[cfg(test)]
pub(crate) mod fixtures;
pub mod journal;
mod journal_files;
mod keys;
pub mod pg;
mod queue;
mod run_record;
pub mod runlog;
mod store;
pub(crate) mod sweep;

pub use atomic::{random_hex, sync_dir, write_atomic};
pub use keys::{
    checked_key, is_tenant_name, key_to_file_name, tenant_id, user_state_key, UserState, Writer,
};
pub use queue::{Job, JobStatus};
pub use run_record::{error_message, AskedApproval, NodeBeat, PendingEntry, RunRecord, RunStatus};
pub use store::{is_rerun_safe, StateStore, DEFAULT_LEASE, DEFAULT_TENANT, RERUN_SAFE};
pub use sweep::{sweep_now_and_then, sweep_orphans, ORPHAN_AGE};
