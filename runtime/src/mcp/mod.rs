//! `lobster mcp`: Lobster as a Model Context Protocol server.
//!
//! [`LobsterMcp`] is an rmcp [`ServerHandler`](rmcp::ServerHandler) over the
//! [`crate::app`] layer, independent of the transport: `lobster mcp` serves
//! it on stdio ([`serve_stdio`]); an HTTP front door can mount the same
//! handler with rmcp's streamable-HTTP service: build one `LobsterMcp` at
//! start-up and give each session `server.for_session()` (the same
//! read-only settings and tools; its own `logging/setLevel`). Runs keep no
//! state in the handler: paused runs, tokens and approval answers live in
//! the state directory, so any session (or process) can resume any run.
//!
//! - [`tools`]: the tool list (`lobster_run`, `lobster_resume`,
//!   `lobster_workflows`, one tool per catalog workflow) and how an envelope
//!   becomes a tool result (failures are results with `isError: true`, never
//!   protocol errors).
//! - [`args`]: the built-in tools' arguments as typed structs (tied to the
//!   input schemas by a test), converted into [`crate::app`] requests.
//! - [`handler`]: dispatch to the [`Runner`] (by default
//!   `spawn_blocking` calls of the app layer, [`runner`]), cancellation (`notifications/cancelled` → the run's
//!   [`Cancel`](crate::kernel::Cancel) as SIGINT).
//! - [`human`]: approvals by the human (`--approvals human`, see
//!   [`ApprovalMode`]): the elicitation form, its answer, the refusals.
//! - [`logs`]: step logs as `notifications/message`.
//!
//! Nothing here prints: stdout is the protocol; diagnostics go to stderr
//! from `cli/mcp.rs` only.

pub mod args;
pub mod handler;
pub mod human;
pub mod logs;
pub mod runner;
pub mod tools;

pub use handler::LobsterMcp;
pub use runner::Runner;

/// Who may say yes at an approval gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ApprovalMode {
    /// The calling agent relays the human's decision (`approve: true|false`
    /// in `lobster_resume`), as with `lobster call`. The server cannot tell
    /// whether a human was asked.
    #[default]
    Agent,
    /// `approve: true` from the agent is not enough: the server asks the
    /// human through the client (an MCP 2026-07-28 "input required" result
    /// with an elicitation form) and resumes with their answer. Clients that
    /// cannot do this get a refusal; rejecting and cancelling stay open.
    Human,
    /// `approve: true` is refused with a link a human decides on elsewhere
    /// (`lobster serve` tenants whose client's answers do not count as a
    /// human's: `elicitation_is_human = false`); no "input required" is
    /// asked, and a retried call's answer is not accepted.
    Link,
}

/// Serve `server` on stdin/stdout until the client closes the stream.
pub fn serve_stdio(server: LobsterMcp) -> crate::Result<()> {
    use rmcp::ServiceExt;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| crate::Error::runtime(format!("cannot start the MCP runtime: {e}")))?;
    runtime.block_on(async move {
        let service = server
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| crate::Error::runtime(format!("MCP session failed to start: {e}")))?;
        service
            .waiting()
            .await
            .map_err(|e| crate::Error::runtime(format!("MCP session ended abnormally: {e}")))?;
        Ok(())
    })
}
