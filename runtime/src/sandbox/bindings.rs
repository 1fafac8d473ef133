//! Host-side bindings generated from `wit/step.wit` (`lobster:step@0.1.0`).
//! Host imports are trappable so that `log` can stop a guest that floods it.

#![allow(missing_docs)]

wasmtime::component::bindgen!({
    world: "step",
    path: "../wit",
    imports: { default: trappable },
});

pub use self::lobster::step::types::{Access, Capability, FlagKind, LogLevel};
