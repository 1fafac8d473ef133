//! One problem `lobster check` or `lobster bundle verify` found.

use serde::Serialize;
use std::path::PathBuf;

/// A problem in a file, printed as `path[:line]: message`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The file (or bundle directory).
    pub path: PathBuf,
    /// 1-based line, when the problem is in a text file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
    /// Which check found it (a SARIF rule id, e.g. `lobster/signature`).
    #[serde(skip)]
    pub rule: &'static str,
}

/// The rule of a finding nobody classified.
pub const DEFAULT_RULE: &str = "lobster/check";

impl Finding {
    /// A finding without a line.
    pub fn new(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        Finding {
            path: path.into(),
            line: None,
            message: message.into(),
            rule: DEFAULT_RULE,
        }
    }

    /// File it under `rule`.
    pub fn rule(mut self, rule: &'static str) -> Self {
        self.rule = rule;
        self
    }

    /// Point at `line`.
    pub fn at_line(mut self, line: Option<usize>) -> Self {
        self.line = line;
        self
    }
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(l) => write!(f, "{}:{l}: {}", self.path.display(), self.message),
            None => write!(f, "{}: {}", self.path.display(), self.message),
        }
    }
}
