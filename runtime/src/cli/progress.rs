//! The one progress line a slow compile gets in human mode on a terminal:
//! `lobster: compiling NAME (18.0 MB), cached for next time… done in 16.2s`.
//!
//! The sandbox reports compiles through [`crate::sandbox::compile`]'s
//! observer; this room prints them (nothing below `cli/` prints). Tool mode,
//! and human mode without a terminal on stderr, stay silent.

use crate::kernel::Mode;
use crate::sandbox::compile::{set_observer, CompileEvent};
use std::io::Write;
use std::time::Duration;

/// Compiles shorter than this print nothing.
pub const NOTICE_AFTER: Duration = Duration::from_secs(1);

/// Install the observer when `mode` is human and stderr is a terminal.
/// `LOBSTER_PROGRESS_AFTER_MS` replaces the one-second threshold (tests).
pub fn install(mode: Mode) {
    let after = std::env::var("LOBSTER_PROGRESS_AFTER_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(NOTICE_AFTER, std::time::Duration::from_millis);
    // SAFETY: isatty only inspects file descriptor 2.
    if mode == Mode::Human && unsafe { libc::isatty(2) } == 1 {
        set_observer(after, |event| {
            let _ = std::io::stderr().write_all(line(event).as_bytes());
        });
    }
}

/// The text for one event (the start of the line, then its end).
pub fn line(event: &CompileEvent) -> String {
    match event {
        CompileEvent::Slow { source, bytes } => format!(
            "lobster: compiling {} ({}), cached for next time…",
            source
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| source.display().to_string()),
            size(*bytes as u64)
        ),
        CompileEvent::Done {
            elapsed, cached, ..
        } => format!(
            " done in {:.1}s{}\n",
            elapsed.as_secs_f64(),
            if *cached {
                ""
            } else {
                " (not cached: the cache directory is not writable)"
            }
        ),
    }
}

/// `18.0 MB`, `1.6 MB`, `340 KB`.
pub fn size(bytes: u64) -> String {
    if bytes >= 1_000_000 {
        format!("{:.1} MB", bytes as f64 / 1e6)
    } else {
        format!("{} KB", bytes.div_ceil(1000))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn one_line_per_slow_compile() {
        let slow = CompileEvent::Slow {
            source: PathBuf::from("/s/greet.wasm"),
            bytes: 18_857_828,
        };
        let done = CompileEvent::Done {
            source: PathBuf::from("/s/greet.wasm"),
            elapsed: Duration::from_millis(16_240),
            cached: true,
        };
        assert_eq!(
            format!("{}{}", line(&slow), line(&done)),
            "lobster: compiling greet.wasm (18.9 MB), cached for next time… done in 16.2s\n"
        );
        assert_eq!(size(340_001), "341 KB");
    }
}
