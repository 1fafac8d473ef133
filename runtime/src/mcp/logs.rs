//! A call's step logs as MCP `notifications/message` at the level the
//! client asked for.

// MCP logging (`logging/setLevel`, `notifications/message`) is deprecated by
// SEP-2577 but still what clients subscribe with; step logs use it.
#![allow(deprecated)]

use crate::kernel::{Level, LogLine, LogSink};
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::service::RequestContext;
use rmcp::RoleServer;
use serde_json::json;
use std::sync::Arc;

/// Where a call's step logs go: `notifications/message` when the client
/// asked for logs (in the request's `_meta`, else the session's level) (else `None`: the process's stderr), and the task that
/// forwards them.
pub fn sink(
    session: Option<LoggingLevel>,
    context: &RequestContext<RoleServer>,
) -> Option<(LogSink, tokio::task::JoinHandle<()>)> {
    let min = context.meta.log_level().or(session)?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<LogLine>();
    let peer = context.peer.clone();
    let task = tokio::spawn(async move {
        while let Some(line) = rx.recv().await {
            let param =
                LoggingMessageNotificationParam::new(mcp_level(line.level), json!(line.message))
                    .with_logger(line.step);
            if peer.notify_logging_message(param).await.is_err() {
                break;
            }
        }
    });
    let sink: LogSink = Arc::new(move |line: &LogLine| {
        if rank(mcp_level(line.level)) >= rank(min) {
            let _ = tx.send(line.clone());
        }
    });
    Some((sink, task))
}

#[allow(deprecated)]
fn mcp_level(level: Level) -> LoggingLevel {
    match level {
        Level::Trace | Level::Debug => LoggingLevel::Debug,
        Level::Info => LoggingLevel::Info,
        Level::Warn => LoggingLevel::Warning,
        Level::Error => LoggingLevel::Error,
    }
}

#[allow(deprecated)]
fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}
