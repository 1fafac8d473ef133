//! Host-side bindings generated from `wit/step.wit` (`lobster:step@0.1.0`)
//! and `wit/v0.2/step.wit` (`lobster:step@0.2.0`, which adds `broker`).
//! Both are linked, so a 0.1 component runs exactly as before.
//! Host imports are trappable so that `log` can stop a guest that floods it.

#![allow(missing_docs)]

wasmtime::component::bindgen!({
    world: "step",
    path: "../wit",
    imports: { default: trappable },
});

pub use self::lobster::step::types::{Access, Capability, FlagKind, LogLevel};

/// `lobster:step@0.2.0`.
pub mod v02 {
    wasmtime::component::bindgen!({
        world: "step",
        path: "../wit/v0.2",
        imports: { default: trappable },
    });
}
