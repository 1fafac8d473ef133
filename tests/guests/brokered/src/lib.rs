//! A `lobster:step@0.2.0` step that uses the host broker, for the broker
//! tests (tests/cli/wasm_broker.rs). `describe` asks for tool `echo` and for
//! model calls; `run` calls whatever `--tool` names (described or not, so the
//! tests can watch the host refuse), `--calls` times, or asks the model with
//! `--llm` about every input item. It may also use tools `sessions_list` and
//! `slow` (optional: described as `tool("sessions_list?")`, `tool("slow?")`;
//! `slow` is the stub gateway's, for tests/cli/recovery.rs); with `--soft` a
//! refused call becomes an `{"error"}` item instead of failing the step.

use lobster_guest::{json, llm, tools, Args, Error, Flag, Step, StepInfo, Value};

struct Brokered;

impl Step for Brokered {
    fn describe() -> StepInfo {
        StepInfo::new(
            "brokered",
            "0.2.0",
            "Call gateway tools and models through the broker",
        )
        .flag(Flag::text("tool", "Tool to call"))
        .flag(Flag::text("args", "Tool arguments (JSON object)").default("{}"))
        .flag(Flag::number("calls", "How many distinct calls").default("1"))
        .flag(Flag::switch("llm", "Classify every item with the model"))
        .flag(Flag::switch(
            "soft",
            "Report a refused tool call as an item",
        ))
        .needs_tool("echo")
        .may_use_tool("sessions_list")
        .may_use_tool("slow")
        .needs_llm()
    }

    fn run(args: Args, items: Vec<Value>) -> Result<Vec<Value>, Error> {
        let mut out = Vec::new();
        if let Some(tool) = args.str("tool") {
            let base: Value =
                lobster_guest::serde_json::from_str(args.str("args").unwrap_or("{}"))?;
            let calls = args
                .str("calls")
                .and_then(|c| c.parse::<u32>().ok())
                .unwrap_or(1);
            for n in 0..calls {
                let mut a = base.clone();
                if let Value::Object(m) = &mut a {
                    m.insert("n".into(), json!(n));
                }
                match tools::invoke(tool, Some("json"), &a) {
                    Ok(items) => out.extend(items),
                    Err(e) if args.is_set("soft") => out.push(json!({"error": e.to_string()})),
                    Err(e) => return Err(e),
                }
            }
        }
        if args.is_set("llm") {
            let schema = json!({
                "type": "object",
                "properties": {"intent": {"type": "string"}, "draft": {"type": "string"}},
                "required": ["intent", "draft"]
            });
            for item in &items {
                out.push(llm::ask("Classify and draft a reply.", item, &schema)?);
            }
        }
        Ok(out)
    }
}

lobster_guest::export_step!(Brokered);
