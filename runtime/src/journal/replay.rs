//! What a replay needs from a finished run's journal ([`Recorded`]), what
//! the replaying run reads from it while it runs (recorded host outputs,
//! [`Recorded::take_host_output`]; brokered answers,
//! [`Recorded::answers`]), and how the replay's own journal is compared
//! with it ([`compare`]: `identical`, or the first [`Divergence`]).
//!
//! The chain is verified before anything is read: a journal that does not
//! verify is never replayed. Running the replay is the request layer's
//! (`app/replay.rs`); this module only reads and compares journals.

use super::verify::verify_text;
use super::{CallAnswer, Decision, Event, RunEnded, RunStarted, Step};
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;

/// Why a journal cannot be replayed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotReplayable(pub String);

impl std::fmt::Display for NotReplayable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A finished run, as its verified journal recorded it.
#[derive(Debug)]
pub struct Recorded {
    /// The run's id.
    pub run_id: String,
    /// Its start: the request in full, grants (clock, seed), components.
    pub started: RunStarted,
    /// Every `step` event, in the order they were written.
    pub steps: Vec<Step>,
    /// The decisions taken at its gates, in order.
    pub decisions: Vec<Decision>,
    /// Brokered answers by request digest (the first recorded for each).
    pub answers: BTreeMap<String, Value>,
    /// Its last end (a settled status).
    pub ended: RunEnded,
    /// Recorded host outputs not yet handed to the replay, per
    /// [`HostKey`].
    host: Mutex<BTreeMap<HostKey, VecDeque<Step>>>,
}

/// Which recorded host outputs a host step of the replay takes: the
/// workflow step it ran in (`within`, empty outside a workflow's pipeline
/// step), its id and its name (`run` for a workflow's host line, `exec`
/// for a pipeline's stage, whose id is its index). Keyed by `within` too,
/// two pipeline steps' stage 0 (say, in a workflow's parallel branches,
/// which end in any order) never take each other's records.
type HostKey = (String, String, String);

/// The host steps among `steps`, by key, each key's in run order.
fn host_records(steps: &[Step]) -> BTreeMap<HostKey, VecDeque<Step>> {
    let mut host: BTreeMap<HostKey, VecDeque<Step>> = BTreeMap::new();
    for s in steps.iter().filter(|s| s.step_kind == "host") {
        host.entry(host_key(s.within.as_deref(), &s.id, &s.name))
            .or_default()
            .push_back(s.clone());
    }
    host
}

fn host_key(within: Option<&str>, id: &str, name: &str) -> HostKey {
    (
        within.unwrap_or_default().to_string(),
        id.to_string(),
        name.to_string(),
    )
}

/// Every journal event of `text` (whole, verified records only).
pub fn events_of(text: &str) -> Vec<Event> {
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter_map(|rec| rec.get("event").cloned())
        .filter_map(|e| serde_json::from_value::<Event>(e).ok())
        .collect()
}

/// Why the journal `text`'s `run_started` event does not read as one, if
/// it has one that does not.
fn unreadable_start(text: &str) -> Option<String> {
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter_map(|rec| rec.get("event").cloned())
        .find(|e| e.get("kind").and_then(Value::as_str) == Some("run_started"))
        .and_then(|e| serde_json::from_value::<Event>(e).err())
        .map(|e| e.to_string())
}

impl Recorded {
    /// Read the journal `text` (stored, or exported with a checkpoint) of
    /// run `expect_run` (any run when `None`). Refused: a journal whose
    /// chain does not verify (the first bad event is named), one that was
    /// capped, one whose run has not settled, a request cut at the cap.
    pub fn from_text(text: &str, expect_run: Option<&str>) -> Result<Recorded, NotReplayable> {
        let v = verify_text(text, expect_run);
        if let Some(p) = &v.problem {
            return Err(NotReplayable(format!(
                "the journal does not verify (line {}: {}); it is not replayed",
                p.line, p.message
            )));
        }
        let run_id = v.run.clone().unwrap_or_default();
        if v.capped {
            return Err(NotReplayable(format!(
                "run {run_id}'s journal reached its size cap: later events were not recorded, so it cannot be replayed"
            )));
        }
        let mut started = None;
        let mut steps = Vec::new();
        let mut decisions = Vec::new();
        let mut answers = BTreeMap::new();
        let mut ended: Option<RunEnded> = None;
        for event in events_of(text) {
            match event {
                Event::RunStarted(s) => started = Some(*s),
                Event::Step(s) => steps.push(s),
                Event::Decision(d) => decisions.push(d),
                Event::CallAnswer(CallAnswer {
                    request_digest,
                    answer,
                    ..
                }) => {
                    answers.entry(request_digest).or_insert(answer);
                }
                Event::RunEnded(e) => ended = Some(e),
                Event::RunResumed(_) => ended = None,
                _ => {}
            }
        }
        let started = started.ok_or_else(|| {
            NotReplayable(match unreadable_start(text) {
                // A newer digest rule, say: its digests cannot be taken here.
                Some(e) => format!("run {run_id}'s run_started event cannot be read: {e}"),
                None => format!("run {run_id} has no run_started event"),
            })
        })?;
        let ended = match ended {
            Some(e) if !e.status.starts_with("needs_") => e,
            Some(e) => {
                return Err(NotReplayable(format!(
                    "run {run_id} has not finished: it waits at a gate ({}); replay a settled run",
                    e.status
                )))
            }
            None => {
                return Err(NotReplayable(format!(
                "run {run_id} has no recorded end (still running, or killed); replay a settled run"
            )))
            }
        };
        if started.request.truncated {
            return Err(NotReplayable(format!(
                "run {run_id}'s request was longer than the journal keeps ({} bytes); it cannot be replayed",
                super::REQUEST_TEXT_CAP
            )));
        }
        if decisions.iter().any(|d| d.decision == "input") {
            return Err(NotReplayable(format!(
                "run {run_id} answered an input gate: the journal keeps only the response's digest, so it cannot be replayed"
            )));
        }
        let host = host_records(&steps);
        Ok(Recorded {
            run_id,
            started,
            steps,
            decisions,
            answers,
            ended,
            host: Mutex::new(host),
        })
    }

    /// The host-process steps that cannot be answered from the record,
    /// each with why ([`unreplayable_why`]).
    pub fn unreplayable_host_steps(&self) -> Vec<(&Step, String)> {
        self.steps
            .iter()
            .filter(|s| s.step_kind == "host")
            .filter_map(|s| unreplayable_why(s).map(|why| (s, why)))
            .collect()
    }

    /// Hand out no recorded host output (`--rerun-host`: host processes
    /// run again).
    pub fn forget_host_outputs(&mut self) {
        self.host.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// The next recorded run of host step `id` named `name` (`run`: a
    /// workflow's host line; `exec`: a pipeline stage, `id` its index)
    /// that ran within workflow step `within` (`None`: outside any),
    /// taken (each is handed out once, in order: a step in a loop, or a
    /// pipeline run again, takes the next).
    pub fn take_host_output(&self, within: Option<&str>, id: &str, name: &str) -> Option<Step> {
        let mut host = self.host.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(step) = host
            .get_mut(&host_key(within, id, name))
            .and_then(VecDeque::pop_front)
        {
            return Some(step);
        }
        // A journal written before stages named their step keeps them
        // outside any.
        within?;
        host.get_mut(&host_key(None, id, name))
            .and_then(VecDeque::pop_front)
    }

    /// The components the run loaded, `(name, digest)`, each once: the
    /// step path's at its start and every WebAssembly step's.
    pub fn components(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = self
            .started
            .components
            .iter()
            .map(|c| (c.name.clone(), c.digest.clone()))
            .collect();
        for s in &self.steps {
            if let (Some(d), "wasm") = (&s.component, s.step_kind.as_str()) {
                out.push((s.name.clone(), d.clone()));
            }
        }
        let mut seen = std::collections::BTreeSet::new();
        out.retain(|c| seen.insert(c.clone()));
        out
    }
}

/// Why host step `step`'s record cannot stand in for its process, if it
/// cannot: the record has to hold the whole output (and, for a pipeline's
/// `exec` stage, how the process ended).
pub fn unreplayable_why(step: &Step) -> Option<String> {
    if step.replayable && step.output.is_some() {
        return None;
    }
    let exec = step.name == "exec";
    Some(match &step.output {
        None if exec => "its output was not kept: the next stage stopped reading it (`head`), or the run predates exec records".into(),
        None => "its output was not recorded".into(),
        Some(_) if exec && step.output_digest.is_none() => {
            "its output was longer than the journal keeps of an exec stage (64 KiB)".into()
        }
        Some(_) if exec && step.exit_code.is_none() => {
            "it was ended by a signal, which the journal does not record".into()
        }
        Some(_) => format!(
            "its output passed the journal's cap ({} bytes)",
            super::HOST_OUTPUT_CAP
        ),
    })
}

/// Where a replay first differed from the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Divergence {
    /// The step (its id; `run` for the run's end).
    pub step: String,
    /// The step's kind and name, for humans (`wasm inbox_apply`).
    pub what: String,
    /// What differs: `component`, `input`, `output`, `ok`, `exit_code`,
    /// `missing` (ran in the run, not in the replay), `extra` (the other
    /// way), `status` or `output` of the run's end.
    pub field: String,
    /// The run's value.
    pub expected: Option<String>,
    /// The replay's value.
    pub actual: Option<String>,
}

impl std::fmt::Display for Divergence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "(none)".into());
        match self.field.as_str() {
            "missing" => write!(
                f,
                "step {} ({}) ran in the run but not in the replay",
                self.step, self.what
            ),
            "extra" => write!(
                f,
                "step {} ({}) ran in the replay but not in the run",
                self.step, self.what
            ),
            field => write!(
                f,
                "step {} ({}): {field} expected {}, actual {}",
                self.step,
                self.what,
                show(&self.expected),
                show(&self.actual)
            ),
        }
    }
}

/// Whether the replay's step `got` is the recorded step `want`: the same
/// id and kind, and (`within`) within the same workflow step.
fn same_step(got: &Step, want: &Step, within: bool) -> bool {
    got.id == want.id && got.step_kind == want.step_kind && (!within || got.within == want.within)
}

/// Compare the replay's journal `replayed` with the run it replays: each
/// recorded step is matched with the replay's first unmatched step of the
/// same id and kind within the same workflow step (parallel branches may
/// finish in another order, and each pipeline step has a stage 0; a
/// journal from before `within` by id and kind), and
/// its component, input and output digests, success and exit code must be
/// equal; then the run's end (status, output digest). `None`: identical.
pub fn compare(recorded: &Recorded, replayed: &[Event]) -> Option<Divergence> {
    let mut theirs: Vec<Option<&Step>> = replayed
        .iter()
        .filter_map(|e| match e {
            Event::Step(s) => Some(s),
            _ => None,
        })
        .map(Some)
        .collect();
    for want in &recorded.steps {
        let what = want.what();
        let at = |within: bool| {
            theirs
                .iter()
                .position(|s| s.is_some_and(|s| same_step(s, want, within)))
        };
        // A journal written before stages named their step (no `within`
        // anywhere) is matched by id and kind alone.
        let found = at(true)
            .or_else(|| want.within.is_none().then(|| at(false)).flatten())
            .map(|i| &mut theirs[i]);
        let Some(slot) = found else {
            return Some(Divergence {
                step: want.id.clone(),
                what,
                field: "missing".into(),
                expected: want.output_digest.clone(),
                actual: None,
            });
        };
        let got = slot.take().unwrap_or(want);
        let fields: [(&str, Option<String>, Option<String>); 5] = [
            ("component", want.component.clone(), got.component.clone()),
            ("input", want.input_digest.clone(), got.input_digest.clone()),
            (
                "output",
                want.output_digest.clone(),
                got.output_digest.clone(),
            ),
            ("ok", Some(want.ok.to_string()), Some(got.ok.to_string())),
            (
                "exit_code",
                want.exit_code.map(|c| c.to_string()),
                got.exit_code.map(|c| c.to_string()),
            ),
        ];
        for (field, expected, actual) in fields {
            if expected != actual {
                return Some(Divergence {
                    step: want.id.clone(),
                    what,
                    field: field.into(),
                    expected,
                    actual,
                });
            }
        }
    }
    if let Some(extra) = theirs.into_iter().flatten().next() {
        return Some(Divergence {
            step: extra.id.clone(),
            what: extra.what(),
            field: "extra".into(),
            expected: None,
            actual: extra.output_digest.clone(),
        });
    }
    let end = replayed.iter().rev().find_map(|e| match e {
        Event::RunEnded(e) => Some(e),
        _ => None,
    });
    let want = &recorded.ended;
    let (status, output) = match end {
        Some(e) => (Some(e.status.clone()), e.output_digest.clone()),
        None => (None, None),
    };
    if status.as_deref() != Some(want.status.as_str()) {
        return Some(Divergence {
            step: "run".into(),
            what: "the run's end".into(),
            field: "status".into(),
            expected: Some(want.status.clone()),
            actual: status,
        });
    }
    if output != want.output_digest {
        return Some(Divergence {
            step: "run".into(),
            what: "the run's end".into(),
            field: "output".into(),
            expected: want.output_digest.clone(),
            actual: output,
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(id: &str, out: &str) -> Step {
        Step {
            id: id.into(),
            step_kind: "wasm".into(),
            name: "s".into(),
            component: Some("c1".into()),
            output_digest: Some(out.into()),
            replayable: true,
            ok: true,
            ..Step::default()
        }
    }

    fn recorded(steps: Vec<Step>) -> Recorded {
        Recorded {
            run_id: "r".into(),
            started: RunStarted::default(),
            steps,
            decisions: Vec::new(),
            answers: BTreeMap::new(),
            ended: RunEnded {
                status: "ok".into(),
                output_digest: Some("o".into()),
                ..RunEnded::default()
            },
            host: Mutex::default(),
        }
    }

    fn end(status: &str, out: &str) -> Event {
        Event::RunEnded(RunEnded {
            status: status.into(),
            output_digest: Some(out.into()),
            ..RunEnded::default()
        })
    }

    #[test]
    fn the_first_difference_is_named_and_order_of_parallel_steps_does_not_matter() {
        let r = recorded(vec![step("a", "1"), step("b", "2")]);
        let same = [
            Event::Step(step("b", "2")),
            Event::Step(step("a", "1")),
            end("ok", "o"),
        ];
        assert_eq!(compare(&r, &same), None);
        let changed = [
            Event::Step(step("a", "1")),
            Event::Step(step("b", "9")),
            end("ok", "o"),
        ];
        let d = compare(&r, &changed).unwrap();
        assert_eq!((d.step.as_str(), d.field.as_str()), ("b", "output"));
        assert_eq!(d.expected.as_deref(), Some("2"));
        assert_eq!(d.actual.as_deref(), Some("9"));
        let mut swapped = step("a", "1");
        swapped.component = Some("c2".into());
        let d = compare(&r, &[Event::Step(swapped), Event::Step(step("b", "2"))]).unwrap();
        assert_eq!(
            d.to_string(),
            "step a (wasm s): component expected c1, actual c2"
        );
        let d = compare(&r, &[Event::Step(step("a", "1")), end("ok", "o")]).unwrap();
        assert_eq!(d.field, "missing");
        let extra = [
            Event::Step(step("a", "1")),
            Event::Step(step("b", "2")),
            Event::Step(step("c", "3")),
        ];
        assert_eq!(compare(&r, &extra).unwrap().field, "extra");
        let d = compare(
            &r,
            &[
                Event::Step(step("a", "1")),
                Event::Step(step("b", "2")),
                end("ok", "x"),
            ],
        );
        assert_eq!(d.unwrap().field, "output");
        let d = compare(
            &r,
            &[
                Event::Step(step("a", "1")),
                Event::Step(step("b", "2")),
                end("error", "o"),
            ],
        );
        assert_eq!(d.unwrap().field, "status");
    }

    /// Each pipeline step has a stage 0: a recorded stage is paired with
    /// the replay's stage of the same workflow step, whichever ended
    /// first; a journal from before `within` pairs by id and kind.
    #[test]
    fn stages_pair_within_their_workflow_step() {
        let stage = |within: Option<&str>, out: &str| Step {
            within: within.map(str::to_string),
            ..step("0", out)
        };
        let r = recorded(vec![stage(Some("left"), "L"), stage(Some("right"), "R")]);
        let swapped = [
            Event::Step(stage(Some("right"), "R")),
            Event::Step(stage(Some("left"), "L")),
            end("ok", "o"),
        ];
        assert_eq!(compare(&r, &swapped), None);
        let d = compare(
            &r,
            &[
                Event::Step(stage(Some("right"), "L")),
                Event::Step(stage(Some("left"), "R")),
                end("ok", "o"),
            ],
        )
        .unwrap();
        assert_eq!(
            (d.field.as_str(), d.expected.as_deref()),
            ("output", Some("L"))
        );
        // Recorded before stages named their step: paired by id and kind.
        let old = recorded(vec![stage(None, "L")]);
        let now = [Event::Step(stage(Some("left"), "L")), end("ok", "o")];
        assert_eq!(compare(&old, &now), None);
    }

    #[test]
    fn text_that_is_not_a_journal_is_refused() {
        let e = Recorded::from_text("hello\n", None).unwrap_err();
        assert!(e.0.contains("does not verify"), "{e}");
        let e = Recorded::from_text("", None).unwrap_err();
        assert!(e.0.contains("no journal events"), "{e}");
    }

    #[test]
    fn host_outputs_are_handed_out_once_in_order() {
        let host = |id: &str, name: &str, within: Option<&str>, out: &str| Step {
            step_kind: "host".into(),
            name: name.into(),
            within: within.map(str::to_string),
            ..step(id, out)
        };
        let r = recorded(Vec::new());
        *r.host.lock().unwrap() = host_records(&[
            host("h", "run", None, "1"),
            host("0", "exec", Some("left"), "L"),
            host("h", "run", None, "2"),
            host("0", "exec", Some("right"), "R"),
            step("h", "wasm"),
        ]);
        let out = |s: Option<Step>| s.and_then(|s| s.output_digest);
        // A pipeline's `exec` stage of the same id is another record.
        assert!(r.take_host_output(None, "h", "exec").is_none());
        assert_eq!(
            out(r.take_host_output(None, "h", "run")).as_deref(),
            Some("1")
        );
        assert_eq!(
            out(r.take_host_output(None, "h", "run")).as_deref(),
            Some("2")
        );
        assert!(r.take_host_output(None, "h", "run").is_none());
        assert!(r.take_host_output(None, "other", "run").is_none());
        // Stage 0 of two pipeline steps (parallel branches that ended in
        // either order) each take their own step's record.
        assert!(r.take_host_output(None, "0", "exec").is_none());
        assert_eq!(
            out(r.take_host_output(Some("right"), "0", "exec")).as_deref(),
            Some("R")
        );
        assert_eq!(
            out(r.take_host_output(Some("left"), "0", "exec")).as_deref(),
            Some("L")
        );
        assert!(r.take_host_output(Some("left"), "0", "exec").is_none());
        // A journal from before stages named their step: the stage's
        // record is outside any, and a stage within one takes it.
        *r.host.lock().unwrap() = host_records(&[host("0", "exec", None, "old")]);
        assert_eq!(
            out(r.take_host_output(Some("left"), "0", "exec")).as_deref(),
            Some("old")
        );
    }

    /// A host record stands in for its process only when it holds the
    /// whole output (and an exec stage's exit code); else the reason.
    #[test]
    fn a_host_record_is_replayable_only_when_whole() {
        let host =
            |name: &str, output: Option<&str>, digest: Option<&str>, code, replayable| Step {
                id: "0".into(),
                step_kind: "host".into(),
                name: name.into(),
                output: output.map(str::to_string),
                output_digest: digest.map(str::to_string),
                exit_code: code,
                replayable,
                ..Step::default()
            };
        assert_eq!(
            unreplayable_why(&host("exec", Some("a"), Some("d"), Some(0), true)),
            None
        );
        assert_eq!(
            unreplayable_why(&host("run", Some(""), Some("d"), Some(1), true)),
            None
        );
        let why = |s: Step| unreplayable_why(&s).unwrap();
        assert!(
            why(host("exec", None, None, None, false)).contains("the next stage stopped reading")
        );
        assert!(why(host("exec", Some("a"), None, Some(0), false)).contains("64 KiB"));
        assert!(why(host("exec", Some("a"), Some("d"), None, false)).contains("signal"));
        assert!(
            why(host("run", Some("a"), Some("d"), Some(0), false)).contains("cap (1048576 bytes)")
        );
        assert!(why(host("run", None, None, None, true)).contains("not recorded"));
    }
}
