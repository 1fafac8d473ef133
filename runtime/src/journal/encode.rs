//! An event's canonical text (RFC 8785) written straight from its struct:
//! each object's keys are written in their canonical order (every key is
//! ASCII, so byte order is UTF-16 order), the event's `kind` tag among
//! them, with the same fields left out as serde leaves out. The same bytes
//! as [`canon::to_canonical_of`] gives through serde, without its reorder
//! buffer: that is what the run thread pays per event.
//!
//! Each struct is taken apart without `..`, so a field added to an event
//! does not compile until it is written here too; debug builds (every
//! test) also check each appended event against the general path.

use super::canon::{self, write_f64};
use super::event::*;
use serde_json::Value;

/// Append `event`'s canonical text to `out`.
pub fn write_event(out: &mut String, event: &Event) {
    match event {
        Event::RunStarted(s) => run_started(out, s),
        Event::RunResumed(r) => run_resumed(out, r),
        Event::Step(s) => step(out, s),
        Event::GateOpened(g) => gate_opened(out, g),
        Event::Decision(d) => decision(out, d),
        Event::CallIntent(c) => call_intent(out, c),
        Event::CallAnswer(a) => call_answer(out, a),
        Event::Error(e) => error(out, e),
        Event::RunEnded(e) => run_ended(out, e),
        Event::Capped(c) => capped(out, c),
    }
}

/// An object being written: `{` on the first key, `,` before the others.
struct Obj<'a> {
    out: &'a mut String,
    first: bool,
}

impl<'a> Obj<'a> {
    fn new(out: &'a mut String) -> Self {
        out.push('{');
        Obj { out, first: true }
    }

    /// Write `"key":` (`key` needs no escape; the caller keeps the order).
    fn key(&mut self, key: &str) -> &mut String {
        debug_assert!(key
            .bytes()
            .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\'));
        if !self.first {
            self.out.push(',');
        }
        self.first = false;
        self.out.push('"');
        self.out.push_str(key);
        self.out.push_str("\":");
        self.out
    }

    fn str(&mut self, key: &str, value: &str) {
        let out = self.key(key);
        string(out, value);
    }

    fn str_if(&mut self, key: &str, value: &str) {
        if !value.is_empty() {
            self.str(key, value);
        }
    }

    fn opt_str(&mut self, key: &str, value: &Option<String>) {
        if let Some(v) = value {
            self.str(key, v);
        }
    }

    fn u64(&mut self, key: &str, value: u64) {
        let out = self.key(key);
        write_u64(out, value);
    }

    fn bool(&mut self, key: &str, value: bool) {
        self.key(key).push_str(if value { "true" } else { "false" });
    }

    fn strs_if(&mut self, key: &str, values: &[String]) {
        if values.is_empty() {
            return;
        }
        let out = self.key(key);
        out.push('[');
        for (i, v) in values.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            string(out, v);
        }
        out.push(']');
    }

    fn kind(&mut self, event: &'static str) {
        self.str("kind", event);
    }

    fn end(self) {
        self.out.push('}');
    }
}

fn string(out: &mut String, s: &str) {
    crate::value::write_json_string(out, s);
}

/// As the canonical serializer writes integers: exact up to 2^53, past it
/// as the double they round to.
fn write_u64(out: &mut String, u: u64) {
    if u <= 1 << 53 {
        out.push_str(itoa::Buffer::new().format(u));
    } else {
        write_f64(out, u as f64);
    }
}

fn write_i64(out: &mut String, i: i64) {
    if i.unsigned_abs() <= 1 << 53 {
        out.push_str(itoa::Buffer::new().format(i));
    } else {
        write_f64(out, i as f64);
    }
}

fn run_started(out: &mut String, s: &RunStarted) {
    let RunStarted {
        run_id,
        at,
        door,
        tenant,
        trust,
        policy_digest,
        request,
        grants,
        components,
        env_names,
        cwd,
        digests,
    } = s;
    let mut o = Obj::new(out);
    o.str("at", at);
    if !components.is_empty() {
        let out = o.key("components");
        out.push('[');
        for (i, c) in components.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let ComponentRecord { name, digest } = c;
            let mut c = Obj::new(out);
            c.str("digest", digest);
            c.str("name", name);
            c.end();
        }
        out.push(']');
    }
    o.str_if("cwd", cwd);
    if !digests.is_v1() {
        o.u64("digests", u8::from(*digests).into());
    }
    o.str("door", door);
    o.strs_if("env_names", env_names);
    grants_record(o.key("grants"), grants);
    o.kind("run_started");
    o.str("policy_digest", policy_digest);
    request_record(o.key("request"), request);
    o.str("run_id", run_id);
    o.str("tenant", tenant);
    o.str("trust", trust);
    o.end();
}

fn request_record(out: &mut String, r: &RequestRecord) {
    let RequestRecord {
        kind,
        file,
        text,
        truncated,
        digest,
        args,
    } = r;
    let mut o = Obj::new(out);
    if !args.is_null() {
        canon::write_value(o.key("args"), args);
    }
    o.str("digest", digest);
    o.opt_str("file", file);
    o.str("kind", kind);
    request_text(o.key("text"), digest, text);
    if *truncated {
        o.bool("truncated", true);
    }
    o.end();
}

/// Request texts shorter than this are escaped as they come.
const TEXT_MEMO_MIN: usize = 512;
/// Request texts longer than this are not kept.
const TEXT_MEMO_MAX: usize = 64 << 10;
/// How many request texts are kept with their escaped form.
const TEXT_MEMO_KEPT: usize = 8;

/// The request texts kept ([`request_text`]), oldest first.
static TEXT_MEMO: std::sync::Mutex<Vec<Escaped>> = std::sync::Mutex::new(Vec::new());

/// A request text recorded before, with its JSON string literal.
struct Escaped {
    digest: String,
    text: String,
    literal: std::sync::Arc<str>,
}

/// Append the JSON string literal of a request's `text` (whose full text
/// has blake3 hex `digest`). A server runs the same few workflow files
/// over and over: the last [`TEXT_MEMO_KEPT`] texts of
/// [`TEXT_MEMO_MIN`]..=[`TEXT_MEMO_MAX`] bytes are kept with their
/// escaped form, found by the digest and taken only when the text is the
/// same text (compared whole: the digest is the caller's word, and a
/// file's next version is another text).
fn request_text(out: &mut String, digest: &str, text: &str) {
    use std::sync::Arc;
    if !(TEXT_MEMO_MIN..=TEXT_MEMO_MAX).contains(&text.len()) {
        string(out, text);
        return;
    }
    let found = TEXT_MEMO.lock().ok().and_then(|memo| {
        memo.iter()
            .find(|e| e.digest == digest && e.text == text)
            .map(|e| Arc::clone(&e.literal))
    });
    if let Some(literal) = found {
        out.push_str(&literal);
        return;
    }
    let start = out.len();
    string(out, text);
    let literal: Arc<str> = Arc::from(&out[start..]);
    if let Ok(mut memo) = TEXT_MEMO.lock() {
        if memo.len() >= TEXT_MEMO_KEPT {
            memo.remove(0);
        }
        memo.push(Escaped {
            digest: digest.to_string(),
            text: text.to_string(),
            literal,
        });
    }
}

fn grants_record(out: &mut String, g: &GrantsRecord) {
    let GrantsRecord {
        read,
        write,
        env,
        tools,
        models,
        clock_ms,
        seed,
    } = g;
    let mut o = Obj::new(out);
    if let Some(ms) = clock_ms {
        o.u64("clock_ms", *ms);
    }
    o.strs_if("env", env);
    o.strs_if("models", models);
    o.strs_if("read", read);
    if let Some(seed) = seed {
        o.str("seed", itoa::Buffer::new().format(*seed));
    }
    o.strs_if("tools", tools);
    o.strs_if("write", write);
    o.end();
}

fn run_resumed(out: &mut String, r: &RunResumed) {
    let RunResumed { at, door, gate } = r;
    let mut o = Obj::new(out);
    o.str("at", at);
    o.str("door", door);
    o.str_if("gate", gate);
    o.kind("run_resumed");
    o.end();
}

fn step(out: &mut String, s: &Step) {
    let Step {
        id,
        step_kind,
        name,
        component,
        fuel,
        wall_ms,
        limit,
        input_digest,
        output_digest,
        exit_code,
        output,
        replayable,
        ok,
        within,
    } = s;
    let mut o = Obj::new(out);
    o.opt_str("component", component);
    if let Some(code) = exit_code {
        write_i64(o.key("exit_code"), (*code).into());
    }
    if let Some(fuel) = fuel {
        o.u64("fuel", *fuel);
    }
    o.str("id", id);
    o.opt_str("input_digest", input_digest);
    o.kind("step");
    o.opt_str("limit", limit);
    o.str_if("name", name);
    o.bool("ok", *ok);
    o.opt_str("output", output);
    o.opt_str("output_digest", output_digest);
    if !*replayable {
        o.bool("replayable", false);
    }
    o.str("step_kind", step_kind);
    o.u64("wall_ms", *wall_ms);
    o.opt_str("within", within);
    o.end();
}

fn gate_opened(out: &mut String, g: &GateOpened) {
    let GateOpened {
        gate,
        step,
        prompt,
        preview_digest,
        plan_digest,
        approval_id,
    } = g;
    let mut o = Obj::new(out);
    o.opt_str("approval_id", approval_id);
    o.str("gate", gate);
    o.kind("gate_opened");
    o.str_if("plan_digest", plan_digest);
    o.str("preview_digest", preview_digest);
    o.str("prompt", prompt);
    o.str("step", step);
    o.end();
}

fn decision(out: &mut String, d: &Decision) {
    let Decision {
        decision,
        approver,
        decided_by,
        door,
        response_digest,
    } = d;
    let mut o = Obj::new(out);
    o.opt_str("approver", approver);
    o.opt_str("decided_by", decided_by);
    o.str("decision", decision);
    o.str("door", door);
    o.kind("decision");
    o.opt_str("response_digest", response_digest);
    o.end();
}

fn call_intent(out: &mut String, c: &CallIntent) {
    let CallIntent {
        target,
        name,
        request_digest,
    } = c;
    let mut o = Obj::new(out);
    o.kind("call_intent");
    o.str("name", name);
    o.str("request_digest", request_digest);
    o.str("target", target);
    o.end();
}

fn call_answer(out: &mut String, a: &CallAnswer) {
    let CallAnswer {
        request_digest,
        answer,
        replayed,
    } = a;
    let mut o = Obj::new(out);
    // The answer as its JSON text, in its own key order (event.rs).
    o.str("answer", &answer_text(answer));
    o.kind("call_answer");
    if *replayed {
        o.bool("replayed", true);
    }
    o.str("request_digest", request_digest);
    o.end();
}

fn answer_text(answer: &Value) -> String {
    serde_json::to_string(answer).unwrap_or_default()
}

fn error(out: &mut String, e: &ErrorEvent) {
    let ErrorEvent { step, message } = e;
    let mut o = Obj::new(out);
    o.kind("error");
    o.str("message", message);
    o.str_if("step", step);
    o.end();
}

fn run_ended(out: &mut String, e: &RunEnded) {
    let RunEnded {
        status,
        at,
        wall_ms,
        output_digest,
    } = e;
    let mut o = Obj::new(out);
    o.str("at", at);
    o.kind("run_ended");
    o.opt_str("output_digest", output_digest);
    o.str("status", status);
    o.u64("wall_ms", *wall_ms);
    o.end();
}

fn capped(out: &mut String, c: &Capped) {
    let Capped { limit_bytes } = c;
    let mut o = Obj::new(out);
    o.kind("capped");
    o.u64("limit_bytes", *limit_bytes);
    o.end();
}

#[cfg(test)]
#[path = "encode_tests.rs"]
mod tests;
