//! Compiling a component: off the run's clock, within its own bound, and
//! observable.
//!
//! A Python step is ~18 MB and Cranelift compiles it for ~16 s here (once:
//! the artefact is cached). That is not the step's work, so every run
//! deadline is paused while a run waits for a compile
//! ([`crate::kernel::pause_deadlines`]) and the wait is bounded by
//! [`compile_limit`] instead. The compile runs on its own thread, which
//! stores the artefact in the cache as soon as it is done, before anyone
//! is told, so a finished compile is never thrown away, even when the
//! waiting run gave up. Runs that need the same component at the same
//! time wait for one compile ([`super::flight`]). [`wait_idle`] lets the CLI give a nearly finished
//! compile a moment before the process exits.
//!
//! Nothing here prints: the CLI installs an observer ([`set_observer`])
//! that hears about compiles slower than its threshold.

use super::error::SandboxError;
use super::flight::{Flight, Landed};
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Default bound of one compile (`LOBSTER_COMPILE_TIMEOUT_MS` overrides).
pub const DEFAULT_COMPILE_LIMIT: Duration = Duration::from_secs(300);

/// What an observer hears.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompileEvent {
    /// A compile has run longer than the observer's threshold.
    Slow {
        /// The component file.
        source: PathBuf,
        /// Its size in bytes.
        bytes: usize,
    },
    /// A compile the observer was told was slow has ended.
    Done {
        /// The component file.
        source: PathBuf,
        /// How long it took.
        elapsed: Duration,
        /// Whether the artefact is now in the cache.
        cached: bool,
    },
}

type Observer = Box<dyn Fn(&CompileEvent) + Send + Sync>;

struct Registered {
    after: Duration,
    observer: Observer,
}

fn observer() -> &'static Mutex<Option<Registered>> {
    static OBSERVER: OnceLock<Mutex<Option<Registered>>> = OnceLock::new();
    OBSERVER.get_or_init(Default::default)
}

/// Tell `observer` about every compile that takes longer than `after`
/// (replacing any earlier observer).
pub fn set_observer(after: Duration, observer: impl Fn(&CompileEvent) + Send + Sync + 'static) {
    if let Ok(mut slot) = self::observer().lock() {
        *slot = Some(Registered {
            after,
            observer: Box::new(observer),
        });
    }
}

fn notify(event: &CompileEvent) {
    if let Ok(slot) = observer().lock() {
        if let Some(r) = slot.as_ref() {
            (r.observer)(event);
        }
    }
}

fn threshold() -> Option<Duration> {
    observer().lock().ok()?.as_ref().map(|r| r.after)
}

/// The bound of one compile: `LOBSTER_COMPILE_TIMEOUT_MS`, else
/// [`DEFAULT_COMPILE_LIMIT`].
pub fn compile_limit() -> Result<Duration, SandboxError> {
    match std::env::var("LOBSTER_COMPILE_TIMEOUT_MS") {
        Err(_) => Ok(DEFAULT_COMPILE_LIMIT),
        Ok(v) if v.is_empty() => Ok(DEFAULT_COMPILE_LIMIT),
        Ok(v) => v
            .parse::<u64>()
            .ok()
            .filter(|ms| *ms > 0)
            .map(Duration::from_millis)
            .ok_or_else(|| {
                SandboxError::Engine(format!(
                    "LOBSTER_COMPILE_TIMEOUT_MS must be a positive number of milliseconds, got {v:?}"
                ))
            }),
    }
}

fn in_flight() -> &'static (Mutex<usize>, Condvar) {
    static IN_FLIGHT: OnceLock<(Mutex<usize>, Condvar)> = OnceLock::new();
    IN_FLIGHT.get_or_init(Default::default)
}

struct InFlight;

impl InFlight {
    fn start() -> InFlight {
        let (count, _) = in_flight();
        *count.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        InFlight
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let (count, cv) = in_flight();
        let mut n = count.lock().unwrap_or_else(|e| e.into_inner());
        *n = n.saturating_sub(1);
        cv.notify_all();
    }
}

/// Wait up to `grace` for compiles still running (they store their
/// artefact when done); returns whether none is left.
pub fn wait_idle(grace: Duration) -> bool {
    let (count, cv) = in_flight();
    let n = count.lock().unwrap_or_else(|e| e.into_inner());
    let (n, _) = cv
        .wait_timeout_while(n, grace, |n| *n > 0)
        .unwrap_or_else(|e| e.into_inner());
    *n == 0
}

/// Run `work` (compile, store, deserialise, land the flight) on its own
/// thread, counted by [`wait_idle`]. The thread carries on when its waiters
/// give up, so a finished compile is stored and handed to whoever still
/// waits ([`super::flight`]). When no thread can be started, `work` is
/// dropped unrun (its lead lands a failure) and the error is returned.
pub(crate) fn spawn<F>(work: F) -> Result<(), SandboxError>
where
    F: FnOnce() + Send + 'static,
{
    let guard = InFlight::start();
    std::thread::Builder::new()
        .name("lobster-compile".into())
        .spawn(move || {
            let _guard = guard;
            work();
        })
        .map(drop)
        .map_err(|e| SandboxError::Engine(format!("cannot start a compile thread: {e}")))
}

/// Wait for `flight` (the load of the component in `source`, `bytes` long)
/// with the run deadlines paused, at most `limit`; past the limit the run
/// gets [`SandboxError::CompileTimeout`] while the load carries on.
/// Observers hear about waits longer than their threshold.
pub(crate) fn wait(
    flight: &Flight,
    source: &Path,
    bytes: usize,
    limit: Duration,
) -> Result<Landed, SandboxError> {
    let _pause = crate::kernel::pause_deadlines();
    let started = Instant::now();
    let mut slow = false;
    let result = loop {
        let waited = started.elapsed();
        let notice = threshold().filter(|_| !slow);
        let until_notice = notice.map(|t| t.saturating_sub(waited));
        let until_limit = limit.saturating_sub(waited);
        let wait = until_notice.map_or(until_limit, |n| n.min(until_limit));
        if let Some(r) = flight.wait_timeout(wait) {
            break r;
        }
        if started.elapsed() >= limit {
            return Err(SandboxError::CompileTimeout {
                path: source.to_path_buf(),
                limit_ms: limit.as_millis() as u64,
            });
        }
        if notice.is_some() {
            slow = true;
            notify(&CompileEvent::Slow {
                source: source.to_path_buf(),
                bytes,
            });
        }
    };
    if slow {
        notify(&CompileEvent::Done {
            source: source.to_path_buf(),
            elapsed: started.elapsed(),
            cached: result.as_ref().is_ok_and(|l| l.stored),
        });
    }
    result.map_err(|f| f.into_error(source))
}
