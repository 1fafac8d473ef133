//! Host child processes for `exec` (and later workflow `run:` steps).

use crate::executor::{Cancel, CancelReason};

/// Turn SIGINT/SIGTERM/SIGHUP/SIGQUIT into a cancellation of the run.
pub fn install_signal_handlers(cancel: &Cancel) {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP, SIGQUIT])
    else {
        return;
    };
    let cancel = cancel.clone();
    std::thread::spawn(move || {
        for sig in signals.forever() {
            let name = match sig {
                SIGINT => "SIGINT",
                SIGTERM => "SIGTERM",
                SIGHUP => "SIGHUP",
                _ => "SIGQUIT",
            };
            if cancel.is_cancelled() {
                cancel.kill_groups(libc::SIGKILL);
            }
            cancel.trigger(CancelReason::Signal { name, number: sig });
        }
    });
}
