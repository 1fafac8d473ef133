//! The records `lobster serve` keeps of its runs, typed: a run's record
//! ([`RunRecord`], under [`RunRecord::key`] in its tenant's store or a line
//! of the run log), the entry that lists a run paused at a gate
//! ([`PendingEntry`], under [`PendingEntry::key`]) and a node's heartbeat
//! ([`NodeBeat`], under [`NodeBeat::key`] in the root store).
//!
//! The JSON is the wire format between nodes of one cluster, which may run
//! different versions during a rolling upgrade, so it is kept exactly:
//! the same field names in the same order, absent fields omitted as before,
//! the same status strings (`runtime/tests/fixtures/run-records/` holds
//! records written by older code; tests parse and re-serialise every one).
//! A field this version does not know (written by a newer node) is kept in
//! `extra` and written back after it, so a read-modify-write here loses
//! nothing; a status it does not know is kept as [`RunStatus::Other`].

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;

/// Where a run stands. Serialised as the status strings serve has always
/// written (`"running"`, `"needs_approval"`, …).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum RunStatus {
    /// Going on (or queued, or left by a process that ended: see
    /// `interrupted`).
    Running,
    /// Paused at an approval gate.
    NeedsApproval,
    /// Paused at an input gate.
    NeedsInput,
    /// Ran to its end.
    Ok,
    /// Ended with an error envelope.
    Failed,
    /// Cancelled (at its gate, or by the server's shutdown).
    Cancelled,
    /// Its process ended while it was going on.
    Interrupted,
    /// A status this version does not know (a newer node wrote it), kept as
    /// written.
    Other(String),
}

impl RunStatus {
    /// The status string.
    pub fn as_str(&self) -> &str {
        match self {
            RunStatus::Running => "running",
            RunStatus::NeedsApproval => "needs_approval",
            RunStatus::NeedsInput => "needs_input",
            RunStatus::Ok => "ok",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Other(s) => s,
        }
    }

    /// Whether the run is paused at a gate (approval or input).
    pub fn is_paused(&self) -> bool {
        matches!(self, RunStatus::NeedsApproval | RunStatus::NeedsInput)
    }
}

impl From<String> for RunStatus {
    fn from(s: String) -> RunStatus {
        match s.as_str() {
            "running" => RunStatus::Running,
            "needs_approval" => RunStatus::NeedsApproval,
            "needs_input" => RunStatus::NeedsInput,
            "ok" => RunStatus::Ok,
            "failed" => RunStatus::Failed,
            "cancelled" => RunStatus::Cancelled,
            "interrupted" => RunStatus::Interrupted,
            _ => RunStatus::Other(s),
        }
    }
}

impl From<&str> for RunStatus {
    fn from(s: &str) -> RunStatus {
        RunStatus::from(s.to_string())
    }
}

impl From<RunStatus> for String {
    fn from(s: RunStatus) -> String {
        match s {
            RunStatus::Other(s) => s,
            known => known.as_str().to_string(),
        }
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The record of one serve run. Field order is the order serve has always
/// written them in (the store keeps a JSON object's order).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunRecord {
    /// 32 lowercase hex, beginning with the second it was made.
    pub run_id: String,
    /// The tenant the run belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The node that runs (ran) it; none while it waits in the queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// Where it stands.
    pub status: RunStatus,
    /// `true` while it waits in the PostgreSQL queue for a free node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queued: Option<bool>,
    /// When the run was made (ISO 8601).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    /// When the record last changed (ISO 8601).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
    /// A resume going on: the paused record whose gate it decided, so a
    /// gate whose resumer died can be opened again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<Box<RunRecord>>,
    /// A resume: who decided its gate (the door's authenticated decider).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    /// A settled run: its envelope (the protocol's reply, kept as JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub envelope: Option<Value>,
    /// Why it was interrupted, cancelled by the shutdown, or reopened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Fields this version does not know (a newer node wrote them): written
    /// back as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl RunRecord {
    /// A fresh record of `run_id` with `status`; every other field empty.
    pub fn new(run_id: impl Into<String>, status: RunStatus) -> RunRecord {
        RunRecord {
            run_id: run_id.into(),
            tenant: None,
            node: None,
            status,
            queued: None,
            created_at: None,
            updated_at: None,
            gate: None,
            decided_by: None,
            envelope: None,
            reason: None,
            extra: Map::new(),
        }
    }

    /// The store key of run `run_id`'s record.
    pub fn key(run_id: &str) -> String {
        format!("serve_run_{run_id}")
    }

    /// Read a record from its stored JSON (any record an older or newer
    /// node wrote); an error names the run id when it has one.
    pub fn from_value(value: Value) -> Result<RunRecord> {
        let id = value
            .get("runId")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string();
        serde_json::from_value(value)
            .map_err(|e| Error::runtime(format!("run record {id} cannot be read: {e}")))
    }

    /// The record as stored JSON.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("a run record is plain JSON")
    }

    /// The approval gate its envelope asks to decide (`requiresApproval`),
    /// or null.
    fn approval_gate(&self) -> &Value {
        self.envelope_field("requiresApproval")
    }

    /// The approval gate its envelope asks to decide, typed (empty when it
    /// asks none, or asks in a shape this version does not read).
    pub fn asked_approval(&self) -> AskedApproval {
        AskedApproval::deserialize(self.approval_gate()).unwrap_or_default()
    }

    /// How a settled run ended, as its envelope says it for a person: its
    /// status (`ok`, `needs_approval`, `cancelled`, …), or `failed:` and
    /// the error's message; `None` without an envelope.
    pub fn outcome(&self) -> Option<String> {
        let envelope = self.envelope.as_ref()?;
        if let Some(status) = envelope["status"].as_str() {
            return Some(status.to_string());
        }
        (envelope["ok"] == false).then(|| {
            let message = error_message(envelope).unwrap_or("error");
            format!("failed: {message}")
        })
    }

    /// The input gate its envelope asks to answer (`requiresInput`), or
    /// null.
    pub fn input_gate(&self) -> &Value {
        self.envelope_field("requiresInput")
    }

    /// The resume token of the gate it is paused at.
    pub fn gate_token(&self) -> Option<&str> {
        self.approval_gate()["resumeToken"]
            .as_str()
            .or_else(|| self.input_gate()["resumeToken"].as_str())
    }

    /// The short approval id of its approval gate.
    pub fn approval_id(&self) -> Option<&str> {
        self.approval_gate()["approvalId"].as_str()
    }

    fn envelope_field(&self, name: &str) -> &Value {
        static NULL: Value = Value::Null;
        self.envelope
            .as_ref()
            .and_then(|e| e.get(name))
            .unwrap_or(&NULL)
    }

    /// The pending-list entry of a record paused at a gate.
    pub fn pending_entry(&self) -> Option<PendingEntry> {
        self.status.is_paused().then(|| PendingEntry {
            run_id: self.run_id.clone(),
            approval_id: self.approval_id().map(String::from),
            kind: self.status.clone(),
            created_at: self.updated_at.clone(),
            extra: Map::new(),
        })
    }
}

/// The error message of an envelope (`error.message`), if it has one:
/// the one place serve reads it, for the page's outcome, a refused
/// resume's answer and the policy-refusal check.
pub fn error_message(envelope: &Value) -> Option<&str> {
    envelope["error"]["message"].as_str()
}

/// What a paused run's approval gate asks, as its envelope's
/// `requiresApproval` says it (the fields `GET /v1/approvals`, the gate
/// page and the notifier show).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AskedApproval {
    /// The question.
    pub prompt: String,
    /// The items it asks about.
    pub items: Vec<Value>,
    /// The gate's own preview of what follows (the plan), if it has one.
    pub preview: Option<String>,
    /// What the stages after the gate will use, one line each.
    pub capabilities: Vec<String>,
    /// The token that resumes it.
    pub resume_token: Option<String>,
    /// Its short approval id.
    pub approval_id: Option<String>,
}

/// The entry that lists a run paused at a gate (the approvals list reads
/// these by prefix, one key per run).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingEntry {
    /// The paused run.
    pub run_id: String,
    /// Its approval id; written as null for an input gate.
    #[serde(default)]
    pub approval_id: Option<String>,
    /// `needs_approval` or `needs_input`.
    pub kind: RunStatus,
    /// When the run paused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    /// Fields this version does not know, written back as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl PendingEntry {
    /// The key prefix of every pending entry.
    pub const PREFIX: &'static str = "serve_pending_";

    /// The store key of run `run_id`'s pending entry.
    pub fn key(run_id: &str) -> String {
        format!("{}{run_id}", Self::PREFIX)
    }

    /// Read an entry from its stored JSON.
    pub fn from_value(value: Value) -> Result<PendingEntry> {
        serde_json::from_value(value)
            .map_err(|e| Error::runtime(format!("a pending-gate entry cannot be read: {e}")))
    }

    /// The entry as stored JSON.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("a pending entry is plain JSON")
    }
}

/// A node's heartbeat in the root store: it is alive while this is younger
/// than a lease.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeBeat {
    /// The node's id.
    pub node: String,
    /// When it beat (ISO 8601).
    pub at: String,
    /// Fields this version does not know, written back as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl NodeBeat {
    /// The store key of `node`'s heartbeat.
    pub fn key(node: &str) -> String {
        format!("serve_node_{node}")
    }

    /// The heartbeat as stored JSON.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("a heartbeat is plain JSON")
    }
}

#[cfg(test)]
#[path = "run_record_tests.rs"]
mod tests;
