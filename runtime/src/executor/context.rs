//! What every stage is handed: mode, working directory, environment, state
//! store, limits, and the cancellation handle.

use super::Cancel;
use crate::commands::Registry;
use crate::policy::Policy;
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
    /// `--allow-write DIR` and `--allow-env NAME`.
    pub grants: Grants,
    /// Limits, state scope and log sink of wasm steps.
    pub sandbox: SandboxConfig,
    /// The operator policy, enforced at plan time (default: trusted,
    /// unrestricted; see [`crate::policy`]).
    pub policy: Arc<Policy>,
    /// The run's broker for gateway tool and model calls: its ledger of
    /// recorded answers and spent budget is shared by every stage and step.
    pub broker: Arc<crate::broker::Broker>,
}

impl Context {
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
            cwd,
            env: Arc::new(std::env::vars().collect()),
            state,
            cancel: Cancel::default(),
            limits: Limits::default(),
            registry: Arc::new(Registry::builtin().with_steps(steps)),
            grants: Grants::default(),
            sandbox: SandboxConfig::default(),
            policy: Arc::new(Policy::default()),
            broker: Arc::default(),
        }
    }
}
