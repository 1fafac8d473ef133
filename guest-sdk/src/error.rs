//! The error a step returns from `run`.

use crate::bindings;
use std::fmt;

/// Why a step failed. The host reports it as
/// `step <name> rejected its arguments: …` or `step <name> failed: …`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The arguments were wrong; say how to fix them.
    InvalidArgs(String),
    /// The step could not do its work.
    Failed(String),
}

impl Error {
    /// An [`Error::InvalidArgs`] with `message`.
    pub fn invalid_args(message: impl Into<String>) -> Self {
        Error::InvalidArgs(message.into())
    }

    /// An [`Error::Failed`] with `message`.
    pub fn failed(message: impl Into<String>) -> Self {
        Error::Failed(message.into())
    }

    /// The message without its kind.
    pub fn message(&self) -> &str {
        match self {
            Error::InvalidArgs(m) | Error::Failed(m) => m,
        }
    }

    pub(crate) fn into_wit(self) -> bindings::StepError {
        match self {
            Error::InvalidArgs(m) => bindings::StepError::InvalidArgs(m),
            Error::Failed(m) => bindings::StepError::Failed(m),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidArgs(m) => write!(f, "invalid arguments: {m}"),
            Error::Failed(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Failed(e.to_string())
    }
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error::Failed(format!("invalid JSON: {e}"))
    }
}
