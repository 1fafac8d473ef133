//! The request layer: the only way into a run. Every door — `lobster run`,
//! `lobster resume`, `lobster call`, `lobster mcp`, and `lobster serve`'s
//! `/mcp` and `/v1/*` — turns its wire format into a typed [`Request`] and
//! hands it to [`start`] with the door's [`Settings`]; it gets a
//! [`RunHandle`] back (its cancellation, and its end to wait for, blocking
//! or async) and renders the [`Finished`] run its own way ([`Reply`] is the
//! tool envelope).
//!
//! # Contract
//!
//! - Requests are typed: [`RunRequest`] (a [`RunTarget`] — the target rule
//!   is written once, in [`target`] — args, cwd, [`LimitArgs`], mode) and
//!   [`ResumeCall`]; a resume goes to the pipeline or workflow layer by the
//!   kind its token names ([`resume`]).
//! - Everything a run needs lives in its own [`crate::kernel::Context`]
//!   (built in [`context`] the same way for every door: limits, clamps,
//!   policy, directory, grants, steps, endpoints) and in the store;
//!   [`Settings`] is read-only. Runs from many threads are independent: no
//!   printing, no global latch, no signal handlers here.
//! - Cancellation: each run has a [`Cancel`] the door may keep;
//!   `cancel.trigger(CancelReason::Signal {..})` ends the run as SIGINT
//!   would. The deadline (`timeoutMs`, default 20 s in tool mode) fires on
//!   the process's timer thread; a run that does not stop within
//!   [`start::CANCEL_GRACE`] of its cancellation settles with the
//!   cancellation error anyway.
//! - Nothing under `app/` imports a door.
//!
//! ```no_run
//! use lobster::app::{self, Request, RunRequest, Settings, StartOptions};
//! let settings = std::sync::Arc::new(Settings::default());
//! let request = RunRequest::pipeline("exec --json --shell 'echo [1,2]' | approve --prompt ok?");
//! let handle = app::start(settings, Request::Run(request), StartOptions::default());
//! assert_eq!(handle.wait().reply().status(), Some("needs_approval"));
//! ```

pub mod approval;
pub mod catalog;
pub mod check;
pub mod context;
pub mod doctor;
pub mod dry_run;
pub mod gate;
pub mod journal;
pub mod options;
pub mod replay;
pub mod reply;
pub mod request;
pub mod resume;
pub mod runs;
pub mod start;
pub mod step_project;
pub mod store;
pub mod target;

pub use crate::kernel::Cancel;
pub use catalog::{Catalog, WorkflowEntry};
pub use options::{LimitArgs, StepOptions};
pub use reply::Reply;
pub use request::{Call, ResumeCall, RunRequest};
pub use start::{
    prepare, start, start_prepared, Finished, Prepared, Request, RunHandle, StartOptions, Work,
};
pub use target::RunTarget;

/// What a front door was started with: the operator's policy file, what
/// every run gets for its steps, and the workflow catalog. Read-only; share
/// it between threads behind an `Arc`.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// `--policy FILE` (refused per call when `LOBSTER_POLICY` is set, as in the CLI).
    pub policy: Option<String>,
    /// The step path and grants of every run (`--steps`, `--allow-*`).
    pub steps: StepOptions,
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
    /// a workflow that is not a catalog name, a pipeline that is a lone
    /// workflow path, and `cwd` (see [`target`]). `lobster serve` sets it:
    /// its tenants run catalog workflows and `workflowText`, in their own
    /// roots.
    pub no_server_files: bool,
    /// A `lobster serve` tenant's root: runs and resumes start in its
    /// working directory, and every file they name is confined to it and
    /// its read-only roots ([`crate::kernel::root`]).
    pub root: Option<crate::kernel::root::RunRoot>,
    /// Whether a run's deadline stops while components compile (the CLI's
    /// one run; a server's runs keep the wall clock, so one tenant's
    /// compile does not stop another's deadline).
    pub deadline_pauses: bool,
    /// The runs are a `lobster serve` tenant's: their endpoints and
    /// credentials come only from `fixed_policy` (and the variables it
    /// names), never from the reference's variables in the server's
    /// environment, and they see only [`context::tenant_env`] of it.
    pub tenant: bool,
    /// The door runs come through, for their journals (`call`, `mcp`,
    /// `serve`; empty: `call`).
    pub door: &'static str,
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
    /// when given), as coming through `door` (default: [`Settings::door`]).
    pub fn journal(
        &self,
        door: Option<&'static str>,
        run_id: Option<String>,
    ) -> crate::journal::Journal {
        crate::journal::Journal::planned(door.unwrap_or(self.door()), run_id)
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
