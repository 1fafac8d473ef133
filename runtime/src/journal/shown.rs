//! A journal's records read back to be shown (`lobster runs show`, serve's
//! run page): each record's place in the chain and its typed [`Event`], so
//! a door renders from fields, never from keys of a JSON tree; and the
//! words every door uses for a step ([`Step::what`]) and a decider
//! ([`Decision::who`]).
//!
//! Showing is not verifying: a record whose event this version does not
//! read is still listed, by its kind, and the caller says whether the chain
//! verifies ([`super::verify::verify_text`]).

use super::{Decision, Event, Step};
use serde::Deserialize;

/// One record of a journal, read back to be shown.
#[derive(Debug, Clone, PartialEq)]
pub struct ShownRecord {
    /// Its place in the chain.
    pub seq: u64,
    /// Its event's kind as written (`step`, `run_ended`, …).
    pub kind: String,
    /// Its event, typed; `None` when this version does not read it (a
    /// kind it does not know, or fields it cannot take).
    pub event: Option<Event>,
}

/// The records of a journal's `text` (its lines as the store keeps them,
/// or an export), in order; a line that is not a record (an export's
/// checkpoint, a torn tail) is left out.
pub fn shown_records(text: &str) -> Vec<ShownRecord> {
    #[derive(Deserialize)]
    struct Typed {
        seq: u64,
        event: Event,
    }
    #[derive(Deserialize)]
    struct Kind {
        kind: String,
    }
    #[derive(Deserialize)]
    struct Untyped {
        seq: u64,
        event: Kind,
    }
    text.lines()
        .filter_map(|line| match serde_json::from_str::<Typed>(line) {
            Ok(r) => Some(ShownRecord {
                seq: r.seq,
                kind: r.event.kind().to_string(),
                event: Some(r.event),
            }),
            Err(_) => serde_json::from_str::<Untyped>(line)
                .ok()
                .map(|r| ShownRecord {
                    seq: r.seq,
                    kind: r.event.kind,
                    event: None,
                }),
        })
        .collect()
}

impl Step {
    /// What the step was, in words: its kind, its name when that is not
    /// its id (a stage's command, a wasm step's component), and the
    /// workflow step it ran within — `host exec in step list`,
    /// `wasm triage`, `parallel`.
    pub fn what(&self) -> String {
        let what = if self.name.is_empty() || self.name == self.id {
            self.step_kind.clone()
        } else {
            format!("{} {}", self.step_kind, self.name)
        };
        match &self.within {
            Some(step) => format!("{what} in step {step}"),
            None => what,
        }
    }
}

impl Decision {
    /// Who decided, as a timeline shows it: the approver's name, else how
    /// the door knew the decider (`tenant acme's agent`, …), else
    /// `(unnamed)` (a journal written before `decided_by`).
    pub fn who(&self) -> &str {
        self.approver
            .as_deref()
            .or(self.decided_by.as_deref())
            .unwrap_or("(unnamed)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records read typed; one this version cannot read is listed by its
    /// kind; lines that are not records are left out.
    #[test]
    fn records_read_typed_and_the_unknown_by_kind() {
        let text = concat!(
            r#"{"run":"r","seq":0,"prev":"0","hash":"1","event":{"kind":"step","id":"a","step_kind":"host","name":"run","wall_ms":2,"ok":true}}"#,
            "\n",
            r#"{"run":"r","seq":1,"prev":"1","hash":"2","event":{"kind":"from_the_future","x":1}}"#,
            "\n",
            r#"{"checkpoint":{"run":"r","events":2,"head":"2"}}"#,
            "\n",
            r#"{"run":"r","seq":2,"prev":"2","hash":"3","event":{"kind":"decision","decision":"approve","door":"cli","decided_by":"the operator"}}"#,
            "\n",
            r#"{"run":"r","seq":3,"#,
        );
        let records = shown_records(text);
        let kinds: Vec<(u64, &str, bool)> = records
            .iter()
            .map(|r| (r.seq, r.kind.as_str(), r.event.is_some()))
            .collect();
        assert_eq!(
            kinds,
            [
                (0, "step", true),
                (1, "from_the_future", false),
                (2, "decision", true)
            ]
        );
        let Some(Event::Step(s)) = &records[0].event else {
            panic!("{records:?}");
        };
        assert_eq!(s.what(), "host run");
        let Some(Event::Decision(d)) = &records[2].event else {
            panic!("{records:?}");
        };
        assert_eq!(d.who(), "the operator");
    }

    #[test]
    fn a_step_and_a_decider_in_words() {
        let step = |id: &str, kind: &str, name: &str, within: Option<&str>| Step {
            id: id.into(),
            step_kind: kind.into(),
            name: name.into(),
            within: within.map(str::to_string),
            ..Step::default()
        };
        assert_eq!(
            step("0", "host", "exec", Some("list")).what(),
            "host exec in step list"
        );
        assert_eq!(step("par", "parallel", "par", None).what(), "parallel");
        assert_eq!(step("t", "wasm", "", None).what(), "wasm");
        let named = Decision {
            approver: Some("alice".into()),
            decided_by: Some("approver alice".into()),
            ..Decision::default()
        };
        assert_eq!(named.who(), "alice");
        assert_eq!(Decision::default().who(), "(unnamed)");
    }
}
