//! The journal's typed events: what a run records, one record each.
//!
//! Digests are blake3 hex of the bytes named; environment values are never
//! recorded, only names. Built-in data stages record no per-item digest
//! (the 1M-item pipeline pays nothing per item).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Most bytes of a request's text (pipeline or workflow file) recorded in
/// full; a longer one is cut there and its full digest kept.
pub const REQUEST_TEXT_CAP: usize = 1 << 20;

/// Most bytes of a host process's output recorded in full; past it the
/// step is recorded as not replayable.
pub const HOST_OUTPUT_CAP: usize = 1 << 20;

/// The door a run or a decision came through.
pub type Door = String;

/// One event of a run's journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Event {
    /// The run began (first event of every journal).
    RunStarted(Box<RunStarted>),
    /// A paused run was resumed: the chain continues here.
    RunResumed(RunResumed),
    /// A pipeline stage or a workflow step finished (or failed).
    Step(Step),
    /// A gate stopped the run for a human (approval or input).
    GateOpened(GateOpened),
    /// A gate was decided.
    Decision(Decision),
    /// A brokered call is about to leave: written (and synced) before the
    /// request is sent.
    CallIntent(CallIntent),
    /// A brokered call's answer, in full.
    CallAnswer(CallAnswer),
    /// An error ended a stage or the run.
    Error(ErrorEvent),
    /// The run ended (settled or paused).
    RunEnded(RunEnded),
    /// The journal reached its size cap: the events after this one are
    /// omitted (only the run's end is still recorded).
    Capped(Capped),
}

impl Event {
    /// The event's kind as written (`run_started`, `step`, …).
    pub fn kind(&self) -> &'static str {
        match self {
            Event::RunStarted(_) => "run_started",
            Event::RunResumed(_) => "run_resumed",
            Event::Step(_) => "step",
            Event::GateOpened(_) => "gate_opened",
            Event::Decision(_) => "decision",
            Event::CallIntent(_) => "call_intent",
            Event::CallAnswer(_) => "call_answer",
            Event::Error(_) => "error",
            Event::RunEnded(_) => "run_ended",
            Event::Capped(_) => "capped",
        }
    }
}

/// What was asked to run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestRecord {
    /// `pipeline`, `workflow` (a file) or `catalog` (a named workflow).
    pub kind: String,
    /// The workflow file's path or the catalog name, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The pipeline text or the workflow file's content, up to
    /// [`REQUEST_TEXT_CAP`] bytes.
    pub text: String,
    /// The text was longer than the cap (then `text` is its start).
    #[serde(default, skip_serializing_if = "is_false")]
    pub truncated: bool,
    /// blake3 of the full text.
    pub digest: String,
    /// The run's arguments (workflow args, as given).
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub args: Value,
}

impl RequestRecord {
    /// A record of `text` (cut at [`REQUEST_TEXT_CAP`] on a char boundary).
    pub fn new(kind: &str, file: Option<String>, text: &str, args: Value) -> Self {
        RequestRecord::digested(kind, file, text, digest(text.as_bytes()), args)
    }

    /// [`RequestRecord::new`] with `text`'s blake3 hex already taken
    /// (a workflow file's, by its loader).
    pub fn digested(
        kind: &str,
        file: Option<String>,
        text: &str,
        text_digest: String,
        args: Value,
    ) -> Self {
        debug_assert_eq!(text_digest, digest(text.as_bytes()), "the request's digest");
        let (cut, truncated) = cap_text(text, REQUEST_TEXT_CAP);
        RequestRecord {
            kind: kind.to_string(),
            file,
            text: cut.to_string(),
            truncated,
            digest: text_digest,
            args,
        }
    }
}

/// A component a run may load, by name and digest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComponentRecord {
    /// The step's name.
    pub name: String,
    /// blake3 of the component's bytes.
    pub digest: String,
}

/// The grants a run was given (names only: never an env value).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GrantsRecord {
    /// Directories readable by steps.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read: Vec<String>,
    /// Directories writable by steps.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub write: Vec<String>,
    /// Environment variable names steps may read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    /// Gateway tools steps may call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// Models steps may call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<String>,
    /// The fixed clock steps see (ms since the epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_ms: Option<u64>,
    /// The seed of steps' random numbers, as exact decimal text (a JSON
    /// number past 2^53 would lose digits in the canonical form).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "seed_text")]
    pub seed: Option<u64>,
}

/// A JSON value as its text, in its own key order.
mod answer_text {
    use serde::{Deserialize, Deserializer, Serializer};
    use serde_json::Value;

    pub fn serialize<S: Serializer>(v: &Value, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&serde_json::to_string(v).map_err(serde::ser::Error::custom)?)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
        match Value::deserialize(d)? {
            Value::String(text) => serde_json::from_str(&text).map_err(serde::de::Error::custom),
            other => Ok(other),
        }
    }
}

/// An optional `u64` as decimal text (a number is still read).
mod seed_text {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(seed: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
        match seed {
            Some(n) => s.serialize_str(&n.to_string()),
            None => s.serialize_none(),
        }
    }

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Seed {
        Text(String),
        Number(u64),
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        match Option::<Seed>::deserialize(d)? {
            None => Ok(None),
            Some(Seed::Number(n)) => Ok(Some(n)),
            Some(Seed::Text(t)) => t.parse().map(Some).map_err(serde::de::Error::custom),
        }
    }
}

/// [`Event::RunStarted`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunStarted {
    /// The run's id.
    pub run_id: String,
    /// When (RFC 3339, UTC, milliseconds).
    pub at: String,
    /// The door: `cli`, `call`, `mcp`, `serve`.
    pub door: Door,
    /// The tenant whose run it is.
    pub tenant: String,
    /// `trusted` or `untrusted`.
    pub trust: String,
    /// blake3 of the operator policy in force (its canonical JSON).
    pub policy_digest: String,
    /// What was asked to run, in full (up to the cap).
    pub request: RequestRecord,
    /// The run's grants.
    pub grants: GrantsRecord,
    /// The components on the run's step path, by digest.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub components: Vec<ComponentRecord>,
    /// Names (never values) of the environment variables the run was given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env_names: Vec<String>,
    /// The run's working directory.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cwd: String,
    /// The rule its steps' digests follow (`digests: 2`; absent: rule 1,
    /// the journals written before there was a choice, which stay as they
    /// were).
    #[serde(default, skip_serializing_if = "DigestRule::is_v1")]
    pub digests: DigestRule,
}

/// What a run's step digests are taken over. Recorded in `run_started`
/// (rule 1 by its absence), carried by a paused run's resume state
/// ([`crate::journal::Head`]) so a resumed run keeps its rule, and followed
/// by `lobster replay` so the replay's digests compare with the run's.
///
/// - **1**: a WebAssembly step's input and output are the items as one JSON
///   array printed as `JSON.stringify` prints it ([`items_digest`]); a
///   workflow step's output is its whole result `{id, stdout, json}`
///   printed so ([`value_digest`]).
/// - **2**: the bytes the run already has, printed for nothing else: a
///   WebAssembly step's input is the exact text handed to the guest (the
///   `run` argument, or a command's stdin) and its output the exact text
///   the guest returned, before it is parsed; a workflow step's output is
///   its `stdout` text ([`step_output_digest`]).
///
/// Either way the run's output (`run_ended`) is [`items_digest`] of it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "u8", into = "u8")]
pub enum DigestRule {
    /// Rule 1 (recorded by leaving `digests` out).
    #[default]
    V1,
    /// Rule 2, what new runs follow.
    V2,
}

impl DigestRule {
    /// The rule a new run follows.
    pub const CURRENT: DigestRule = DigestRule::V2;

    /// Whether this is rule 1 (then it is not written).
    pub fn is_v1(&self) -> bool {
        *self == DigestRule::V1
    }
}

impl From<DigestRule> for u8 {
    fn from(r: DigestRule) -> u8 {
        match r {
            DigestRule::V1 => 1,
            DigestRule::V2 => 2,
        }
    }
}

impl TryFrom<u8> for DigestRule {
    type Error = String;

    fn try_from(n: u8) -> Result<DigestRule, String> {
        match n {
            1 => Ok(DigestRule::V1),
            2 => Ok(DigestRule::V2),
            n => Err(format!(
                "digest rule {n} is not one this lobster knows (1 or 2): a newer lobster wrote this journal"
            )),
        }
    }
}

/// [`Event::RunResumed`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunResumed {
    /// When.
    pub at: String,
    /// The door the resume came through.
    pub door: Door,
    /// The step the run resumes after (the gate's).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub gate: String,
}

/// [`Event::Step`]: one pipeline stage or workflow step.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// The stage's index (pipelines) or the step's id (workflows).
    pub id: String,
    /// `builtin`, `wasm`, `host` (a host process), `pipeline`, `parallel`,
    /// `for_each`, `workflow`, `approval`, `input`.
    pub step_kind: String,
    /// The command or component name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// blake3 of the component (wasm steps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component: Option<String>,
    /// Fuel burned (wasm steps, when fuel is on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fuel: Option<u64>,
    /// Wall time in milliseconds.
    pub wall_ms: u64,
    /// The limit it hit: `fuel`, `deadline`, `memory`, `output`, `result`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<String>,
    /// blake3 of the input (wasm steps and host processes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_digest: Option<String>,
    /// blake3 of the output (wasm steps and host processes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_digest: Option<String>,
    /// A host process's exit code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// A host process's output in full, up to [`HOST_OUTPUT_CAP`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// False when a replay cannot stand this record in for the host
    /// process: a host line's output past the cap; a pipeline `exec`
    /// stage's output past 64 KiB, not read to its end (`head`), or ended
    /// by a signal (see `journal::replay::unreplayable_why`).
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub replayable: bool,
    /// Whether it succeeded.
    pub ok: bool,
    /// The workflow step it ran within: a stage of a workflow's pipeline
    /// step (its `id` is the stage's index there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub within: Option<String>,
}

/// [`Event::GateOpened`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GateOpened {
    /// `approval` or `input`.
    pub gate: String,
    /// The step (workflow) or stage index (pipeline) of the gate.
    pub step: String,
    /// The prompt a human is shown.
    pub prompt: String,
    /// blake3 of the preview (the items shown).
    pub preview_digest: String,
    /// The plan digest the approval is bound to.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub plan_digest: String,
    /// The short approval id, when one was issued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_id: Option<String>,
}

/// [`Event::Decision`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// `approve`, `deny`, `cancel` or `input`.
    pub decision: String,
    /// Who decided (an approver's name; absent when the door knows none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approver: Option<String>,
    /// Who decided, as the run's record says it
    /// ([`crate::resume::Decider::describe`]): `approver alice`, `tenant
    /// acme's agent`, `a human through the MCP client`, `the operator`.
    /// Absent in journals written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    /// The door it came through.
    pub door: Door,
    /// blake3 of an input response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_digest: Option<String>,
}

/// [`Event::CallIntent`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CallIntent {
    /// `tool` or `model`.
    pub target: String,
    /// The tool's or model's name.
    pub name: String,
    /// The request's digest (the broker's ledger key).
    pub request_digest: String,
}

/// [`Event::CallAnswer`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CallAnswer {
    /// The request's digest.
    pub request_digest: String,
    /// The answer, in full. Written as its JSON text, keys in the order
    /// they arrived (the canonical form of an object would sort them, and
    /// a replay must hand steps exactly what they saw); a JSON value is
    /// still read.
    #[serde(with = "answer_text")]
    pub answer: Value,
    /// Answered from the run's record instead of sent again.
    #[serde(default, skip_serializing_if = "is_false")]
    pub replayed: bool,
}

/// [`Event::Error`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ErrorEvent {
    /// Where (a step id or stage index), if known.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub step: String,
    /// The message.
    pub message: String,
}

/// [`Event::RunEnded`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunEnded {
    /// `ok`, `needs_approval`, `needs_input`, `cancelled`, `error`.
    pub status: String,
    /// When.
    pub at: String,
    /// Wall time of this leg of the run, in milliseconds.
    pub wall_ms: u64,
    /// blake3 of the output items' JSON (settled runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_digest: Option<String>,
}

/// [`Event::Capped`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Capped {
    /// The cap, in bytes of journal.
    pub limit_bytes: u64,
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// blake3 hex of `bytes`.
pub fn digest(bytes: &[u8]) -> String {
    #[cfg(test)]
    HASHED.with(|n| n.set(n.get() + 1));
    super::chain::Hex::of(&blake3::hash(bytes))
        .as_str()
        .to_owned()
}

#[cfg(test)]
thread_local! {
    /// Digests taken on this thread (tests: a run without a journal takes
    /// none).
    static HASHED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many digests this thread has taken ([`digest`], [`items_digest`],
/// [`value_digest`]).
#[cfg(test)]
pub(crate) fn digests_taken() -> u64 {
    HASHED.with(|n| n.get())
}

/// blake3 hex of `items`' JSON text as one array (`JSON.stringify` of it),
/// in one pass: the text is written into a buffer this thread reuses and
/// hashed as it fills (no copy of the items, no text of them kept).
///
/// A run's items often pass unchanged from one step to the next (a step's
/// output is the next one's input, the last one's is the run's): the last
/// text digested on this thread is kept with its digest, and the same text
/// again is not hashed again (compared whole; up to [`DIGEST_CHUNK`] bytes).
pub fn items_digest(items: &[Value]) -> String {
    digest_written(true, |text, h| {
        text.push('[');
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            crate::value::write_js_json(text, item, None);
            if text.len() >= DIGEST_CHUNK {
                h.update(text.as_bytes());
                text.clear();
            }
        }
        text.push(']');
    })
}

/// blake3 hex of `value`'s JSON text (`JSON.stringify` of it), as
/// [`items_digest`] writes it.
pub fn value_digest(value: &Value) -> String {
    digest_written(false, |text, _| {
        crate::value::write_js_json(text, value, None)
    })
}

/// The output digest of a workflow step's result under `rule`: rule 2
/// takes blake3 of its `stdout` text, as it is, when that text is the JSON
/// of its output; rule 1, and rule 2 for any other result, of its whole
/// JSON text ([`DigestRule`]).
///
/// A step whose output is strings prints them joined by newlines, so its
/// `stdout` does not tell `["a\nb"]` from `["a", "b"]`: such a result
/// (`json` a string, or an array of strings only) is digested whole, like
/// a result without a `stdout`. Strings print cheaply, so the cost stays
/// small. (A human-mode step whose renderer is followed by stages that
/// make items is identified by its rendered text; its items are covered by
/// the next stage's input digest and the run's output digest.)
pub fn step_output_digest(rule: DigestRule, result: &Value) -> String {
    step_output_digest_of(rule, result).0
}

/// [`step_output_digest`], and whether it was taken over the result's
/// `stdout` (rule 2) rather than its whole JSON text.
pub fn step_output_digest_of(rule: DigestRule, result: &Value) -> (String, bool) {
    let strings = match result.get("json") {
        Some(Value::String(_)) => true,
        Some(Value::Array(items)) => items.iter().all(Value::is_string),
        _ => false,
    };
    match (rule, result.get("stdout")) {
        (DigestRule::V2, Some(Value::String(stdout))) if !strings => {
            (super::kept::digest(stdout.as_bytes()), true)
        }
        _ => (value_digest(result), false),
    }
}

/// The input and output digests of one WebAssembly step under rule 2,
/// taken by the sandbox over the exact text it hands the guest and the
/// exact text the guest hands back ([`DigestRule`]). Asked for only when
/// the run's journal is on: a run without one hashes nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GuestDigests {
    /// blake3 hex of the input text handed to the guest.
    pub input: Option<String>,
    /// blake3 hex of the text the guest returned (when it ran to the end
    /// and its text was its items).
    pub output: Option<String>,
}

/// Text past this is hashed and the buffer reused.
const DIGEST_CHUNK: usize = 64 << 10;

/// A thread's digest buffers: the one written into, and the last text
/// digested (when it was kept) with its digest.
#[derive(Default)]
struct Scratch {
    text: String,
    last: String,
    last_digest: String,
}

/// blake3 hex of what `write` writes (into a buffer this thread reuses,
/// handing full chunks to the hasher itself). With `keep`, a text written
/// whole (no chunk handed over) that is the last one kept is not hashed
/// again, and one that is not becomes the last one kept.
fn digest_written(keep: bool, write: impl FnOnce(&mut String, &mut blake3::Hasher)) -> String {
    thread_local! {
        static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
    }
    #[cfg(test)]
    HASHED.with(|n| n.set(n.get() + 1));
    let mut h = blake3::Hasher::new();
    let run = |s: &mut Scratch| {
        s.text.clear();
        write(&mut s.text, &mut h);
        let whole = h.count() == 0;
        if keep && whole && !s.last_digest.is_empty() && s.text == s.last {
            return s.last_digest.clone();
        }
        if keep && whole {
            if let Some(d) = super::kept::recall(s.text.as_bytes()) {
                return d;
            }
        }
        h.update(s.text.as_bytes());
        let digest = super::chain::Hex::of(&h.finalize()).as_str().to_owned();
        if keep && whole && s.text.len() <= DIGEST_CHUNK {
            std::mem::swap(&mut s.text, &mut s.last);
            s.last_digest.clone_from(&digest);
            if s.last.capacity() > 2 * DIGEST_CHUNK {
                s.last.shrink_to_fit();
            }
        }
        // A large text's buffer is not kept for the thread's lifetime.
        if s.text.capacity() > 4 * DIGEST_CHUNK {
            s.text = String::new();
        }
        s.text.clear();
        digest
    };
    SCRATCH.with(|s| match s.try_borrow_mut() {
        Ok(mut s) => run(&mut s),
        Err(_) => run(&mut Scratch::default()),
    })
}

/// `text` cut to at most `cap` bytes on a char boundary, and whether it was cut.
pub fn cap_text(text: &str, cap: usize) -> (&str, bool) {
    if text.len() <= cap {
        return (text, false);
    }
    let mut end = cap;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (&text[..end], true)
}

#[cfg(test)]
#[path = "event_tests.rs"]
mod tests;
