//! Which step is executing guest code right now, and in which export
//! (`describe` or `run`), so that an error raised elsewhere — the run's
//! deadline firing in the CLI's watchdog — can name it.
//!
//! Process-wide: one process runs one run; parallel workflow branches may
//! have several steps in flight, and all are named.

use std::sync::Mutex;

/// The export a step was executing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// `describe`, at resolution time.
    Describe,
    /// `run` (or a command component's `wasi:cli/run`).
    Run,
}

impl Phase {
    /// `describe` or `run`.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Describe => "describe",
            Phase::Run => "run",
        }
    }
}

static RUNNING: Mutex<Vec<(u64, String, Phase)>> = Mutex::new(Vec::new());
static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Registered while alive; see [`enter`].
#[must_use]
pub struct Activity(u64);

/// Record that `step` is executing `phase` until the returned guard drops.
pub fn enter(step: &str, phase: Phase) -> Activity {
    let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut running = RUNNING.lock().unwrap_or_else(|p| p.into_inner());
    running.push((id, step.to_string(), phase));
    Activity(id)
}

impl Drop for Activity {
    fn drop(&mut self) {
        let mut running = RUNNING.lock().unwrap_or_else(|p| p.into_inner());
        running.retain(|(id, ..)| *id != self.0);
    }
}

/// `step X was in run` (several joined with `and`), or `None` when no guest
/// code is executing.
pub fn running() -> Option<String> {
    let running = RUNNING.lock().unwrap_or_else(|p| p.into_inner());
    if running.is_empty() {
        return None;
    }
    let named: Vec<String> = running
        .iter()
        .map(|(_, step, phase)| in_phase(step, *phase))
        .collect();
    Some(named.join(" and "))
}

/// `step X was in describe|run` (the step name is bounded: it may come from a
/// guest's own `describe`).
pub fn in_phase(step: &str, phase: Phase) -> String {
    format!(
        "step {} was in {}",
        crate::sandbox::error::bounded(step, 200),
        phase.as_str()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guards_register_and_unregister() {
        let a = enter("activity-test-a", Phase::Describe);
        let text = running().unwrap();
        assert!(
            text.contains("step activity-test-a was in describe"),
            "{text}"
        );
        drop(a);
        assert!(!running().unwrap_or_default().contains("activity-test-a"));
    }
}
