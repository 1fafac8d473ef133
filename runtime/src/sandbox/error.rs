//! Typed errors of the sandbox. Every limit breach names the step, the limit
//! and its value; the host keeps running after any of them.

use std::path::PathBuf;

/// Which output stream of a step hit its byte cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// The guest's stdout (for commands: the JSON result).
    Stdout,
    /// The guest's stderr, including `host.log` lines.
    Stderr,
}

impl std::fmt::Display for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        })
    }
}

/// Everything that can go wrong when resolving, loading or running a step.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The step used up its fuel (deterministic CPU budget).
    #[error("step {} ran out of fuel (limit {limit})", bounded(.step, NAME_BYTES))]
    OutOfFuel {
        /// Step name.
        step: String,
        /// Fuel given to the step.
        limit: u64,
    },
    /// The step's wall-clock deadline passed.
    #[error("step {} timed out after {limit_ms}ms", bounded(.step, NAME_BYTES))]
    Timeout {
        /// Step name.
        step: String,
        /// The deadline, in milliseconds.
        limit_ms: u64,
    },
    /// The run was cancelled (signal) while the step ran.
    #[error("step {} was cancelled", bounded(.step, NAME_BYTES))]
    Cancelled {
        /// Step name.
        step: String,
    },
    /// The step tried to grow its linear memory past the cap.
    #[error("step {} exceeded its memory limit ({limit} bytes)", bounded(.step, NAME_BYTES))]
    MemoryLimit {
        /// Step name.
        step: String,
        /// The memory cap in bytes.
        limit: usize,
    },
    /// The step wrote more than the cap to stdout or stderr.
    #[error("step {} wrote more than {limit} bytes to {stream}", bounded(.step, NAME_BYTES))]
    OutputLimit {
        /// Step name.
        step: String,
        /// Which stream.
        stream: Stream,
        /// The cap in bytes.
        limit: usize,
    },
    /// The step returned a result larger than the cap.
    #[error("step {} returned more than {limit} bytes of items", bounded(.step, NAME_BYTES))]
    ResultTooLarge {
        /// Step name.
        step: String,
        /// The cap in bytes.
        limit: usize,
    },
    /// The guest trapped: a panic, `unreachable`, stack overflow, bad memory access.
    #[error("step {} crashed: {}", bounded(.step, NAME_BYTES), bounded(.reason, MESSAGE_BYTES))]
    Crashed {
        /// Step name.
        step: String,
        /// What happened, with the guest's stderr tail when there is one.
        reason: String,
    },
    /// A command component exited with a non-zero status.
    #[error("step {} exited with status {code}{}", bounded(.step, NAME_BYTES), stderr_suffix(.stderr))]
    Exit {
        /// Step name.
        step: String,
        /// Exit status.
        code: i32,
        /// Tail of the guest's stderr.
        stderr: String,
    },
    /// The step rejected its arguments (`invalid-args`).
    #[error("step {} rejected its arguments: {}", bounded(.step, NAME_BYTES), bounded(.message, MESSAGE_BYTES))]
    InvalidArgs {
        /// Step name.
        step: String,
        /// The step's message.
        message: String,
    },
    /// The step reported a failure (`failed`).
    #[error("step {} failed: {}", bounded(.step, NAME_BYTES), bounded(.message, MESSAGE_BYTES))]
    Failed {
        /// Step name.
        step: String,
        /// The step's message.
        message: String,
    },
    /// The step's output was not JSON.
    #[error("step {} produced invalid JSON: {}", bounded(.step, NAME_BYTES), bounded(.detail, MESSAGE_BYTES))]
    BadOutput {
        /// Step name.
        step: String,
        /// Parser message.
        detail: String,
    },
    /// A grant is malformed or points outside the working directory.
    #[error("{}", bounded(.0, MESSAGE_BYTES))]
    Grant(String),
    /// The step needs a capability the run did not grant.
    #[error(
        "step {} needs {}, which this run does not grant (add {})",
        bounded(.step, NAME_BYTES),
        bounded(.what, NAME_BYTES),
        bounded(.flag, NAME_BYTES)
    )]
    MissingCapability {
        /// Step name.
        step: String,
        /// e.g. `read access to /mail`.
        what: String,
        /// The CLI flag that would grant it.
        flag: String,
    },
    /// Compiling the component took longer than its own bound (the run's
    /// deadline does not count compile time). The compile still finishes
    /// in the background of this process and is cached when it does.
    #[error("{path}: compiling took longer than {limit_ms}ms (LOBSTER_COMPILE_TIMEOUT_MS); warm the cache with `lobster steps precompile` or raise the limit")]
    CompileTimeout {
        /// Component file.
        path: PathBuf,
        /// The bound, in milliseconds.
        limit_ms: u64,
    },
    /// The file is not a component Lobster can run.
    #[error("{}: {}", .path.display(), bounded(.detail, MESSAGE_BYTES))]
    BadComponent {
        /// Component file.
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },
    /// Reading a component, or the compiled-artefact cache, failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The run's admission (the operator's policy: signatures, registries)
    /// refused a component before it was compiled. Its message names the
    /// step or reference; its hint is the fix.
    #[error("{}; fix: {}", bounded(.message, MESSAGE_BYTES), bounded(.hint, MESSAGE_BYTES))]
    Refused {
        /// What was refused and why, naming the step.
        message: String,
        /// How to fix it.
        hint: String,
    },
    /// wasmtime could not be set up, or instantiation failed.
    #[error("wasm runtime: {}", bounded(.0, MESSAGE_BYTES))]
    Engine(String),
}

fn stderr_suffix(stderr: &str) -> String {
    if stderr.trim().is_empty() {
        String::new()
    } else {
        format!(": {}", bounded(stderr.trim(), MESSAGE_BYTES))
    }
}

/// Most bytes of a guest-chosen name or path (step name, directory, env
/// variable) an error message quotes.
pub const NAME_BYTES: usize = 200;
/// Most bytes of a guest-written message (a `failed` text, a trap reason)
/// an error message quotes.
pub const MESSAGE_BYTES: usize = 2000;

/// `text` cut to at most `max` bytes (at a character boundary), with a note
/// of how much was left out. Every message quoting guest-controlled text goes
/// through this: a guest must not be able to make the host's error (and the
/// tool envelope carrying it) arbitrarily large.
pub fn bounded(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    if text.len() <= max {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    std::borrow::Cow::Owned(format!(
        "{}… ({} more bytes)",
        &text[..end],
        text.len() - end
    ))
}

impl From<crate::kernel::GrantError> for SandboxError {
    fn from(e: crate::kernel::GrantError) -> Self {
        SandboxError::Grant(e.0)
    }
}

impl SandboxError {
    /// Whether this is a limit breach (fuel, deadline, memory, output).
    pub fn is_limit(&self) -> bool {
        matches!(
            self,
            SandboxError::OutOfFuel { .. }
                | SandboxError::Timeout { .. }
                | SandboxError::MemoryLimit { .. }
                | SandboxError::OutputLimit { .. }
                | SandboxError::ResultTooLarge { .. }
        )
    }
}

impl From<SandboxError> for crate::error::Error {
    fn from(e: SandboxError) -> Self {
        match e {
            // The fix is in the message too: a tool envelope carries no hint.
            e @ SandboxError::Refused { .. } => {
                crate::error::Error::runtime(e.to_string()).with_hint("nothing ran")
            }
            e => crate::error::Error::runtime(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guest_text_in_messages_is_bounded() {
        let e = SandboxError::Failed {
            step: "s".repeat(10_000),
            message: "é".repeat(1_000_000),
        };
        let text = e.to_string();
        assert!(
            text.len() < NAME_BYTES + MESSAGE_BYTES + 100,
            "{}",
            text.len()
        );
        assert!(text.contains("more bytes)"));
        assert_eq!(bounded("short", 10), "short");
        // Never cut inside a character.
        assert_eq!(bounded("éé", 3), "é… (2 more bytes)");
        let e = SandboxError::MissingCapability {
            step: "x".into(),
            what: format!("read access to /{}", "d".repeat(40 << 20)),
            flag: format!("--allow-read DIR:/{}", "d".repeat(40 << 20)),
        };
        assert!(e.to_string().len() < 1000);
    }
}
