//! What every stage is handed: mode, working directory, environment, state
//! store, limits, the cancellation handle, the registry of stages, the
//! steps' grants and settings, the broker's ledger, and the run's one
//! authority.
//!
//! A context is built once ([`Context::builder`]); its authority (the
//! operator policy, the run's working directory, the run's grants) is fixed
//! from then on. Parts of a run get a [`Context::child`] (same authority);
//! a resumed run that must run where and as the paused one did gets a new
//! context from [`Context::rebuild`].

use super::{Authority, Broker, Cancel, Grants, Limits, Policy, Registry, SandboxConfig};
use crate::state::StateStore;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

/// Human or tool (agent) mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Renderers print; gates prompt on a terminal.
    Human,
    /// One JSON envelope on stdout; gates always halt.
    Tool,
}

/// The environment of one run, shared by all its stages.
pub struct Context {
    pub mode: Mode,
    /// A human is at a terminal: gates may prompt instead of halting.
    pub interactive: bool,
    /// Working directory for host processes and relative paths (a step's
    /// `cwd:` moves it in a child context; the authority's stays).
    pub cwd: PathBuf,
    /// Environment passed to host processes.
    pub env: Arc<BTreeMap<String, String>>,
    pub state: StateStore,
    pub cancel: Cancel,
    pub limits: Limits,
    /// The stages this run can name: built-ins and its step path.
    pub registry: Arc<Registry>,
    /// Capabilities of wasm steps (directories, env, clock, seed). A child
    /// context may narrow them (`permissions:`); the authority holds the
    /// run's, the most any step may be handed.
    pub grants: Grants,
    /// State scope, log sink and observer of wasm steps.
    pub sandbox: SandboxConfig,
    /// The run's broker for gateway tool and model calls: its ledger of
    /// recorded answers and spent budget is shared by every stage and step.
    pub broker: Arc<Broker>,
    /// The run's journal: planned by the door, begun when the run starts,
    /// shared by every child context (off unless a door plans it).
    pub journal: crate::journal::Journal,
    /// The run's one authority: the operator policy (default: trusted,
    /// unrestricted), the run's working directory and grants, judging
    /// every capability when it is used (see [`super::authority`]).
    authority: Arc<Authority>,
}

impl Context {
    /// A context in `mode` over `state`; everything else defaults to the
    /// current process (its directory and environment), no stages, no
    /// grants, the default (trusted) policy.
    pub fn builder(mode: Mode, state: StateStore) -> ContextBuilder {
        ContextBuilder {
            mode,
            state,
            interactive: false,
            run_dir: None,
            env: None,
            cancel: Cancel::default(),
            limits: Limits::default(),
            registry: None,
            grants: Grants::default(),
            sandbox: SandboxConfig::default(),
            policy: None,
            broker: None,
            journal: crate::journal::Journal::off(),
            confinement: Arc::default(),
        }
    }

    /// The run's authority.
    pub fn authority(&self) -> &Authority {
        &self.authority
    }

    /// The operator policy (held by the authority).
    pub fn policy(&self) -> &Policy {
        self.authority.policy()
    }

    /// A context for part of this run (a step with its own env, cwd, grants
    /// or cancellation): a copy that shares the run's authority, registry
    /// and broker.
    pub fn child(&self) -> Context {
        Context {
            mode: self.mode,
            interactive: self.interactive,
            cwd: self.cwd.clone(),
            env: self.env.clone(),
            state: self.state.clone(),
            cancel: self.cancel.clone(),
            limits: self.limits.clone(),
            registry: self.registry.clone(),
            grants: self.grants.clone(),
            sandbox: self.sandbox.clone(),
            broker: self.broker.clone(),
            journal: self.journal.clone(),
            authority: self.authority.clone(),
        }
    }

    /// A builder holding everything of this context (its policy, its
    /// authority's working directory, its grants); [`ContextBuilder::build`]
    /// makes a new authority from what the builder then holds.
    pub fn rebuild(&self) -> ContextBuilder {
        ContextBuilder {
            mode: self.mode,
            state: self.state.clone(),
            interactive: self.interactive,
            run_dir: Some(self.cwd.clone()),
            env: Some(self.env.clone()),
            cancel: self.cancel.clone(),
            limits: self.limits.clone(),
            registry: Some(self.registry.clone()),
            grants: self.authority.grants().clone(),
            sandbox: self.sandbox.clone(),
            policy: Some(self.authority.shared_policy()),
            broker: Some(self.broker.clone()),
            journal: self.journal.clone(),
            confinement: self.authority.confinement().clone(),
        }
    }

    /// The step path as recorded in a resume state.
    pub fn step_dirs(&self) -> Vec<String> {
        self.registry
            .steps()
            .map(|s| {
                s.dirs()
                    .iter()
                    .map(|d| d.to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// Builds a [`Context`]; see [`Context::builder`].
pub struct ContextBuilder {
    mode: Mode,
    state: StateStore,
    interactive: bool,
    run_dir: Option<PathBuf>,
    env: Option<Arc<BTreeMap<String, String>>>,
    cancel: Cancel,
    limits: Limits,
    registry: Option<Arc<Registry>>,
    grants: Grants,
    sandbox: SandboxConfig,
    policy: Option<Arc<Policy>>,
    broker: Option<Arc<Broker>>,
    journal: crate::journal::Journal,
    confinement: Arc<super::Confinement>,
}

impl ContextBuilder {
    /// The run's roots beyond its working directory and whether it is a
    /// serve tenant's (see [`super::root`]); kept by [`Context::rebuild`].
    pub fn confinement(mut self, confinement: super::Confinement) -> Self {
        self.confinement = Arc::new(confinement);
        self
    }

    /// The run's working directory: host processes start there and the
    /// authority resolves granted directories against it (default: the
    /// process's).
    pub fn run_dir(mut self, dir: PathBuf) -> Self {
        self.run_dir = Some(dir);
        self
    }

    /// The run's working directory, when known so far.
    pub fn current_run_dir(&self) -> PathBuf {
        self.run_dir
            .clone()
            .unwrap_or_else(|| std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")))
    }

    /// The environment host processes get (default: the process's).
    pub fn env(mut self, env: BTreeMap<String, String>) -> Self {
        self.env = Some(Arc::new(env));
        self
    }

    /// [`ContextBuilder::env`], shared with other runs.
    pub fn shared_env(mut self, env: Arc<BTreeMap<String, String>>) -> Self {
        self.env = Some(env);
        self
    }

    /// Whether a human at a terminal answers prompts.
    pub fn interactive(mut self, yes: bool) -> Self {
        self.interactive = yes;
        self
    }

    /// The run's cancellation handle.
    pub fn cancel(mut self, cancel: Cancel) -> Self {
        self.cancel = cancel;
        self
    }

    /// The run's limits.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The stages the run can name (default: none).
    pub fn registry(mut self, registry: Arc<Registry>) -> Self {
        self.registry = Some(registry);
        self
    }

    /// The run's grants: its steps' grants, and the most the authority
    /// lets any step be handed.
    pub fn grants(mut self, grants: Grants) -> Self {
        self.grants = grants;
        self
    }

    /// State scope, log sink and observer of wasm steps.
    pub fn sandbox(mut self, sandbox: SandboxConfig) -> Self {
        self.sandbox = sandbox;
        self
    }

    /// The operator policy (default: trusted, unrestricted).
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = Some(Arc::new(policy));
        self
    }

    /// The run's journal (default: off); its brokered calls are recorded
    /// in it too.
    pub fn journal(mut self, journal: crate::journal::Journal) -> Self {
        self.journal = journal;
        self
    }

    /// The operator policy, shared with what was built from it before the
    /// context (the step registry's admission).
    pub fn shared_policy(mut self, policy: Arc<Policy>) -> Self {
        self.policy = Some(policy);
        self
    }

    /// The broker's ledger (default: empty; a resumed run's is restored).
    pub fn broker(mut self, broker: Arc<Broker>) -> Self {
        self.broker = Some(broker);
        self
    }

    /// The context, with its authority made from the policy, the working
    /// directory and the grants.
    pub fn build(self) -> Context {
        let cwd = self.current_run_dir();
        let policy = self.policy.unwrap_or_default();
        let authority = Authority::shared(policy, cwd.clone())
            .with_grants(self.grants.clone())
            .with_confinement(self.confinement);
        Context {
            mode: self.mode,
            interactive: self.interactive,
            cwd,
            env: self
                .env
                .unwrap_or_else(|| Arc::new(std::env::vars().collect())),
            state: self.state,
            cancel: self.cancel,
            limits: self.limits,
            registry: self
                .registry
                .unwrap_or_else(|| Arc::new(Registry::new(Vec::new()))),
            grants: self.grants,
            sandbox: self.sandbox,
            broker: {
                let broker = self.broker.unwrap_or_default();
                broker.attach_journal(self.journal.clone());
                broker
            },
            journal: self.journal,
            authority: Arc::new(authority),
        }
    }
}
