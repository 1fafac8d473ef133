//! `lobster serve`: a multi-tenant HTTP gateway over the [`crate::app`]
//! front-door layer (axum on a multi-thread tokio runtime; runs and resumes
//! on the blocking pool).
//!
//! - [`config`]: `serve.toml`, checked at start-up.
//! - [`tenant`]: each tenant's settings (policy, catalog, steps) and store
//!   ([`crate::state::StateStore::for_serve_tenant`]), request and concurrency budgets.
//! - [`state`]: the shared [`state::AppState`], passed to handlers explicitly.
//! - [`inline`]: inline workflows (`workflowText`) kept on disk and, on a
//!   shared store, in the store for the node that resumes them.
//! - [`runs`]: the run registry (records in the tenant's store) and the runs API.
//! - [`wire`]: the runs API's typed request bodies.
//! - [`approvals`], [`link`], [`page`]: the approvals list, signed
//!   single-use expiring links, and the HTML pages humans read.
//! - [`approver`], [`sign_in`]: approvers' credentials and sessions, and
//!   their sign-in on the approval and run pages.
//! - [`run_pages`]: the tenant's run list and run pages (`/r/{link}`).
//! - [`journal`]: `GET /v1/runs` and a run's journal, and their pruning.
//! - [`queue`], [`notify`]: the PostgreSQL run queue's workers, and the
//!   approval notifier.
//! - [`mcp_http`]: the MCP tools at `/mcp` (streamable HTTP).
//! - [`metrics`]: `/metrics` in Prometheus text.
//! - [`request_log`]: one log line per request (no bodies, tokens or links).
//! - [`shutdown`]: SIGTERM/SIGINT → stop accepting, drain, cancel.
//! - [`doors`]: the names of the doors in a run's journal.
//! - [`auth`]: [`Authed`], the request's tenant from its bearer token
//!   (constant-time compare of sha256(token)).
//! - [`error`], [`router`], [`server`]: the HTTP error, the routes and
//!   their layers, start-up and the run until a signal.
//!
//! Every capability of every run is judged by the run's
//! [`crate::kernel::Authority`] under the tenant's policy, exactly as for
//! `lobster run`; nothing here decides what a run may do. Nothing here
//! prints: the ready line and logs go through the callbacks `cli/serve.rs`
//! hands in.

pub mod approvals;
pub mod approver;
pub mod auth;
pub mod config;
pub mod error;
pub mod inline;
pub mod journal;
pub mod link;
pub mod listen;
pub mod mcp_http;
pub mod metrics;
pub mod notify;
pub mod offload;
pub mod page;
pub mod queue;
pub mod request_log;
pub mod router;
pub mod run_pages;
pub mod runs;
pub mod server;
pub mod shutdown;
pub mod sign_in;
pub mod state;
pub mod tenant;
pub mod wire;

use std::sync::Arc;

pub use auth::{authed, Authed};
pub use config::ServeConfig;
pub use error::ApiError;
pub use router::router;
pub use server::{prepare, run, SERVER_TENANT};
pub use wire::body_json;

/// The doors of `lobster serve`, as a run's journal names them (its
/// `run_started`, `run_resumed` and `decision` events' `door`).
pub mod doors {
    /// The runs API (`/v1/...`), the tenant's settings' door.
    pub const REST: &str = "serve";
    /// The MCP tools at `/mcp`.
    pub const MCP: &str = "serve-mcp";
    /// The approval page (`/a/{link}`), where a signed-in approver or the
    /// link's holder decides.
    pub const PAGE: &str = "serve-page";
}

/// Where log lines go (the CLI writes them to stderr). Never handed a secret.
pub type Log = Arc<dyn Fn(&str) + Send + Sync>;
