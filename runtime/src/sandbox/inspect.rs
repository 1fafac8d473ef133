//! Import and export audit of a component, without linking or running it:
//! what `lobster check` and `lobster bundle verify` look at first.
//!
//! A step may import only what the host provides and Lobster grants:
//! `lobster:step/*` (0.1.x and 0.2.x, whose `broker` the host judges per
//! call), and WASI `cli`, `io`, `clocks`, `random`, `filesystem` and
//! `sockets`. `wasi:http/*` and any other interface are refused by name.
//!
//! `wasi:sockets/*` is linked but grants nothing: every store is built with
//! TCP, UDP and name lookup disabled and an address check that refuses every
//! address (`sandbox/store.rs`), so each use fails inside the call with
//! "access denied". A capability is judged where it is used, and a socket
//! is never usable; the import alone is harmless, and every componentize-py
//! component carries it (CPython's `socket` module links it whether or not
//! the step touches the network).

use super::cache::ArtifactCache;
use super::component::{digest_of, kind_of, ComponentKind};
use super::engine::engine;
use super::error::SandboxError;
use std::path::Path;

pub use crate::kernel::authority::{import_problem, ALLOWED_IMPORTS};

/// What a component is, seen from outside.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inspection {
    /// blake3 of the bytes.
    pub digest: String,
    /// The world it implements, if any.
    pub kind: Option<ComponentKind>,
    /// Every imported name, in the component's order.
    pub imports: Vec<String>,
}

impl Inspection {
    /// One message per import Lobster refuses, naming the interface.
    pub fn import_problems(&self) -> Vec<String> {
        self.imports
            .iter()
            .filter_map(|name| import_problem(name))
            .collect()
    }
}

/// Compile `bytes` (cached) and list their imports and world.
pub fn inspect(
    bytes: &[u8],
    source: &Path,
    cache: &ArtifactCache,
) -> Result<Inspection, SandboxError> {
    let engine = engine()?;
    let digest = digest_of(bytes);
    let (component, _) = cache.load(engine, bytes, &digest, source)?;
    let imports = component
        .component_type()
        .imports(engine.engine())
        .map(|(name, _)| name.to_string())
        .collect();
    Ok(Inspection {
        digest,
        kind: kind_of(engine, &component),
        imports,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_and_unknown_imports_are_named() {
        assert!(import_problem("wasi:cli/stdin@0.2.6").is_none());
        // Linked with every use refused at run time, so not a problem here.
        assert!(import_problem("wasi:sockets/tcp@0.2.6").is_none());
        assert!(import_problem("wasi:sockets/ip-name-lookup@0.2.0").is_none());
        assert!(import_problem("lobster:step/host@0.1.0").is_none());
        // lobster:step@0.2.0's broker is the host's own (judged per call).
        assert!(import_problem("lobster:step/broker@0.2.0").is_none());
        assert!(import_problem("wasi:http/outgoing-handler@0.2.0")
            .unwrap()
            .contains("HTTP"));
        assert!(import_problem("evil:thing/x")
            .unwrap()
            .contains("evil:thing/x"));
    }
}
