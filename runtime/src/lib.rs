//! Lobster: a workflow shell that lets an AI agent run a multi-step pipeline in
//! one call, stop at approval gates, and resume later from a durable token.
//!
//! Layers, from the outside in (see `docs/ARCHITECTURE.md`):
//! - [`cli`]: argv → request; outcome → stdout/stderr/exit code.
//! - [`envelope`]: the tool protocol's JSON shapes.
//! - [`resume`]: pausing at gates and resuming from tokens.
//! - [`executor`]: validates a whole pipeline, then runs it.
//! - [`commands`]: the built-in commands.
//! - [`sandbox`]: WebAssembly steps under wasmtime with limits and grants.
//! - [`policy`]: operator policy, lock pins, bundles, approval plan digests.
//! - [`dsl`]: pipeline text → stages with spans.
//! - [`state`]: atomic, durable files and tokens.
//! - [`value`]: JSON items with JavaScript semantics.
//! - [`workflow`]: workflow files (steps, gates, durable resume).
//! - [`broker`]: brokered gateway tool and model calls (judged, recorded, replayed).
//! - [`kernel`]: the types every room shares (the run's context, cancellation,
//!   limits, the stage trait and registry, policy and authority).
//! - [`registry`]: steps in OCI registries (publish, pull, the local cache).
//! - [`signing`]: step signatures in minisign's format.

pub mod app;
pub mod broker;
pub mod cli;
pub mod commands;
pub mod dsl;
pub mod envelope;
pub mod error;
pub mod executor;
pub mod journal;
pub mod kernel;
pub mod mcp;
pub mod policy;
pub mod process;
pub mod registry;
pub mod resume;
pub mod sandbox;
pub mod schema;
pub mod serve;
pub mod signing;
pub mod state;
pub mod value;
pub mod workflow;

pub use error::{Error, Result};

/// The version `lobster version` prints.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The git commit this binary was built from (12 hex digits, or `unknown`).
pub const COMMIT: &str = env!("LOBSTER_COMMIT");

/// The wasmtime version the sandbox is built on.
pub const WASMTIME_VERSION: &str = env!("LOBSTER_WASMTIME_VERSION");
