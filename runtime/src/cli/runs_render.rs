//! How `lobster runs`, `approvals` and `verify` print for a person or a
//! program: the run list (a table or JSON), a run's timeline, and the
//! verdict on an exported journal.

use crate::app::runs::{duration_ms, RunRow, WithDuration};
use crate::journal::verify::{verify_text, Verdict};
use crate::state::journal::RunSummary;
use serde_json::Value;

/// The line `lobster verify` prints for `file` (and its exit code):
/// verified with what it found, or the first problem.
pub(super) fn verdict_text(file: &str, v: &Verdict, signed: &str) -> (String, i32) {
    let run = v.run.as_deref().unwrap_or("(unknown)");
    match &v.problem {
        Some(p) => (
            format!(
                "{file}: NOT VERIFIED (run {run}): line {}: {}\n",
                p.line, p.message
            ),
            1,
        ),
        None => {
            let end = match &v.ended {
                Some(s) => format!("ended {s}"),
                None => "no end recorded (still going, killed, or cut)".into(),
            };
            let cp = if v.checkpoint.is_some() {
                format!(", checkpoint matches{signed}")
            } else {
                ", no checkpoint".to_string()
            };
            let capped = if v.capped { ", capped" } else { "" };
            (
                format!(
                    "{file}: verified: run {run}, {} events, head {}, {end}{cp}{capped}\n",
                    v.events, v.head
                ),
                0,
            )
        }
    }
}

/// The run list: a table, or (`json`) an array of runs.
pub(super) fn render_list(runs: &[RunSummary], json: bool) -> String {
    if json {
        let rows: Vec<RunRow<'_, WithDuration>> = runs
            .iter()
            .map(|s| RunRow::with(s, WithDuration::of(s)))
            .collect();
        return format!(
            "{}\n",
            serde_json::to_string_pretty(&rows).unwrap_or_default()
        );
    }
    let mut out = format!(
        "{:<32}  {:<14}  {:<24}  {:>9}  {:<8}  {}\n",
        "RUN", "STATUS", "STARTED", "DURATION", "GATE", "NAME"
    );
    for s in runs {
        let duration = duration_ms(s)
            .map(|ms| format!("{ms}ms"))
            .unwrap_or_else(|| "-".into());
        let name: String = s.name.chars().take(60).collect();
        out.push_str(&format!(
            "{:<32}  {:<14}  {:<24}  {:>9}  {:<8}  {}\n",
            s.run_id,
            s.status,
            s.started_at,
            duration,
            s.gate.as_deref().unwrap_or("-"),
            name.replace('\n', " ")
        ));
    }
    out
}

/// A run's timeline: its summary (when the store has one), whether its
/// chain verifies, then one line per event.
pub(super) fn timeline(summary: Option<RunSummary>, id: &str, text: &str) -> String {
    let v = verify_text(text, Some(id));
    let mut out = String::new();
    if let Some(s) = summary {
        out.push_str(&format!(
            "run {id}  {}  {}  started {}  via {}\n",
            s.status, s.name, s.started_at, s.door
        ));
    }
    match &v.problem {
        None => out.push_str(&format!("journal: {} events, chain verifies\n", v.events)),
        Some(p) => out.push_str(&format!("journal: DOES NOT VERIFY: {}\n", p.message)),
    }
    for line in text.lines() {
        let Ok(rec) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let e = &rec["event"];
        let s = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("");
        let n = |k: &str| e.get(k).and_then(Value::as_u64);
        let short = |d: &str| d.chars().take(12).collect::<String>();
        let detail = match s("kind") {
            "run_started" => format!(
                "{} {} (trust {}, policy {})",
                e["request"]["kind"].as_str().unwrap_or(""),
                e["request"]["file"]
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| e["request"]["text"]
                        .as_str()
                        .unwrap_or("")
                        .chars()
                        .take(80)
                        .collect()),
                s("trust"),
                short(s("policy_digest"))
            ),
            "step" => {
                let mut d = format!(
                    "{} {} {}ms",
                    s("step_kind"),
                    s("id"),
                    n("wall_ms").unwrap_or(0)
                );
                if !s("name").is_empty() && s("name") != s("id") {
                    d = format!(
                        "{} {} {}ms",
                        s("step_kind"),
                        s("name"),
                        n("wall_ms").unwrap_or(0)
                    );
                }
                if let Some(w) = e.get("within").and_then(Value::as_str) {
                    d.push_str(&format!(" in step {w}"));
                }
                if let Some(c) = e.get("component").and_then(Value::as_str) {
                    d.push_str(&format!(" component {}", short(c)));
                }
                if let Some(f) = n("fuel") {
                    d.push_str(&format!(" fuel {f}"));
                }
                if let Some(c) = e.get("exit_code").and_then(Value::as_i64) {
                    d.push_str(&format!(" exit {c}"));
                }
                if let Some(l) = e.get("limit").and_then(Value::as_str) {
                    d.push_str(&format!(" hit {l}"));
                }
                if e.get("ok") == Some(&Value::Bool(false)) {
                    d.push_str(" FAILED");
                }
                d
            }
            "gate_opened" => format!(
                "{} at step {}: {:?}{}",
                s("gate"),
                s("step"),
                s("prompt"),
                e.get("approval_id")
                    .and_then(Value::as_str)
                    .map(|id| format!(" (id {id})"))
                    .unwrap_or_default()
            ),
            "decision" => format!(
                "{} by {} via {}",
                s("decision"),
                crate::journal::decided_by(e),
                s("door")
            ),
            "call_intent" => format!(
                "{} {} request {}",
                s("target"),
                s("name"),
                short(s("request_digest"))
            ),
            "call_answer" => format!(
                "answer to {}{}",
                short(s("request_digest")),
                if e.get("replayed") == Some(&Value::Bool(true)) {
                    " (replayed)"
                } else {
                    ""
                }
            ),
            "error" => s("message").to_string(),
            "run_ended" => format!("{} after {}ms", s("status"), n("wall_ms").unwrap_or(0)),
            "run_resumed" => format!("via {}", s("door")),
            "capped" => "journal capped: later events omitted".to_string(),
            other => other.to_string(),
        };
        out.push_str(&format!(
            "{:>4}  {:<12}  {}\n",
            rec["seq"].as_u64().unwrap_or(0),
            s("kind"),
            detail
        ));
    }
    out
}
