//! Integration tests: drive the real `lobster` binary as agents, humans and
//! CI do, and assert on stdout, stderr, exit codes and the state directory.

mod common;

mod call;
mod cancellation;
mod data;
mod envelope;
mod errors;
mod gates;
mod limits;
mod permissions;
mod polyglot;
mod resume;
mod streaming;
mod trust;
mod wasm;
mod workflow;
