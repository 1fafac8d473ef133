//! Host child processes for `exec` (and later workflow `run:` steps).
//!
//! - [`spawn`]: [`Invocation`] runs one child to its end, in its own process
//!   group, with the run's cwd and environment, stdin fed from bytes, and
//!   stdout/stderr captured under `ctx.limits.max_output_bytes` each. The
//!   group is registered with `ctx.cancel`, so a timeout or a signal stops
//!   the whole tree.
//! - [`shell`]: which program runs a shell line (`/bin/sh -c`, `LOBSTER_SHELL`).
//! - [`capture`]: the reader and writer threads behind a child's pipes.
//! - [`signals`]: turning SIGINT/SIGTERM/SIGHUP/SIGQUIT into a cancellation
//!   ([`install_signal_handlers`]) and signalling process groups.
//!
//! Unix only (process groups, signals).

pub mod capture;
pub mod shell;
pub mod signals;
pub mod spawn;

pub use capture::Stream;
pub use shell::{shell_command, ShellCommand};
pub use signals::{install_signal_handlers, kill_group};
pub use spawn::{Finished, Invocation, Target};

#[cfg(test)]
mod tests;
