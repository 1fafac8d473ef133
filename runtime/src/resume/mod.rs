//! Pausing at gates and resuming from tokens.
//!
//! A halted run is written to the state store as a *resume state*; the
//! envelope carries a *token* (an opaque pointer to that state plus a keyed
//! blake3 tag, see [`token`]) and, for approvals, a short `approvalId` alias
//! (see [`approval_id`]). `lobster resume` claims the state exactly once
//! (see [`claim`]) before anything with side effects can run, then continues
//! the pipeline where it stopped.

pub mod approval_id;
pub mod claim;
pub mod decided;
pub mod interrupted;
pub mod pause;
pub mod plan_digest;
pub mod recovered;
pub mod request;
pub mod resume_run;
pub mod saved;
pub mod token;

pub use pause::{finish_run, Paused};
pub use request::{Decider, Decision, ResumeRequest, ResumeTarget};
pub use resume_run::resume_pipeline;
