//! Drives a parsed pipeline to an outcome: resolve and validate every stage
//! first, then run them in order with items streaming between them.
//!
//! The executor never prints; the CLI turns an [`Outcome`] into output.

mod cancel;
mod context;
mod plan;
pub mod policy_check;
mod reaper;
mod run;

pub use cancel::{pause_deadlines, Cancel, CancelReason, DeadlinePause, GroupGuard};
pub use context::{Context, Limits, Mode};
pub use plan::{check_pipeline, plan, suggest};
pub use reaper::watching as reaper_watching;
pub use run::{run_pipeline, Outcome};
