//! The trust layer: what an operator allows a run to do, and how Lobster
//! proves that what runs is what was reviewed.
//!
//! The operator policy file and the run's one authority judging each
//! capability are in the kernel (`crate::kernel::policy`,
//! `crate::kernel::authority`), since every run's context holds them.
//!
//! - [`enforce`]: run-wide grants and limits against the policy (the
//!   pipeline walk is the planner's: `executor::policy_check`).
//! - [`lock`]: `lobster.lock` (step name → blake3 digest) and pin checks.
//! - [`pins`]: the components a paused plan runs (name, file, digest).
//! - [`recovery`]: which paused runs may run again after their resumer died.
//! - [`broker`]: brokered tool and model calls: allowlists, grants, per-run budgets.
//! - [`credential`]: origins, secrets, and the rule that binds one to the other.

#![deny(missing_docs)]

pub mod broker;

pub mod enforce;
pub mod finding;
pub mod lock;
pub mod pins;
pub mod recovery;

pub use crate::kernel::credential;
pub use crate::kernel::policy::{ModelPolicy, ProviderPolicy};
pub use crate::kernel::{Authority, Maxima, Policy, Refusal, Request, Trust};
pub use enforce::clamp_defaults;
pub use finding::Finding;
pub use lock::LockFile;
