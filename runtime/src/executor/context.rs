//! What every stage is handed: mode, working directory, environment, state
//! store, limits, and the cancellation handle.

use super::Cancel;
use crate::commands::Registry;
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
}

impl Context {
    /// A context over the current process: its cwd and environment.
    pub fn from_process(mode: Mode, state: StateStore) -> Self {
        Context {
            mode,
            interactive: false,
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
            env: Arc::new(std::env::vars().collect()),
            state,
            cancel: Cancel::default(),
            limits: Limits::default(),
            registry: Arc::new(Registry::builtin()),
        }
    }
}
