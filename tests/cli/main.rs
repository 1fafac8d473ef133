//! Integration tests: drive the real `lobster` binary as agents, humans and
//! CI do, and assert on stdout, stderr, exit codes and the state directory.

mod common;
mod completions;
#[path = "../own_pg.rs"]
#[allow(dead_code)] // only the shared URL is used here
mod own_pg;
#[path = "../psql.rs"]
mod psql;
#[path = "../shapes.rs"]
mod shapes;

mod attacks;
mod broker;
mod broker_hostile;
mod broker_tls;
mod call;
mod cancellation;
mod check_formats;
mod credentials;
mod data;
mod envelope;
mod errors;
mod fidelity;
mod first_hour;
mod gates;
mod hardening;
mod journal;
mod limits;
mod load;
mod permissions;
mod polyglot;
mod readme;
mod reaper;
mod recovery;
mod registry;
mod replay;
mod reserved;
mod resume;
mod signing;
mod store;
mod streaming;
mod trust;
mod typos;
mod wasm;
mod wasm_broker;
mod workflow;
