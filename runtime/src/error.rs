//! Typed errors of the library. Every error knows its envelope `type`
//! (`parse_error` / `runtime_error`) and its exit code, and may point at the
//! offending span of the pipeline text with a hint for the fix.

use std::ops::Range;

/// A byte range in the text the user wrote (pipeline text), for caret diagnostics.
pub type Span = Range<usize>;

/// Where an error points and what might fix it.
#[derive(Debug, Clone, PartialEq)]
pub struct Location {
    pub span: Span,
    pub hint: Option<String>,
}

/// Everything that can go wrong inside Lobster.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// Bad input the caller can fix: DSL syntax, CLI arguments, tokens, schemas. Exit 2.
    #[error("{message}")]
    Parse {
        message: String,
        at: Option<Location>,
    },
    /// A failure while running (or a pipeline that cannot run). Exit 1.
    #[error("{message}")]
    Runtime {
        message: String,
        at: Option<Location>,
    },
    /// The run was stopped by a signal (`Received SIGTERM`). Exit 128 + signal number.
    #[error("Received {name}")]
    Signal { name: &'static str, number: i32 },
}

/// Short alias used throughout the library.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A parse error without a location.
    pub fn parse(message: impl Into<String>) -> Self {
        Error::Parse {
            message: message.into(),
            at: None,
        }
    }

    /// A parse error pointing at `span` of the pipeline text.
    pub fn parse_at(message: impl Into<String>, span: Span) -> Self {
        Error::Parse {
            message: message.into(),
            at: Some(Location { span, hint: None }),
        }
    }

    /// A runtime error.
    pub fn runtime(message: impl Into<String>) -> Self {
        Error::Runtime {
            message: message.into(),
            at: None,
        }
    }

    /// Attach (or replace) the location; keeps an existing hint.
    pub fn at(mut self, span: Span) -> Self {
        if let Error::Parse { at, .. } | Error::Runtime { at, .. } = &mut self {
            let hint = at.take().and_then(|l| l.hint);
            *at = Some(Location { span, hint });
        }
        self
    }

    /// Attach a hint (shown in human mode under the caret line).
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        if let Error::Parse { at, .. } | Error::Runtime { at, .. } = &mut self {
            match at {
                Some(loc) => loc.hint = Some(hint.into()),
                None => {
                    *at = Some(Location {
                        span: 0..0,
                        hint: Some(hint.into()),
                    })
                }
            }
        }
        self
    }

    /// The hint attached with [`Error::with_hint`], if any.
    pub fn hint(&self) -> Option<&str> {
        match self {
            Error::Parse { at, .. } | Error::Runtime { at, .. } => {
                at.as_ref().and_then(|l| l.hint.as_deref())
            }
            _ => None,
        }
    }

    /// The envelope's `error.type`.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Parse { .. } => "parse_error",
            Error::Runtime { .. } | Error::Signal { .. } => "runtime_error",
        }
    }

    /// The process exit code this error maps to.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Parse { .. } => 2,
            Error::Runtime { .. } => 1,
            Error::Signal { number, .. } => 128 + number,
        }
    }

    /// The location, if any.
    pub fn location(&self) -> Option<&Location> {
        match self {
            Error::Parse { at, .. } | Error::Runtime { at, .. } => at.as_ref(),
            Error::Signal { .. } => None,
        }
    }

    /// The span, when this error points into the pipeline text.
    pub fn span(&self) -> Option<&Span> {
        self.location().map(|l| &l.span).filter(|s| !s.is_empty())
    }

    /// Prefix the message; the span is dropped (it no longer matches the
    /// text), the hint kept.
    pub fn context(self, prefix: &str) -> Self {
        let hint = self.hint().map(str::to_string);
        let out = match self {
            Error::Parse { message, .. } => Error::parse(format!("{prefix}{message}")),
            Error::Runtime { message, .. } => Error::runtime(format!("{prefix}{message}")),
            other => return other,
        };
        // The fix still applies.
        match hint {
            Some(h) => out.with_hint(h),
            None => out,
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::runtime(e.to_string())
    }
}
