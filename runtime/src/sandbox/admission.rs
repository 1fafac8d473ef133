//! What the run's authority says about a component before it is compiled.
//!
//! The sandbox resolves names and compiles components, but it does not
//! decide which ones a run may use: a resolver carries the run's
//! [`Admission`] (built by the policy layer from the run's authority) and
//! asks it, for every component, with the bytes about to be compiled —
//! including a component this process compiled before for another run, so
//! a tenant whose policy requires signatures never gets an unsigned step
//! because another tenant's run loaded it first. Names that stand for
//! something fetched (`oci://…`) are turned into a local file by
//! [`Admission::fetch`] first.

use super::error::SandboxError;
use std::path::{Path, PathBuf};

/// The run's judgement of components; see the module docs.
pub trait Admission: Send + Sync {
    /// The local file `name` stands for when it names a component to fetch
    /// (`oci://…`): fetched, verified and cached now. `None` when `name` is
    /// not such a name.
    fn fetch(&self, name: &str) -> Option<Result<PathBuf, SandboxError>>;

    /// Judge the component called `name` in the file at `path` whose blake3
    /// is `digest`, before it is compiled; `bytes` reads the file's bytes
    /// (called only when the judgement needs them).
    fn admit(
        &self,
        name: &str,
        path: &Path,
        digest: &str,
        bytes: &mut dyn FnMut() -> std::io::Result<Vec<u8>>,
    ) -> Result<(), SandboxError>;
}

impl std::fmt::Debug for dyn Admission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Admission")
    }
}
