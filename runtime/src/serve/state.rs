//! The server's shared state, handed to every handler explicitly.

use super::auth::authenticate;
use super::config::ServeConfig;
use super::link::LinkKey;
use super::metrics::Metrics;
use super::tenant::Tenant;
use crate::kernel::Cancel;
use crate::state::StateStore;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// A run going on in this process.
pub struct Live {
    pub tenant: String,
    pub cancel: Cancel,
    /// Set when the server's shutdown cancelled the run.
    pub by_shutdown: Arc<AtomicBool>,
    /// Its record while it runs (`status: "running"`), stored only once
    /// the run's id is handed out before it settled (a 202).
    pub record: crate::state::RunRecord,
    /// Whether a record of the run is in the tenant's key/value store (a
    /// resume, a 202, or any run on PostgreSQL): its settled record must
    /// replace that one there. Otherwise it goes to the run log.
    pub in_store: bool,
}

/// Everything the handlers share.
pub struct AppState {
    pub config: ServeConfig,
    pub tenants: Vec<Arc<Tenant>>,
    /// The server's own store (the link key).
    pub root: StateStore,
    pub link_key: LinkKey,
    /// Signs approvers' session cookies (derived from the link key).
    pub session_key: super::approver::SessionKey,
    /// This node's id (`node` in run records; its heartbeat key with a
    /// PostgreSQL store).
    pub node: String,
    pub metrics: Arc<Metrics>,
    /// Base of approval links, without a trailing `/`.
    pub public_url: String,
    /// Runs going on, by runId.
    pub live: Mutex<HashMap<String, Live>>,
    /// Woken whenever a run ends (shutdown waits on it).
    pub run_ended: tokio::sync::Notify,
    /// Set once SIGTERM/SIGINT arrived: new runs are refused.
    pub shutting_down: AtomicBool,
    /// Where log lines go.
    pub log: super::Log,
}

impl AppState {
    /// The tenant a bearer token belongs to.
    pub fn tenant_for(&self, token: &str) -> Option<Arc<Tenant>> {
        authenticate(&self.tenants, token).cloned()
    }

    /// The tenant called `name`.
    pub fn tenant_named(&self, name: &str) -> Option<Arc<Tenant>> {
        self.tenants.iter().find(|t| t.name == name).cloned()
    }

    /// Whether shutdown began.
    pub fn stopping(&self) -> bool {
        self.shutting_down.load(Ordering::SeqCst)
    }

    /// How many runs are going on.
    pub fn live_count(&self) -> usize {
        self.live.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}
