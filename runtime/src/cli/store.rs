//! `lobster store migrate`, and the global `--store URL` flag that chooses
//! the store for any command.

use super::output::{finish_text, human_error, write_once};
use crate::error::Error;
use crate::state::StateStore;

/// `lobster help store`.
pub const STORE_HELP: &str = "lobster store — the state store (files or PostgreSQL)

Usage:
  lobster [--store URL] store migrate

Every command keeps its state (paused runs, approval ids, the token key,
state.get/state.set/diff.last values) in one store:
  --store URL            before the command, for this invocation
  LOBSTER_STORE=URL      otherwise
  LOBSTER_STORE_LEASE_MS how long a resume's claim holds without a heartbeat
                         (PostgreSQL; default 30000, 500 to 3600000)
  files in LOBSTER_STATE_DIR (default ~/.lobster/state) when neither is set
URL is postgres://USER[:PASSWORD]@HOST[:PORT]/DB (or postgresql://…,
e.g. postgresql://postgres@/postgres?host=/run/postgresql for a unix
socket), file://DIR or a directory, or files. With PostgreSQL, LOBSTER_STATE_DIR still
holds node-local caches (compiled components).

Subcommands:
  migrate   create or upgrade the PostgreSQL schema (tables lobster_*,
            version in lobster_schema_version) and print its version; also
            done automatically on first use. Nothing to do for files.

Examples:
  lobster store migrate
  lobster --store postgres://lobster@db.internal/lobster store migrate
  LOBSTER_STORE=postgres://lobster@db.internal/lobster lobster resume --id 1a2b3c4d --approve yes
";

/// Take a leading `--store URL` (or `--store=URL`) off `args`, making it the
/// store of this process (`LOBSTER_STORE`). An error when the URL is missing.
pub fn take_store_flag(args: Vec<String>) -> std::result::Result<Vec<String>, String> {
    let Some(first) = args.first() else {
        return Ok(args);
    };
    let (url, rest) = if first == "--store" {
        match args.get(1) {
            Some(url) if !url.starts_with('-') => (url.clone(), 2),
            _ => {
                return Err(
                    "--store requires a URL (postgres://…, file://DIR, a directory, or files)"
                        .into(),
                )
            }
        }
    } else if let Some(url) = first.strip_prefix("--store=") {
        (url.to_string(), 1)
    } else {
        return Ok(args);
    };
    if url.trim().is_empty() {
        return Err(
            "--store requires a URL (postgres://…, file://DIR, a directory, or files)".into(),
        );
    }
    // Single-threaded here: nothing has started yet.
    std::env::set_var("LOBSTER_STORE", url);
    Ok(args[rest..].to_vec())
}

/// `lobster store …`.
pub fn store(argv: &[String]) -> i32 {
    match argv.first().map(String::as_str) {
        None | Some("-h" | "--help" | "help") => {
            write_once(STORE_HELP, "");
            0
        }
        Some("migrate") if argv.len() == 1 => {
            finish_text(crate::app::store::migrate(&StateStore::from_env()))
        }
        Some(other) => {
            let e = Error::parse(format!("unknown store subcommand: {other}"))
                .with_hint("lobster store migrate (see lobster help store)");
            write_once("", &human_error(&e, None));
            2
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_store_flag_needs_a_url() {
        assert_eq!(
            take_store_flag(args(&["run", "x"])).unwrap(),
            args(&["run", "x"])
        );
        assert!(take_store_flag(args(&["--store"])).is_err());
        assert!(take_store_flag(args(&["--store", "--help"])).is_err());
        assert!(take_store_flag(args(&["--store="])).is_err());
    }
}
