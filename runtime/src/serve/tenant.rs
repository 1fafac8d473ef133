//! Tenants: who a bearer token is, what their runs are allowed (policy,
//! catalog, steps, store), and their request and concurrency budgets.

use super::auth::{ct_eq, sha256};
use super::config::TenantConfig;
use crate::app::{Catalog, Settings};
use crate::error::{Error, Result};
use crate::kernel::root::{Confinement, RunRoot};
use crate::kernel::Policy;
use crate::state::runlog::RunLog;
use crate::state::StateStore;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The root of `cfg`'s runs: its `workdir`, created (owner-only) and
/// made canonical, confining its runs together with its catalog and step
/// directories (read-only).
fn tenant_root(cfg: &TenantConfig) -> Result<RunRoot> {
    let fail = |what: &str, e: std::io::Error| {
        Error::runtime(format!(
            "tenant {}: cannot {what} its workdir {}: {e}",
            cfg.name,
            cfg.workdir.display()
        ))
    };
    std::fs::create_dir_all(&cfg.workdir).map_err(|e| fail("create", e))?;
    let workdir = cfg.workdir.canonicalize().map_err(|e| fail("open", e))?;
    let read_only = cfg
        .workflows
        .iter()
        .chain(&cfg.steps)
        .filter_map(|d| d.canonicalize().ok())
        .collect();
    Ok(RunRoot {
        workdir,
        confinement: Confinement {
            read_only,
            tenant: true,
        },
    })
}

/// One configured tenant.
pub struct Tenant {
    pub name: String,
    token_sha256: [u8; 32],
    /// What every run of this tenant is started with (its policy, catalog,
    /// steps and store).
    pub settings: Arc<Settings>,
    pub store: StateStore,
    /// Its root ([`Tenant::workdir`]).
    workdir: std::path::PathBuf,
    /// Records of runs answered within their `wait` (files store only; see
    /// [`crate::state::runlog`]). PostgreSQL keeps every record in its table.
    pub run_log: Option<RunLog>,
    pub self_approve: bool,
    /// The humans who may approve (`[[tenant.approver]]`).
    pub approvers: Vec<super::approver::Approver>,
    /// An MCP client's "input required" answer counts as a human's.
    pub elicitation_is_human: bool,
    /// The webhook told of every approval gate, with its signing key.
    pub notifier: Option<super::notify::Notifier>,
    /// Sign-in attempts on the approval page (a bucket of 10 a minute).
    sign_ins: Mutex<Bucket>,
    pub max_concurrent_runs: usize,
    running: AtomicUsize,
    rate: Mutex<Bucket>,
    requests_per_minute: u32,
    /// Serialises updates of this tenant's run index keys.
    pub index_lock: Mutex<()>,
}

/// A token bucket: `requests_per_minute` tokens, refilled continuously.
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// A refusal for being over a budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OverBudget {
    /// Too many requests this minute; retry after this many seconds.
    Rate(u64),
    /// Too many runs at once.
    Runs,
}

impl Tenant {
    /// Build a tenant: load its policy (untrusted with no roots when none is
    /// configured), its catalog and its store. `longest_wait` bounds how
    /// long after its start a run may settle and still be answered at once
    /// (the run log looks for a record within that window).
    pub fn new(
        cfg: &TenantConfig,
        root: &StateStore,
        metrics: &Arc<super::metrics::Metrics>,
        longest_wait: Duration,
        notifier: Option<super::notify::Notifier>,
    ) -> Result<Tenant> {
        let policy = match &cfg.policy {
            Some(path) => {
                Policy::load(path).map_err(|e| Error::parse(format!("tenant {}: {e}", cfg.name)))?
            }
            None => Policy {
                trust: crate::policy::Trust::Untrusted,
                ..Policy::default()
            },
        };
        if !policy.fuel {
            // Fuel is an engine-wide switch; one tenant cannot turn it off for all.
            return Err(Error::parse(format!(
                "tenant {}: policy {} says fuel = false, which lobster serve does not allow (the engine is shared by every tenant)",
                cfg.name,
                policy.source.as_deref().map(|p| p.display().to_string()).unwrap_or_default()
            )));
        }
        let catalog = Catalog::load(&cfg.workflows)
            .map_err(|e| Error::parse(format!("tenant {}: {e}", cfg.name)))?;
        let run_root = tenant_root(cfg)?;
        let workdir = run_root.workdir.clone();
        // Where a serve tenant's state lives: the one rule, which
        // `lobster runs --tenant` takes too.
        let store = root.for_serve_tenant(&cfg.name)?;
        let settings = Settings {
            policy: None,
            steps: crate::app::StepOptions {
                steps: cfg.steps.clone(),
                grants: crate::kernel::Grants::default(),
            },
            catalog,
            state: Some(store.clone()),
            fixed_policy: Some(policy),
            no_server_files: true,
            root: Some(run_root),
            deadline_pauses: false,
            tenant: true,
            door: super::doors::REST,
            observer: Some({
                let (metrics, tenant) = (metrics.clone(), cfg.name.clone());
                crate::sandbox::StepObserver::new(move |report| {
                    metrics.step_finished(&tenant, report)
                })
            }),
        };
        let run_log = if store.is_files() {
            Some(
                RunLog::open(&store.dir().join("runs"), longest_wait)
                    .map_err(|e| Error::runtime(format!("tenant {}: {e}", cfg.name)))?,
            )
        } else {
            None
        };
        Ok(Tenant {
            name: cfg.name.clone(),
            token_sha256: cfg.token_sha256,
            settings: Arc::new(settings),
            store,
            workdir,
            run_log,
            self_approve: cfg.self_approve,
            approvers: cfg.approvers.clone(),
            elicitation_is_human: cfg.elicitation_is_human,
            notifier,
            sign_ins: Mutex::new(Bucket {
                tokens: SIGN_INS_PER_MINUTE,
                at: Instant::now(),
            }),
            max_concurrent_runs: cfg.max_concurrent_runs,
            running: AtomicUsize::new(0),
            rate: Mutex::new(Bucket {
                tokens: cfg.requests_per_minute as f64,
                at: Instant::now(),
            }),
            requests_per_minute: cfg.requests_per_minute,
            index_lock: Mutex::new(()),
        })
    }

    /// The tenant's working directory (its root).
    pub fn workdir(&self) -> &std::path::Path {
        &self.workdir
    }

    /// How a run's workflow `name` is shown to this tenant: its catalog
    /// name or its path beneath the workdir, never a path on the server
    /// ([`crate::app::Catalog::shown_name`]).
    pub fn shown_name(&self, name: &str) -> String {
        self.settings.catalog.shown_name(&self.workdir, name)
    }

    /// Take one request from the per-minute budget.
    pub fn admit_request(&self) -> std::result::Result<(), OverBudget> {
        let rpm = self.requests_per_minute as f64;
        let per_sec = rpm / 60.0;
        let mut b = self.rate.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        b.tokens = (b.tokens + now.duration_since(b.at).as_secs_f64() * per_sec).min(rpm);
        b.at = now;
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            Ok(())
        } else {
            let wait = ((1.0 - b.tokens) / per_sec).ceil().max(1.0);
            Err(OverBudget::Rate(wait as u64))
        }
    }

    /// Take one sign-in attempt from the approval page's budget
    /// ([`SIGN_INS_PER_MINUTE`], refilled continuously): guessing an
    /// approver's password is slow whatever the guesser's speed.
    pub fn admit_sign_in(&self) -> bool {
        let mut b = self.sign_ins.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        b.tokens = (b.tokens + now.duration_since(b.at).as_secs_f64() * SIGN_INS_PER_MINUTE / 60.0)
            .min(SIGN_INS_PER_MINUTE);
        b.at = now;
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// Whether the approval page asks the human to sign in: the tenant has
    /// approvers, or its token may not approve (then a link alone decides
    /// nothing).
    pub fn needs_sign_in(&self) -> bool {
        !self.approvers.is_empty() || !self.self_approve
    }

    /// Whether `hash` is the sha256 of this tenant's token (compared in
    /// constant time).
    pub fn token_hash_is(&self, hash: &[u8; 32]) -> bool {
        ct_eq(&self.token_sha256, hash)
    }

    /// Whether `token` is this tenant's own (agent) token.
    pub fn is_own_token(&self, token: &str) -> bool {
        self.token_hash_is(&sha256(token.as_bytes()))
    }

    /// Take a run slot; the slot is given back when the guard drops.
    pub fn admit_run(self: &Arc<Self>) -> std::result::Result<RunSlot, OverBudget> {
        let prev = self.running.fetch_add(1, Ordering::SeqCst);
        if prev >= self.max_concurrent_runs {
            self.running.fetch_sub(1, Ordering::SeqCst);
            return Err(OverBudget::Runs);
        }
        Ok(RunSlot(self.clone()))
    }

    /// Runs going on now.
    pub fn running(&self) -> usize {
        self.running.load(Ordering::SeqCst)
    }
}

/// A taken run slot.
pub struct RunSlot(Arc<Tenant>);

impl Drop for RunSlot {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Sign-in attempts per tenant per minute on the approval page.
pub const SIGN_INS_PER_MINUTE: f64 = 10.0;

/// How long a client should wait before retrying a run refused for
/// concurrency: runs are short; one second is an honest guess.
pub const RUNS_RETRY_AFTER: Duration = Duration::from_secs(1);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serve::auth::authenticate;

    fn tenant(rpm: u32, runs: usize) -> Arc<Tenant> {
        let dir = tempfile::tempdir().unwrap();
        let cfg = TenantConfig {
            name: "t".into(),
            token_sha256: sha256(b"secret"),
            policy: None,
            workflows: vec![],
            steps: vec![],
            workdir: dir.path().join("work/t"),
            max_concurrent_runs: runs,
            requests_per_minute: rpm,
            self_approve: true,
            approvers: vec![],
            elicitation_is_human: false,
            notify_url: None,
        };
        Arc::new(
            Tenant::new(
                &cfg,
                &StateStore::new(dir.path()),
                &Default::default(),
                Duration::from_secs(60),
                None,
            )
            .unwrap(),
        )
    }

    #[test]
    fn tokens_match_by_hash_only() {
        let t = tenant(10, 1);
        let all = vec![t];
        assert!(authenticate(&all, "secret").is_some());
        assert!(authenticate(&all, "secreT").is_none());
        assert!(authenticate(&all, "").is_none());
    }

    #[test]
    fn budgets_refuse_beyond_their_size() {
        let t = tenant(2, 1);
        assert!(t.admit_request().is_ok());
        assert!(t.admit_request().is_ok());
        assert!(matches!(t.admit_request(), Err(OverBudget::Rate(n)) if n >= 1));
        let slot = t.admit_run().unwrap();
        assert_eq!(t.admit_run().err(), Some(OverBudget::Runs));
        drop(slot);
        assert!(t.admit_run().is_ok());
    }

    #[test]
    fn default_policy_is_untrusted() {
        let t = tenant(1, 1);
        assert!(t.settings.fixed_policy.as_ref().unwrap().untrusted());
        assert!(t.store.dir().ends_with("tenants/t"));
    }
}
