//! `hostile-broker`: a `lobster:step@0.2.0` step that abuses the host broker
//! on purpose (tests/cli/broker_hostile.rs). It describes tool `echo` and
//! model calls; the first positional picks the abuse, made through the raw
//! `broker` import so nothing in the SDK filters it:
//!
//! - `huge-args`: `invoke-tool("echo")` with `--bytes` of arguments;
//! - `undescribed`: `invoke-tool("message")`, a tool it did not describe;
//! - `flood`: `--calls` distinct `echo` calls (the tests set a small
//!   `[max] tool_calls`);
//! - `malformed`: `invoke-tool` with args that are not JSON, and not an object;
//! - `huge-schema`: `llm-json` with a schema of `--bytes`;
//! - `big-answer`: one `echo`-like call to tool `big` (`--bytes` of answer;
//!   described with `big` only when asked, see `describe`).
//!
//! Every refusal is caught and counted, never turned into a failure, and the
//! step ends with one ordinary `echo` call: its output item says how many
//! calls were answered and refused, the distinct refusal messages, and
//! whether the host still answered afterwards.

use lobster_guest::bindings::lobster::step::broker;
use lobster_guest::{json, Args, Error, Flag, Step, StepInfo, Value};

struct HostileBroker;

#[derive(Default)]
struct Tally {
    answered: u64,
    refused: u64,
    errors: Vec<String>,
}

impl Tally {
    fn note(&mut self, r: Result<String, String>) {
        match r {
            Ok(_) => self.answered += 1,
            Err(e) => {
                self.refused += 1;
                if !self.errors.contains(&e) {
                    self.errors.push(e);
                }
            }
        }
    }
}

impl Step for HostileBroker {
    fn describe() -> StepInfo {
        StepInfo::new(
            "hostile-broker",
            "0.2.0",
            "Abuse the host broker on purpose (tests)",
        )
        .flag(Flag::number("bytes", "Size of the oversized part").default("8000000"))
        .flag(Flag::number("calls", "Calls for flood").default("1003"))
        .needs_tool("echo")
        .needs_tool("big")
        .needs_llm()
    }

    fn run(args: Args, _items: Vec<Value>) -> Result<Vec<Value>, Error> {
        let pos = args.positional();
        let mode = pos.first().cloned().unwrap_or_default();
        let num = |k: &str, d: u64| args.str(k).and_then(|v| v.parse::<u64>().ok()).unwrap_or(d);
        let bytes = num("bytes", 8_000_000) as usize;
        let mut t = Tally::default();
        match mode.as_str() {
            "huge-args" => {
                let args = format!("{{\"blob\":\"{}\"}}", "x".repeat(bytes));
                t.note(broker::invoke_tool("echo", Some("json"), &args));
            }
            "undescribed" => t.note(broker::invoke_tool("message", Some("send"), "{}")),
            "flood" => {
                for n in 0..num("calls", 1003) {
                    t.note(broker::invoke_tool("echo", None, &format!("{{\"n\":{n}}}")));
                }
            }
            "malformed" => {
                t.note(broker::invoke_tool("echo", None, "{\"unterminated\": "));
                t.note(broker::invoke_tool("echo", None, "[1, 2]"));
            }
            "huge-schema" => {
                let mut props = serde_props(bytes);
                props.push('}');
                let req = format!(
                    "{{\"prompt\":\"p\",\"input\":{{}},\"schema\":{{\"type\":\"object\",\"properties\":{props}}}}}"
                );
                t.note(broker::llm_json(&req));
            }
            "big-answer" => {
                t.note(broker::invoke_tool(
                    "big",
                    None,
                    &format!("{{\"bytes\":{bytes}}}"),
                ));
            }
            other => return Err(Error::InvalidArgs(format!("unknown mode {other:?}"))),
        }
        // The host must still answer an ordinary call afterwards (unless
        // the flood spent the budget, which the item then shows).
        let after = broker::invoke_tool("echo", None, "{\"after\":true}");
        Ok(vec![json!({
            "mode": mode,
            "answered": t.answered,
            "refused": t.refused,
            "errors": t.errors,
            "after": match after { Ok(_) => json!("answered"), Err(e) => json!(e) },
        })])
    }
}

/// `{"p0":{"type":"string"},…` of about `bytes` bytes (without the closing brace).
fn serde_props(bytes: usize) -> String {
    let mut s = String::from("{");
    let mut n = 0;
    while s.len() < bytes {
        if n > 0 {
            s.push(',');
        }
        s.push_str(&format!("\"p{n}\":{{\"type\":\"string\"}}"));
        n += 1;
    }
    s
}

lobster_guest::export_step!(HostileBroker);
