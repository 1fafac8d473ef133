//! The WebAssembly step sandbox: pipeline stages that are WASI components
//! (wasm32-wasip2), run under wasmtime with hard limits and only the
//! capabilities a run grants.
//!
//! - [`engine`]: one lazily created engine per process (component model,
//!   fuel, epoch interruption, per-instance [`Allocation`]) and its epoch
//!   ticker.
//! - [`cache`]: compiled artefacts under `<state dir>/cache/wasm/`, keyed by
//!   blake3 + engine fingerprint, validated before `deserialize`.
//! - [`compile`]: compiling off the run's clock, bounded, observable;
//!   `flight`: one compile per component for runs that need it at once.
//! - [`component`]: a loaded component (digest, kind, `InstancePre`,
//!   `describe` answer); `lobster:step` worlds and plain `wasi:cli/command`s.
//! - [`limits`], [`grants`], [`config`]: fuel, deadline, memory and output
//!   caps; directories, env allow-list, clock and seed.
//! - [`resolve`], [`wasm_step`]: stage name → component on the step path →
//!   a [`crate::kernel::Command`].
//! - [`error`]: one typed error per way a step can fail.
//! - [`admission`]: the run's judgement of a component before it is
//!   compiled (signatures, registries), and fetching `oci://` names.
//! - [`file_memo`]: a component file → its loaded component, per process,
//!   checked against the file's stamp (no re-read and re-hash per stage).
//! - [`inspect`]: import/export audit without linking (`lobster check`).
//! - [`broker_port`]: the `broker` import of `lobster:step@0.2.0` (tools and
//!   models, judged and recorded by the run's broker).
//!
//! The interface is `wit/step.wit` (`lobster:step@0.1.0`) and
//! `wit/v0.2/step.wit` (`@0.2.0`, adds `broker`); guests are built
//! with the `lobster-guest` crate (`guest-sdk/`).

#![deny(missing_docs)]

pub mod activity;
pub mod admission;
mod bindings;
pub mod broker_port;
pub mod bundle;
pub mod cache;
mod classify;
mod command_step;
pub mod compile;
pub mod component;
mod component_step;
pub mod describe;
mod determinism;
pub mod engine;
pub mod env;
pub mod error;
pub mod file_memo;
mod flight;
mod host;
pub mod inspect;
pub mod limits;
mod output;
pub mod report;
pub mod resolve;
mod sleep;
mod store;
pub mod survey;
pub mod wasm_step;

pub use crate::kernel::limits::{
    EffectiveLimits, StepLimits, DEFAULT_FUEL, DEFAULT_MEMORY_BYTES, DEFAULT_OUTPUT_BYTES,
    MAX_MEMORY_BYTES,
};
pub use crate::kernel::log;
pub use crate::kernel::{
    Access, DirGrant, Grants, GrantsBuilder, Level, LogLine, LogSink, ResolvedDir, SandboxConfig,
    StepObserver, StepReport,
};
pub use admission::Admission;
pub use broker_port::{CallBounds, RunBroker, StepBroker};
pub use cache::{ArtifactCache, CacheOutcome};
pub use component::{digest_of, load_bytes, load_file, ComponentKind, LoadedComponent};
pub use describe::{FlagKind, Requirement, StepFlag, StepMeta};
pub use engine::{engine, engine_started, Allocation, SandboxEngine};
pub use env::StepEnv;
pub use error::{SandboxError, Stream};
pub use host::{MAX_STATE_KEY_BYTES, MAX_STATE_VALUE_BYTES, MAX_STATE_WRITE_BYTES};
pub use report::breach_kind;
pub use resolve::{resolver_of, Pinned, StepPath, StepResolver, Trust};
pub use wasm_step::WasmStep;

/// A guest `tests/build-guests.sh` builds (`tests/guests`), or `None` after
/// a loud skip message; a failure instead when guests are required (CI,
/// `tests/run.sh`): a skipped test proves nothing.
#[cfg(test)]
pub(crate) fn test_guest(file: &str) -> Option<std::path::PathBuf> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/guests/target/wasm32-wasip2/release")
        .join(file);
    if path.is_file() {
        return Some(path);
    }
    if std::env::var_os("CI").is_some() || std::env::var_os("LOBSTER_REQUIRE_GUESTS").is_some() {
        panic!(
            "{} is missing; tests/build-guests.sh must run first",
            path.display()
        );
    }
    eprintln!(
        "\n!!!!!!!!!! SKIPPED: {} is missing; run tests/build-guests.sh first !!!!!!!!!!\n",
        path.display()
    );
    None
}
