//! Where guest log lines (`host.log`) and guest stderr go.

use std::sync::Arc;

/// Severity of a log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Very detailed.
    Trace,
    /// Debugging.
    Debug,
    /// Normal progress.
    Info,
    /// Something looks wrong.
    Warn,
    /// Something failed.
    Error,
}

impl Level {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Trace => "trace",
            Level::Debug => "debug",
            Level::Info => "info",
            Level::Warn => "warn",
            Level::Error => "error",
        }
    }
}

/// One line a step logged (or wrote to stderr, as `Info`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    /// Step name.
    pub step: String,
    /// Severity.
    pub level: Level,
    /// The text.
    pub message: String,
}

/// Receives step log lines as they are written.
pub type LogSink = Arc<dyn Fn(&LogLine) + Send + Sync>;

/// A sink that drops everything.
pub fn discard() -> LogSink {
    Arc::new(|_| {})
}

/// A sink that writes `[step] level: message` lines to the process's stderr.
pub fn to_stderr() -> LogSink {
    Arc::new(|line: &LogLine| {
        eprintln!("[{}] {}: {}", line.step, line.level.as_str(), line.message)
    })
}

/// A sink that collects lines in memory (tests, servers).
pub fn collect() -> (LogSink, Arc<std::sync::Mutex<Vec<LogLine>>>) {
    let lines = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink_lines = lines.clone();
    let sink: LogSink = Arc::new(move |line: &LogLine| {
        if let Ok(mut v) = sink_lines.lock() {
            v.push(line.clone());
        }
    });
    (sink, lines)
}
