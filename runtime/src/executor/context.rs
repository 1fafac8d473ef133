//! What every stage is handed: mode, working directory, environment, state
//! store, limits, and the cancellation handle.

use super::Cancel;
use crate::commands::Registry;
use crate::policy::{Authority, Policy};
use crate::sandbox::{ArtifactCache, Grants, SandboxConfig, StepPath, StepResolver};
use crate::state::StateStore;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Human or tool (agent) mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Renderers print; gates prompt on a terminal.
    Human,
    /// One JSON envelope on stdout; gates always halt.
    Tool,
}

/// Ceilings for one run.
#[derive(Debug, Clone, Default)]
pub struct Limits {
    /// Whole-run wall clock (`--timeout-ms`).
    pub timeout: Option<Duration>,
    /// Cap on captured child output and on what Lobster prints (`--max-stdout-bytes`).
    pub max_output_bytes: Option<usize>,
}

/// The environment of one run, shared by all its stages.
pub struct Context {
    pub mode: Mode,
    /// A human is at a terminal: gates may prompt instead of halting.
    pub interactive: bool,
    /// Working directory for host processes and relative paths.
    pub cwd: PathBuf,
    /// Environment passed to host processes.
    pub env: Arc<BTreeMap<String, String>>,
    pub state: StateStore,
    pub cancel: Cancel,
    pub limits: Limits,
    pub registry: Arc<Registry>,
    /// Capabilities of wasm steps (directories, env, clock, seed). The
    /// default grants nothing; the CLI fills it from `--allow-read DIR`,
    /// `--allow-write DIR` and `--allow-env NAME` through
    /// [`Context::set_grants`], which also gives them to the authority as
    /// the most a step may be handed; derived contexts only narrow them.
    pub grants: Grants,
    /// Limits, state scope and log sink of wasm steps.
    pub sandbox: SandboxConfig,
    /// The run's one authority: the operator policy (default: trusted,
    /// unrestricted) and the run's working directory, judging every
    /// capability when it is used (see [`crate::policy::authority`]).
    /// Derived contexts share it, so a step's `cwd` never moves it.
    pub authority: Arc<Authority>,
    /// The run's broker for gateway tool and model calls: its ledger of
    /// recorded answers and spent budget is shared by every stage and step.
    pub broker: Arc<crate::broker::Broker>,
}

impl Context {
    /// The operator policy (held by the authority).
    pub fn policy(&self) -> &Policy {
        self.authority.policy()
    }

    /// Make `dir` the run's working directory: host processes start there
    /// and the authority resolves granted directories against it.
    pub fn set_run_dir(&mut self, dir: PathBuf) {
        self.authority = Arc::new(self.authority.with_workdir(dir.clone()));
        self.cwd = dir;
    }

    /// Put the run under `policy` (keeping its working directory).
    pub fn set_policy(&mut self, policy: Policy) {
        self.authority = Arc::new(self.authority.with_policy(policy));
    }

    /// The run's grants: its steps' grants, and the most the authority
    /// lets any step be handed (steps' grants are only ever narrowed).
    pub fn set_grants(&mut self, grants: Grants) {
        self.authority = Arc::new(self.authority.with_grants(grants.clone()));
        self.grants = grants;
    }

    /// Resolve wasm steps through `path`, caching compiled artefacts in the
    /// state directory.
    pub fn use_step_path(&mut self, path: StepPath) {
        let resolver = StepResolver::new(path, ArtifactCache::in_state_dir(self.state.dir()));
        self.registry = Arc::new(Registry::builtin().with_steps(resolver));
    }

    /// The step path as recorded in a resume state.
    pub fn step_dirs(&self) -> Vec<String> {
        self.registry
            .steps()
            .map(|s| {
                s.path()
                    .dirs()
                    .iter()
                    .map(|d| d.to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Restore a step path recorded by [`Context::step_dirs`] (empty: keep the current one).
    pub fn restore_step_dirs(&mut self, dirs: &[String]) {
        if !dirs.is_empty() {
            self.use_step_path(StepPath::new(dirs.iter().map(PathBuf::from).collect()));
        }
    }

    /// A context over the current process: its cwd and environment. Wasm
    /// steps resolve on `LOBSTER_STEP_PATH` then `./steps`, with compiled
    /// artefacts cached under `<state dir>/cache/wasm`; nothing is granted.
    pub fn from_process(mode: Mode, state: StateStore) -> Self {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        let steps = StepResolver::new(
            StepPath::from_env(&cwd, &[]),
            ArtifactCache::in_state_dir(state.dir()),
        );
        Context {
            mode,
            interactive: false,
            env: Arc::new(std::env::vars().collect()),
            state,
            cancel: Cancel::default(),
            limits: Limits::default(),
            registry: Arc::new(Registry::builtin().with_steps(steps)),
            grants: Grants::default(),
            sandbox: SandboxConfig::default(),
            authority: Arc::new(Authority::new(Policy::default(), cwd.clone())),
            cwd,
            broker: Arc::default(),
        }
    }
}
