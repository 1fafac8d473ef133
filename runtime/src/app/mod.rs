//! The front-door layer: typed requests in, the tool envelope out, for every
//! front door that is not a terminal (`lobster call`, `lobster mcp`, and the
//! HTTP server that comes later).
//!
//! # Contract
//!
//! - [`run`] runs a pipeline or a workflow file ([`RunRequest`]); [`resume`]
//!   continues a paused run by token or `approvalId` ([`ResumeCall`]);
//!   [`Catalog`] lists the workflows of the `--workflows` directories. Each
//!   returns a [`Reply`]: the same envelope (`ok`, `needs_approval`,
//!   `needs_input`, `cancelled`, or an error envelope) and exit code the CLI
//!   prints for `lobster run --mode tool`, with the same policy, limits
//!   (defaults, clamps, the `maxStdoutBytes` cap on the envelope), grants,
//!   state directory and token rules.
//! - **Concurrency.** Everything a run needs lives in its own [`Context`]
//!   and on disk (the state directory); [`Settings`] is read-only. Calls from
//!   several threads of one process are independent: no printing, no global
//!   latch, no signal handlers on this path.
//! - **Cancellation.** Each call takes a [`Cancel`] handle the caller made;
//!   `cancel.trigger(CancelReason::Signal {..})` ends the run as SIGINT would
//!   (children are signalled, the run ends with the signal's error). The
//!   deadline (`timeoutMs`, default 20 s) is enforced by the calling thread,
//!   so no timer thread outlives a call. If the run does not stop within a
//!   grace period after cancellation, the call returns the cancellation
//!   error anyway (the CLI's watchdog does the same by exiting).
//! - **Blocking.** The functions block; async servers call them from
//!   `spawn_blocking`.
//!
//! ```no_run
//! use lobster::app::{self, RunRequest, RunTarget, Settings};
//! use lobster::executor::Cancel;
//! let settings = Settings::default();
//! let request = RunRequest::pipeline("exec --json --shell 'echo [1,2]' | approve --prompt ok?");
//! let reply = app::run(&settings, &request, &Cancel::default());
//! assert_eq!(reply.status(), Some("needs_approval"));
//! ```

pub mod approval;
pub mod catalog;
pub mod context;
pub mod exec;
pub mod gate;
pub mod journal;
pub mod options;
pub mod request;
pub mod resume;
pub mod run_threads;

pub use crate::kernel::Cancel;
pub use catalog::{Catalog, WorkflowEntry};
pub use exec::{resume, resume_logged, run, run_as, run_logged, Reply};
pub use request::{parse_call, Call, ResumeCall, RunRequest, RunTarget};

use options::SandboxArgs;

/// What a front door was started with: the operator's policy file, the
/// sandbox flags every run gets, and the workflow catalog. Read-only; share
/// it between threads behind an `Arc`.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// `--policy FILE` (refused per call when `LOBSTER_POLICY` is set, as in the CLI).
    pub policy: Option<String>,
    /// `--steps`, `--allow-read`, `--allow-write`, `--allow-env` for every run.
    pub sandbox: SandboxArgs,
    /// The workflows under `--workflows` directories.
    pub catalog: Catalog,
    /// The state store of every run and resume (`None`: `LOBSTER_STATE_DIR`).
    /// `lobster serve` gives each tenant its own.
    pub state: Option<crate::state::StateStore>,
    /// A policy already loaded by the front door, used instead of `policy`
    /// and `LOBSTER_POLICY` (`lobster serve`: the tenant's policy, checked
    /// at start-up). The run's authority judges everything under it.
    pub fixed_policy: Option<crate::kernel::Policy>,
    /// Told what each WebAssembly step of every run cost (`lobster serve`'s
    /// metrics); `None`: nobody is watching.
    pub observer: Option<crate::kernel::StepObserver>,
    /// Refuse requests that name files or directories of this process:
    /// a workflow file (`RunTarget::WorkflowFile`, or a pipeline that is a
    /// lone workflow path) and `cwd`. `lobster serve` sets it: its tenants
    /// run catalog workflows and `workflowText`, in their own roots.
    pub no_server_files: bool,
    /// A `lobster serve` tenant's root: runs and resumes start in its
    /// working directory, and every file they name is confined to it and
    /// its read-only roots ([`crate::kernel::root`]).
    pub root: Option<crate::kernel::root::RunRoot>,
    /// The runs are a `lobster serve` tenant's: their endpoints and
    /// credentials come only from `fixed_policy` (and the variables it
    /// names), never from the reference's variables in the server's
    /// environment, and they see only [`context::tenant_env`] of it.
    pub tenant: bool,
    /// The door runs come through, for their journals (`call`, `mcp`,
    /// `serve`; empty: `call`).
    pub door: &'static str,
    /// Keep no journal of these runs (`lobster serve` without `journal =
    /// true`).
    pub no_journal: bool,
}

impl Settings {
    /// Where the runs' endpoints and credentials come from.
    pub fn sources(&self) -> crate::broker::endpoints::Sources {
        if self.tenant {
            crate::broker::endpoints::Sources::Tenant
        } else {
            crate::broker::endpoints::Sources::Process
        }
    }

    /// The journal a run through these settings keeps (as run `run_id`
    /// when given): off under [`Settings::no_journal`].
    pub fn journal(&self, run_id: Option<String>) -> crate::journal::Journal {
        if self.no_journal {
            crate::journal::Journal::off()
        } else {
            crate::journal::Journal::planned(self.door(), run_id)
        }
    }

    /// [`Settings::door`], `call` when unset.
    pub fn door(&self) -> &'static str {
        if self.door.is_empty() {
            "call"
        } else {
            self.door
        }
    }

    /// The store runs use: [`Settings::state`], else `LOBSTER_STATE_DIR`.
    pub fn store(&self) -> crate::state::StateStore {
        self.state
            .clone()
            .unwrap_or_else(crate::state::StateStore::from_env)
    }
}
