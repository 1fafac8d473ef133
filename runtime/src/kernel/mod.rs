//! The types every room shares, below the capabilities and above the base
//! (see docs/ARCHITECTURE.md, "Rooms"): what one run is handed
//! ([`Context`], built once by [`ContextBuilder`]: nothing swaps its
//! authority afterwards), its cancellation ([`Cancel`], with the reaper that
//! kills its process groups when Lobster dies), its ceilings ([`Limits`],
//! [`Mode`]), the stage trait every built-in and step implements
//! ([`Command`], [`Signature`], [`ItemStream`], [`Output`], [`Halt`]), the
//! [`Registry`] of stages with its [`StepSource`] (implemented by the
//! sandbox), and the data the context holds: the operator [`Policy`] and
//! the run's [`Authority`] judging every capability, the [`Grants`] of its
//! steps, their settings ([`SandboxConfig`], [`LogSink`]) and the broker's
//! [`Ledger`] (with, for a run claimed again after its resumer died, the
//! calls that resumer made: [`recorded`]).
//!
//! Nothing here runs a stage, starts a process, loads a component or makes a
//! call: those are the rooms above.

pub mod authority;
pub mod cancel;
pub mod context;
pub mod credential;
pub mod grants;
pub mod ledger;
pub mod limits;
pub mod log;
pub mod policy;
pub mod reaper;
pub mod recorded;
pub mod registry;
pub mod root;
pub mod stage;
pub mod steps;
pub mod timer;

pub use authority::{Authority, Refusal, Request, SignatureCheck};
pub use cancel::{pause_deadlines, Cancel, CancelReason, DeadlinePause, GroupGuard};
pub use context::{Context, ContextBuilder, Mode};
pub use grants::{Access, DirGrant, GrantError, Grants, GrantsBuilder, ResolvedDir};
pub use ledger::{Broker, Ledger, Spent};
pub use limits::{EffectiveLimits, Limits, StepLimits};
pub use log::{Level, LogLine, LogSink};
pub use policy::{GatewayPolicy, Maxima, Policy, Trust};
pub use registry::{Registry, StepSource};
pub use root::Confinement;
pub use stage::{
    collect, parse_lazy, parsed, stream_of, Command, Example, FlagSpec, FlagType, Halt, ItemStream,
    LazyStream, OtherFlags, Output, Signature,
};
pub use steps::{SandboxConfig, StepObserver, StepReport};
