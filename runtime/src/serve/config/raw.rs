//! `serve.toml` as written, before any check (unknown keys refused).

use serde::Deserialize;

/// The file as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawConfig {
    pub(super) listen: Option<String>,
    pub(super) state: Option<String>,
    pub(super) node_id: Option<String>,
    pub(super) public_url: Option<String>,
    pub(super) approval_link_ttl: Option<String>,
    pub(super) max_body_bytes: Option<u64>,
    pub(super) request_timeout_ms: Option<u64>,
    pub(super) shutdown_grace_ms: Option<u64>,
    pub(super) header_timeout_ms: Option<u64>,
    pub(super) max_connections_per_ip: Option<usize>,
    pub(super) journal_retention: Option<String>,
    pub(super) journal_keep_runs: Option<usize>,
    pub(super) notify_key_env: Option<String>,
    pub(super) notify_timeout_ms: Option<u64>,
    pub(super) notify_attempts: Option<u32>,
    #[serde(default)]
    pub(super) tenant: Vec<RawTenant>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTenant {
    pub(super) name: String,
    pub(super) token_sha256: Option<String>,
    pub(super) token_env: Option<String>,
    pub(super) policy: Option<String>,
    #[serde(default)]
    pub(super) workflows: Vec<String>,
    #[serde(default)]
    pub(super) steps: Vec<String>,
    pub(super) workdir: Option<String>,
    pub(super) max_concurrent_runs: Option<usize>,
    pub(super) requests_per_minute: Option<u32>,
    pub(super) self_approve: Option<bool>,
    pub(super) elicitation_is_human: Option<bool>,
    pub(super) notify_url: Option<String>,
    #[serde(default)]
    pub(super) approver: Vec<RawApprover>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawApprover {
    pub(super) name: String,
    pub(super) token_sha256: Option<String>,
    pub(super) password_hash: Option<String>,
}
