//! What a tool door answers: the envelope and the exit code the CLI would
//! have ended with.

use crate::envelope::{error_envelope, error_envelope_of};
use crate::error::{Error, Result};
use crate::resume::Paused;
use crate::state::RunStatus;
use crate::value::{to_js_json_pretty, Item};

/// The answer to one call: the tool envelope and the exit code the CLI
/// would have ended with (0 ok/paused/cancelled, 1 runtime error, 2 parse
/// error, 128+n for a signal).
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub envelope: Item,
    pub exit_code: i32,
}

impl Reply {
    /// Whether the envelope is a success (`ok: true`, any status).
    pub fn ok(&self) -> bool {
        self.envelope.get("ok") == Some(&Item::Bool(true))
    }

    /// `status` of a successful envelope.
    pub fn status(&self) -> Option<&str> {
        self.envelope.get("status").and_then(Item::as_str)
    }

    /// The status of the run that settled with this reply, as its record
    /// keeps it: paused at a gate, cancelled, ok, or failed. A run that
    /// failed after the server's shutdown cancelled it (`by_shutdown`) is
    /// cancelled, not failed.
    pub fn run_status(&self, by_shutdown: bool) -> RunStatus {
        if by_shutdown && !self.ok() {
            return RunStatus::Cancelled;
        }
        match (self.ok(), self.status()) {
            (true, Some("needs_approval")) => RunStatus::NeedsApproval,
            (true, Some("needs_input")) => RunStatus::NeedsInput,
            (true, Some("cancelled")) => RunStatus::Cancelled,
            (true, _) => RunStatus::Ok,
            (false, _) => RunStatus::Failed,
        }
    }

    /// An error reply.
    pub fn error(e: &Error) -> Reply {
        Reply {
            envelope: error_envelope(e),
            exit_code: e.exit_code(),
        }
    }

    /// The reply for a run's result, with the output cap applied to the
    /// envelope's printed size exactly as `--mode tool` applies it.
    pub fn from_result(result: &Result<Paused>, max_bytes: Option<usize>) -> Reply {
        let paused = match result {
            Ok(p) => p,
            Err(e) => return Reply::error(e),
        };
        let envelope = paused.envelope.to_json();
        if let Some(cap) = max_bytes {
            // The CLI prints the pretty JSON plus a newline.
            if to_js_json_pretty(&envelope).len() + 1 > cap {
                return Reply {
                    envelope: error_envelope_of(
                        "runtime_error",
                        "lobster runtime result exceeded maxStdoutBytes",
                    ),
                    exit_code: 1,
                };
            }
        }
        Reply {
            envelope,
            exit_code: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_cap_applies_to_the_envelope() {
        let paused = Paused {
            envelope: crate::envelope::Envelope::ok(vec![Item::String("x".repeat(2000))]),
            rendered: None,
            output_digest: None,
        };
        let r = Reply::from_result(&Ok(paused.clone()), Some(1024));
        assert!(!r.ok());
        assert_eq!(
            r.envelope.pointer("/error/message").and_then(Item::as_str),
            Some("lobster runtime result exceeded maxStdoutBytes")
        );
        let r = Reply::from_result(&Ok(paused), None);
        assert_eq!(r.status(), Some("ok"));
    }

    #[test]
    fn a_settled_run_s_status_is_read_from_its_reply() {
        let of = |envelope: Item| Reply {
            envelope,
            exit_code: 0,
        };
        let ok = |status: &str| of(serde_json::json!({"ok": true, "status": status}));
        let failed = Reply::error(&Error::runtime("boom"));
        for (reply, shut, want) in [
            (ok("needs_approval"), false, RunStatus::NeedsApproval),
            (ok("needs_input"), false, RunStatus::NeedsInput),
            (ok("cancelled"), false, RunStatus::Cancelled),
            (ok("ok"), false, RunStatus::Ok),
            // A run the shutdown cancelled that ended well still counts.
            (ok("ok"), true, RunStatus::Ok),
            (failed.clone(), false, RunStatus::Failed),
            (failed, true, RunStatus::Cancelled),
        ] {
            assert_eq!(reply.run_status(shut), want, "{}", reply.envelope);
        }
    }
}
