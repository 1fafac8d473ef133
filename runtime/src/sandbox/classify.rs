//! Turn a failed guest call into the precise [`SandboxError`]: limit
//! breaches are recognised by the flags the host set when it refused
//! (memory, output, deadline), fuel by its trap code, the rest as crashes.

use super::error::{SandboxError, Stream};
use super::host::HostState;
use super::store::{STOP_CANCELLED, STOP_DEADLINE};
use crate::kernel::EffectiveLimits;
use wasmtime::Trap;

/// How much of the guest's stderr an error message quotes.
const STDERR_TAIL: usize = 600;

/// The error for a call that returned `err`.
pub(crate) fn classify(
    err: wasmtime::Error,
    step: &str,
    state: &HostState,
    stop: u8,
    limits: &EffectiveLimits,
) -> SandboxError {
    let step = step.to_string();
    if state.stdout.overflowed() {
        return SandboxError::OutputLimit {
            step,
            stream: Stream::Stdout,
            limit: limits.output_bytes,
        };
    }
    if state.stderr.overflowed() {
        return SandboxError::OutputLimit {
            step,
            stream: Stream::Stderr,
            limit: limits.output_bytes,
        };
    }
    if state.limiter.breached {
        return SandboxError::MemoryLimit {
            step,
            limit: limits.memory_bytes,
        };
    }
    if let Some(exit) = err.downcast_ref::<wasmtime_wasi::I32Exit>() {
        return SandboxError::Exit {
            step,
            code: exit.0,
            stderr: state.stderr.tail(STDERR_TAIL),
        };
    }
    let trap = err.downcast_ref::<Trap>().copied();
    if trap == Some(Trap::OutOfFuel) {
        return SandboxError::OutOfFuel {
            step,
            limit: limits.fuel,
        };
    }
    match stop {
        STOP_DEADLINE => {
            return SandboxError::Timeout {
                step,
                limit_ms: limits.timeout.map_or(0, |t| t.as_millis() as u64),
            }
        }
        STOP_CANCELLED => return SandboxError::Cancelled { step },
        _ => {}
    }
    let what = match trap {
        Some(Trap::StackOverflow) | Some(Trap::MemoryOutOfBounds) => {
            "stack overflow or out-of-bounds memory access".to_string()
        }
        Some(Trap::UnreachableCodeReached) => "panic or unreachable code".to_string(),
        Some(other) => format!("wasm trap: {other}"),
        None => format!("{:#}", err),
    };
    let tail = last_lines(&state.stderr.tail(STDERR_TAIL), STDERR_LINES);
    let reason = if tail.is_empty() {
        what
    } else {
        format!("{what}; stderr: {tail}")
    };
    SandboxError::Crashed { step, reason }
}

/// How many of the guest's last stderr lines a crash quotes.
const STDERR_LINES: usize = 8;

/// The last `n` whole lines of `text` (a first line cut by the byte tail is
/// dropped when whole lines follow), trimmed: a Python traceback ends with
/// the exception, which is what the reader needs.
fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    let mut from = lines.len().saturating_sub(n);
    if from == 0 && lines.len() > 1 && text.len() >= STDERR_TAIL {
        from = 1;
    }
    lines[from..].join("\n").trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crash_quotes_the_last_whole_lines_of_stderr() {
        let text: String = (1..=20).map(|i| format!("line {i}\n")).collect();
        assert_eq!(last_lines(&text, 3), "line 18\nline 19\nline 20");
        assert_eq!(last_lines("only\n", 3), "only");
        let cut = format!(
            "{}tail of a long line\nKeyError: 'x'\n",
            "x".repeat(STDERR_TAIL)
        );
        assert_eq!(last_lines(&cut, 8), "KeyError: 'x'");
        assert_eq!(last_lines("  \n", 8), "");
    }
}
