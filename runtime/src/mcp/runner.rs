//! Where the MCP server's runs run. By default a tool call runs in place,
//! on the blocking pool through [`crate::app`]; a front door that keeps
//! runs of its own (`lobster serve`: a registry, run slots, approval links
//! for humans, metrics) gives the server a [`Runner`] so MCP calls become
//! its runs like any other.

use crate::app::{self, Call, Reply, Settings};
use crate::kernel::{Cancel, LogSink};
use crate::resume::{Decider, ResumeTarget};
use std::future::Future;
use std::pin::Pin;

/// A reply on its way.
pub type ReplyFuture = Pin<Box<dyn Future<Output = Reply> + Send>>;

/// Runs the MCP server's calls for a front door.
pub trait Runner: Send + Sync {
    /// Run or resume `call`; the reply once it settles. `cancel` fires when
    /// the client cancels; step logs go to `log` when it is set. Refusals
    /// of the front door (too many runs, a gate decided already) are error
    /// replies, like the run's own.
    fn execute(&self, call: Call, cancel: Cancel, log: Option<LogSink>) -> ReplyFuture;

    /// Where a human can decide the gate of `target`, when the front door
    /// has such a page (an approval link); `None` otherwise.
    fn approval_link(&self, target: &ResumeTarget) -> Option<String> {
        let _ = target;
        None
    }

    /// Who decided when the human answered through the client's "input
    /// required" form, given the call's own `decider`. The default keeps it:
    /// in stdio `lobster mcp` the operator runs the process, so the name is
    /// the operator's (the call's `approver`, else their
    /// `LOBSTER_APPROVAL_APPROVED_BY`). A front door whose callers are not
    /// the operator (`lobster serve`) says [`Decider::Elicited`]: no name.
    fn elicited(&self, decider: Decider) -> Decider {
        decider
    }
}

/// The default: run in place through the app layer with `settings`.
pub(crate) async fn in_place(
    settings: std::sync::Arc<Settings>,
    call: Call,
    cancel: Cancel,
    log: Option<LogSink>,
) -> Reply {
    let opts = app::StartOptions {
        cancel,
        log,
        ..app::StartOptions::default()
    };
    app::start(settings, call, opts).finished().await.reply()
}
