//! The trust layer: what an operator allows a run to do, and how Lobster
//! proves that what runs is what was reviewed.
//!
//! - [`file`]: the operator policy (`--policy FILE` / `LOBSTER_POLICY`, TOML
//!   or YAML): trusted or untrusted, allowed directory roots and env names,
//!   maximum limits.
//! - [`enforce`]: the plan-time check of a pipeline against the policy and
//!   the lock file; every excess is collected into one refusal.
//! - [`lock`]: `lobster.lock` (step name → blake3 digest) and pin checks.
//! - [`bundle`]: step bundles (component + manifest) and their verification.
//! - [`plan_digest`]: the digest an approval is bound to.
//! - [`workflow`]: the same policy over workflow files (host `run:` steps).
//! - [`broker`]: brokered tool and model calls: allowlists, grants, per-run budgets.

#![deny(missing_docs)]

pub mod broker;
pub mod bundle;
pub mod enforce;
pub mod file;
pub mod finding;
pub mod lock;
pub mod plan_digest;
pub mod workflow;

pub use enforce::{check_plan, clamp_defaults};
pub use file::{Maxima, Policy, Trust};
pub use finding::Finding;
pub use lock::LockFile;
