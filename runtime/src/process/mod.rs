//! Host child processes for `exec` (and later workflow `run:` steps).
//!
//! - [`spawn`]: [`Invocation`] runs one child to its end, in its own process
//!   group, with the run's cwd and environment, stdin fed from bytes, and
//!   stdout/stderr captured under `ctx.limits.max_output_bytes` each. The
//!   group is registered with `ctx.cancel`, so a timeout or a signal stops
//!   the whole tree.
//! - [`stream`]: [`Invocation::stream`] runs a child while its stdout is
//!   decoded into items ([`decode`]: JSON array elements or lines) on a
//!   reader thread; dropping the stream kills and reaps the child.
//! - [`shell`]: which program runs a shell line (`/bin/sh -c`, `LOBSTER_SHELL`).
//! - [`capture`]: the reader and writer threads behind a child's pipes.
//! - [`signals`]: turning SIGINT/SIGTERM/SIGHUP/SIGQUIT into a cancellation
//!   ([`install_signal_handlers`]) and signalling process groups.
//!
//! Unix only (process groups, signals).

pub mod capture;
pub mod decode;
pub mod shell;
pub mod signals;
pub mod spawn;
pub mod stream;

pub use capture::Stream;
pub use shell::{shell_command, ShellCommand};
pub use signals::{install_signal_handlers, kill_group};
pub use spawn::{Finished, Invocation, Target};
pub use stream::{Decoder, Ended, Next, OutputStream};

#[cfg(test)]
mod tests;
