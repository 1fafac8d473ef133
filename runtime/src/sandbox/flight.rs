//! One load per artefact at a time: every caller that asks the
//! [`super::ArtifactCache`] for the same component (same cache directory,
//! same digest) while a load of it is under way waits for that load
//! instead of starting its own.
//!
//! Without this, a fresh `lobster serve` given 32 runs of a wasm workflow
//! at once compiled each component 32 times over (the loaded-component map
//! only knows a component once one load has finished): ~0.2 s of CPU per
//! compile of a 120 kB step, all on the same two cores, so every first run
//! waited ~21 s at load 6–9 (runtime/benches/RESULTS.md, "first requests").
//!
//! The first caller leads: it checks the cache and, on a miss, starts the
//! compile thread ([`super::compile::spawn`]), which hands the compiled
//! component to the flight when done, so the others get it even when the
//! leader gave up waiting (its compile bound). Everyone waits through
//! [`super::compile::wait`] (run deadlines paused, each under its own
//! bound). A flight that ends without a result (a panic, a thread that
//! could not start) hands its waiters a failure rather than leaving them
//! waiting.

use super::cache::CacheOutcome;
use super::error::SandboxError;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::Duration;
use wasmtime::component::Component;

/// What a flight hands its waiters.
#[derive(Clone)]
pub(crate) struct Landed {
    /// The component, ready to link (shared: a wasmtime `Component` is a
    /// reference-counted handle).
    pub component: Component,
    /// How the leader got it.
    pub outcome: CacheOutcome,
    /// Whether a compile's artefact is now in the cache.
    pub stored: bool,
}

/// Why a flight failed, in a form every waiter can turn into its own
/// error (naming its own source file).
#[derive(Debug, Clone)]
pub(crate) enum Failure {
    /// The bytes are not a valid component (the compiler's message).
    Bad(String),
    /// The engine could not compile (no thread, a panic).
    Engine(String),
}

impl Failure {
    /// The error for a waiter that loaded `source`.
    pub fn into_error(self, source: &Path) -> SandboxError {
        match self {
            Failure::Bad(detail) => SandboxError::BadComponent {
                path: source.to_path_buf(),
                detail,
            },
            Failure::Engine(message) => SandboxError::Engine(message),
        }
    }
}

/// A flight's key: the cache directory (none: no cache) and the digest.
type Key = (Option<PathBuf>, String);

/// One load under way.
pub(crate) struct Flight {
    key: Key,
    slot: Mutex<Option<Result<Landed, Failure>>>,
    done: Condvar,
}

impl Flight {
    /// Wait up to `wait` for the result; `None` when it has not come yet.
    pub fn wait_timeout(&self, wait: Duration) -> Option<Result<Landed, Failure>> {
        let slot = self.slot.lock().unwrap_or_else(|e| e.into_inner());
        let (slot, _) = self
            .done
            .wait_timeout_while(slot, wait, |s| s.is_none())
            .unwrap_or_else(|e| e.into_inner());
        slot.clone()
    }
}

fn flights() -> MutexGuard<'static, HashMap<Key, Arc<Flight>>> {
    static FLIGHTS: OnceLock<Mutex<HashMap<Key, Arc<Flight>>>> = OnceLock::new();
    FLIGHTS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// A caller's part in the load of one artefact.
pub(crate) enum Role {
    /// No load of it is under way: this caller does it and must
    /// [`Lead::land`] the result (dropping the lead lands a failure).
    Lead(Lead),
    /// Another caller's load is under way: wait for it.
    Follow(Arc<Flight>),
}

/// The obligation to land a flight's result.
pub(crate) struct Lead {
    flight: Arc<Flight>,
    landed: bool,
}

impl Lead {
    /// The flight this lead lands (to wait on it).
    pub fn flight(&self) -> Arc<Flight> {
        self.flight.clone()
    }

    /// Hand `result` to every waiter; later callers start a new load (and
    /// find the artefact in the cache if it was stored).
    pub fn land(mut self, result: Result<Landed, Failure>) {
        self.finish(result);
    }

    fn finish(&mut self, result: Result<Landed, Failure>) {
        if self.landed {
            return;
        }
        self.landed = true;
        {
            let mut map = flights();
            if map
                .get(&self.flight.key)
                .is_some_and(|f| Arc::ptr_eq(f, &self.flight))
            {
                map.remove(&self.flight.key);
            }
        }
        *self.flight.slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(result);
        self.flight.done.notify_all();
    }
}

impl Drop for Lead {
    fn drop(&mut self) {
        self.finish(Err(Failure::Engine(
            "a compile stopped without a result".into(),
        )));
    }
}

/// Lead the load of `digest` in cache directory `dir`, or follow the one
/// under way.
pub(crate) fn lead_or_follow(dir: Option<&Path>, digest: &str) -> Role {
    let key = (dir.map(Path::to_path_buf), digest.to_string());
    let mut map = flights();
    if let Some(flight) = map.get(&key) {
        return Role::Follow(flight.clone());
    }
    let flight = Arc::new(Flight {
        key: key.clone(),
        slot: Mutex::new(None),
        done: Condvar::new(),
    });
    map.insert(key, flight.clone());
    Role::Lead(Lead {
        flight,
        landed: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_caller_follows_until_the_lead_lands_then_a_new_load_leads() {
        let dir = tempfile::tempdir().unwrap();
        let Role::Lead(lead) = lead_or_follow(Some(dir.path()), "d1") else {
            panic!("the first caller leads");
        };
        let Role::Follow(flight) = lead_or_follow(Some(dir.path()), "d1") else {
            panic!("the second caller follows");
        };
        // Another digest, or the same one in another cache, is its own flight.
        assert!(matches!(
            lead_or_follow(Some(dir.path()), "d2"),
            Role::Lead(_)
        ));
        assert!(matches!(lead_or_follow(None, "d1"), Role::Lead(_)));
        assert!(flight.wait_timeout(Duration::ZERO).is_none());
        // A lead dropped without landing hands its followers a failure.
        drop(lead);
        assert!(matches!(
            flight.wait_timeout(Duration::ZERO),
            Some(Err(Failure::Engine(_)))
        ));
        assert!(matches!(
            lead_or_follow(Some(dir.path()), "d1"),
            Role::Lead(_)
        ));
    }
}
