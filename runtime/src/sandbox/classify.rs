//! Turn a failed guest call into the precise [`SandboxError`]: limit
//! breaches are recognised by the flags the host set when it refused
//! (memory, output, deadline), fuel by its trap code, the rest as crashes.

use super::error::{SandboxError, Stream};
use super::host::HostState;
use super::limits::EffectiveLimits;
use super::store::{STOP_CANCELLED, STOP_DEADLINE};
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
    let tail = state.stderr.tail(STDERR_TAIL);
    let reason = if tail.trim().is_empty() {
        what
    } else {
        format!("{what}; stderr: {}", tail.trim())
    };
    SandboxError::Crashed { step, reason }
}
