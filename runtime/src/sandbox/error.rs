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
    #[error("step {step} ran out of fuel (limit {limit})")]
    OutOfFuel {
        /// Step name.
        step: String,
        /// Fuel given to the step.
        limit: u64,
    },
    /// The step's wall-clock deadline passed.
    #[error("step {step} timed out after {limit_ms}ms")]
    Timeout {
        /// Step name.
        step: String,
        /// The deadline, in milliseconds.
        limit_ms: u64,
    },
    /// The run was cancelled (signal) while the step ran.
    #[error("step {step} was cancelled")]
    Cancelled {
        /// Step name.
        step: String,
    },
    /// The step tried to grow its linear memory past the cap.
    #[error("step {step} exceeded its memory limit ({limit} bytes)")]
    MemoryLimit {
        /// Step name.
        step: String,
        /// The memory cap in bytes.
        limit: usize,
    },
    /// The step wrote more than the cap to stdout or stderr.
    #[error("step {step} wrote more than {limit} bytes to {stream}")]
    OutputLimit {
        /// Step name.
        step: String,
        /// Which stream.
        stream: Stream,
        /// The cap in bytes.
        limit: usize,
    },
    /// The step returned a result larger than the cap.
    #[error("step {step} returned more than {limit} bytes of items")]
    ResultTooLarge {
        /// Step name.
        step: String,
        /// The cap in bytes.
        limit: usize,
    },
    /// The guest trapped: a panic, `unreachable`, stack overflow, bad memory access.
    #[error("step {step} crashed: {reason}")]
    Crashed {
        /// Step name.
        step: String,
        /// What happened, with the guest's stderr tail when there is one.
        reason: String,
    },
    /// A command component exited with a non-zero status.
    #[error("step {step} exited with status {code}{}", stderr_suffix(.stderr))]
    Exit {
        /// Step name.
        step: String,
        /// Exit status.
        code: i32,
        /// Tail of the guest's stderr.
        stderr: String,
    },
    /// The step rejected its arguments (`invalid-args`).
    #[error("step {step} rejected its arguments: {message}")]
    InvalidArgs {
        /// Step name.
        step: String,
        /// The step's message.
        message: String,
    },
    /// The step reported a failure (`failed`).
    #[error("step {step} failed: {message}")]
    Failed {
        /// Step name.
        step: String,
        /// The step's message.
        message: String,
    },
    /// The step's output was not JSON.
    #[error("step {step} produced invalid JSON: {detail}")]
    BadOutput {
        /// Step name.
        step: String,
        /// Parser message.
        detail: String,
    },
    /// A grant is malformed or points outside the working directory.
    #[error("{0}")]
    Grant(String),
    /// The step needs a capability the run did not grant.
    #[error("step {step} needs {what}, which this run does not grant (add {flag})")]
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
    #[error("{path}: {detail}")]
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
    /// wasmtime could not be set up, or instantiation failed.
    #[error("wasm runtime: {0}")]
    Engine(String),
}

fn stderr_suffix(stderr: &str) -> String {
    if stderr.trim().is_empty() {
        String::new()
    } else {
        format!(": {}", stderr.trim())
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
        crate::error::Error::runtime(e.to_string())
    }
}
