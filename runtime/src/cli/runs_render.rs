//! How `lobster runs`, `approvals` and `verify` print for a person or a
//! program: the run list (a table or JSON), a run's timeline, and the
//! verdict on an exported journal.

use crate::app::runs::{duration_ms, RunRow, WithDuration};
use crate::journal::shown::shown_records;
use crate::journal::verify::{verify_text, Verdict};
use crate::journal::Event;
use crate::state::journal::RunSummary;

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
    for r in shown_records(text) {
        let detail = match &r.event {
            Some(e) => event_line(e),
            None => "(an event this version does not read)".to_string(),
        };
        out.push_str(&format!("{:>4}  {:<12}  {}\n", r.seq, r.kind, detail));
    }
    out
}

/// The first 12 characters of a digest.
fn short(d: &str) -> &str {
    d.get(..12).unwrap_or(d)
}

/// What a timeline line says of `event`, after its kind.
fn event_line(event: &Event) -> String {
    match event {
        Event::RunStarted(s) => format!(
            "{} {} (trust {}, policy {})",
            s.request.kind,
            match &s.request.file {
                Some(f) => f.clone(),
                None => s.request.text.chars().take(80).collect(),
            },
            s.trust,
            short(&s.policy_digest)
        ),
        Event::Step(s) => {
            let mut d = format!("{}: {} {}ms", s.id, s.what(), s.wall_ms);
            if let Some(c) = &s.component {
                d.push_str(&format!(" component {}", short(c)));
            }
            if let Some(f) = s.fuel {
                d.push_str(&format!(" fuel {f}"));
            }
            if let Some(c) = s.exit_code {
                d.push_str(&format!(" exit {c}"));
            }
            if let Some(l) = &s.limit {
                d.push_str(&format!(" hit {l}"));
            }
            if !s.ok {
                d.push_str(" FAILED");
            }
            d
        }
        Event::GateOpened(g) => format!(
            "{} at step {}: {:?}{}",
            g.gate,
            g.step,
            g.prompt,
            g.approval_id
                .as_ref()
                .map(|id| format!(" (id {id})"))
                .unwrap_or_default()
        ),
        Event::Decision(d) => format!("{} by {} via {}", d.decision, d.who(), d.door),
        Event::CallIntent(c) => format!(
            "{} {} request {}",
            c.target,
            c.name,
            short(&c.request_digest)
        ),
        Event::CallAnswer(a) => format!(
            "answer to {}{}",
            short(&a.request_digest),
            if a.replayed { " (replayed)" } else { "" }
        ),
        Event::Error(e) => e.message.clone(),
        Event::RunEnded(e) => format!("{} after {}ms", e.status, e.wall_ms),
        Event::RunResumed(r) => format!("via {}", r.door),
        Event::Capped(_) => "journal capped: later events omitted".to_string(),
    }
}
