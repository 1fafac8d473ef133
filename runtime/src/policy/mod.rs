//! The trust layer: what an operator allows a run to do, and how Lobster
//! proves that what runs is what was reviewed.
//!
//! - [`file`]: the operator policy (`--policy FILE` / `LOBSTER_POLICY`, TOML
//!   or YAML): trusted or untrusted, allowed directory roots and env names,
//!   maximum limits.
//! - [`authority`]: the one authority of a run: the policy and the run's
//!   working directory, judging each capability request when it is used.
//! - [`enforce`]: run-wide grants and limits against the policy (the
//!   pipeline walk is the planner's: `executor::policy_check`).
//! - [`lock`]: `lobster.lock` (step name → blake3 digest) and pin checks.
//! - [`bundle`]: step bundles (component + manifest) and their verification.
//! - [`pins`]: the components a paused plan runs (name, file, digest).
//! - [`plan_digest`]: the digest an approval is bound to.
//! - [`recovery`]: which paused runs may run again after their resumer died.
//! - [`broker`]: brokered tool and model calls: allowlists, grants, per-run budgets.
//! - [`credential`]: origins, secrets, and the rule that binds one to the other.

#![deny(missing_docs)]

pub mod authority;
pub mod broker;
pub mod bundle;
pub mod credential;
pub mod enforce;
pub mod file;
pub mod finding;
pub mod lock;
pub mod pins;
pub mod plan_digest;
pub mod recovery;

pub use authority::{Authority, Refusal, Request};
pub use enforce::clamp_defaults;
pub use file::{Maxima, ModelPolicy, Policy, ProviderPolicy, Trust};
pub use finding::Finding;
pub use lock::LockFile;
