//! Log lines through the host (`host.log`). The host tags each line with the
//! step's name; lines count towards the step's stderr limit.

use crate::bindings::lobster::step::host;
use crate::bindings::lobster::step::types::LogLevel;

fn emit(level: LogLevel, message: &str) {
    host::log(level, message);
}

/// Log at trace level.
pub fn trace(message: &str) {
    emit(LogLevel::Trace, message)
}

/// Log at debug level.
pub fn debug(message: &str) {
    emit(LogLevel::Debug, message)
}

/// Log at info level.
pub fn info(message: &str) {
    emit(LogLevel::Info, message)
}

/// Log at warn level.
pub fn warn(message: &str) {
    emit(LogLevel::Warn, message)
}

/// Log at error level.
pub fn error(message: &str) {
    emit(LogLevel::Error, message)
}
