//! Terminating signals to Lobster, and signals from Lobster to its children.
//!
//! The first SIGINT, SIGTERM, SIGHUP or SIGQUIT cancels the run
//! ([`Cancel::trigger`]): registered child process groups get SIGTERM, then
//! SIGKILL 250 ms later, stages stop, and the run ends with
//! `Received <SIG>` (exit 128 + n). Any further signal SIGKILLs every
//! registered group at once.

use crate::error::{Error, Result};
use crate::kernel::{Cancel, CancelReason};
use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
use signal_hook::iterator::Signals;

/// The signals that cancel a run, with the names used in `Received <name>`.
pub const TERMINATING: [(&str, i32); 4] = [
    ("SIGINT", SIGINT),
    ("SIGTERM", SIGTERM),
    ("SIGHUP", SIGHUP),
    ("SIGQUIT", SIGQUIT),
];

/// Send `signal` to process group `pgid`. Returns whether any process got it
/// (false once the group is gone). Never signals a group id ≤ 1.
pub fn kill_group(pgid: i32, signal: i32) -> bool {
    if pgid <= 1 {
        return false;
    }
    // SAFETY: kill(2) with a negative pid signals a process group; it touches
    // no memory of ours, and pgid > 1 rules out "every process" (-1).
    unsafe { libc::kill(-pgid, signal) == 0 }
}

/// Install handlers for SIGINT, SIGTERM, SIGHUP and SIGQUIT that cancel
/// `cancel`. Call once per process, before the run starts (the CLI does this;
/// embedders that handle signals themselves should call [`Cancel::trigger`]
/// instead). The handlers stay for the life of the process; a background
/// thread turns each signal into a cancellation.
pub fn install_signal_handlers(cancel: &Cancel) -> Result<()> {
    install(&TERMINATING, cancel)
}

/// [`install_signal_handlers`] for a chosen subset (tests use one signal).
pub(crate) fn install(signals: &[(&'static str, i32)], cancel: &Cancel) -> Result<()> {
    let numbers: Vec<i32> = signals.iter().map(|&(_, n)| n).collect();
    let mut incoming = Signals::new(&numbers)
        .map_err(|e| Error::runtime(format!("cannot install signal handlers: {e}")))?;
    let table: Vec<(&'static str, i32)> = signals.to_vec();
    let cancel = cancel.clone();
    std::thread::Builder::new()
        .name("lobster-signals".into())
        .spawn(move || {
            let mut seen = false;
            for number in incoming.forever() {
                if seen {
                    // A second signal: no more grace.
                    cancel.kill_groups(libc::SIGKILL);
                    continue;
                }
                seen = true;
                let name = table
                    .iter()
                    .find(|&&(_, n)| n == number)
                    .map_or("SIGTERM", |&(name, _)| name);
                cancel.trigger(CancelReason::Signal { name, number });
            }
        })
        .map_err(|e| Error::runtime(format!("cannot start signal thread: {e}")))?;
    Ok(())
}
