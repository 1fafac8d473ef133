//! `serve.toml`: the gateway's configuration, read and checked once at
//! start-up. Unknown keys, bad names, missing tokens and unreadable policy
//! files stop the server with an error naming the file and the key.

//!
//! The rooms: this file (the checked configuration), `raw.rs` (the file as
//! written), `load.rs` (reading and checking it), `tenant.rs` (one
//! `[[tenant]]`) and `values.rs` (durations, hashes, defaults).

use std::path::PathBuf;
use std::time::Duration;

mod load;
mod raw;
mod tenant;
mod values;

pub use tenant::check_workdir;
pub use values::parse_duration;

/// Default `listen`.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8787";

/// The checked configuration.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// Where the file was read from.
    pub file: PathBuf,
    pub listen: String,
    /// The state directory (every tenant's store lives under it; with a
    /// PostgreSQL store, only node-local caches and inline workflows).
    pub state: PathBuf,
    /// `state = "postgres://…"`: the database every node shares.
    pub store_url: Option<String>,
    /// This node's name in run records (`node_id`, else `<hostname>-<pid>`).
    pub node_id: String,
    /// Base of `approveUrl` links (`None`: `http://<bound address>`).
    pub public_url: Option<String>,
    pub approval_link_ttl: Duration,
    pub max_body_bytes: usize,
    pub request_timeout: Duration,
    pub shutdown_grace: Duration,
    /// How long a client has to send a request's headers (`header_timeout_ms`).
    pub header_timeout: Duration,
    /// Most connections open at once from one client address
    /// (`max_connections_per_ip`; `None`: no cap).
    pub max_connections_per_ip: Option<usize>,
    /// Settled runs' journals older than this are pruned (`journal_retention`,
    /// default [`DEFAULT_JOURNAL_RETENTION`]), each leaving a tombstone.
    pub journal_retention: Duration,
    /// At most this many settled runs' journals are kept per tenant
    /// (`journal_keep_runs`, default [`DEFAULT_JOURNAL_KEEP_RUNS`]).
    pub journal_keep_runs: usize,
    /// The approval notifier's signing key (`notify_key_env`'s value).
    pub notify_key: Option<Vec<u8>>,
    /// Each notification attempt's deadline (`notify_timeout_ms`, 5000).
    pub notify_timeout: Duration,
    /// Attempts per notification in all (`notify_attempts`, 3).
    pub notify_attempts: u32,
    pub tenants: Vec<TenantConfig>,
}

/// Default `journal_retention`: 30 days.
pub const DEFAULT_JOURNAL_RETENTION: Duration = Duration::from_secs(30 * 86_400);

/// Default `journal_keep_runs`.
pub const DEFAULT_JOURNAL_KEEP_RUNS: usize = 10_000;

/// One `[[tenant]]`, paths made absolute.
#[derive(Debug, Clone)]
pub struct TenantConfig {
    pub name: String,
    /// sha256 of the bearer token.
    pub token_sha256: [u8; 32],
    /// The policy file (`None`: untrusted, no roots).
    pub policy: Option<PathBuf>,
    pub workflows: Vec<PathBuf>,
    pub steps: Vec<PathBuf>,
    /// The tenant's own working directory (`workdir`, default
    /// `<state>/work/<name>`): its runs start there, its policy's `roots`
    /// resolve there, and every file its runs name is confined to it and
    /// to its catalog and step directories (read-only).
    pub workdir: PathBuf,
    pub max_concurrent_runs: usize,
    pub requests_per_minute: u32,
    pub self_approve: bool,
    /// The humans who may decide this tenant's gates (`[[tenant.approver]]`).
    pub approvers: Vec<super::approver::Approver>,
    /// An MCP client's "input required" answer counts as a human's
    /// (`elicitation_is_human`, default false).
    pub elicitation_is_human: bool,
    /// The webhook told of every approval gate (`notify_url`).
    pub notify_url: Option<crate::broker::http::Url>,
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
