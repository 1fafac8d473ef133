//! `commands.list`: describe every registered command, then every step on
//! the step path, for agents.

use super::{collect, stream_of, Command, Example, FlagType, ItemStream, Output, Signature};
use crate::dsl::Args;
use crate::error::Result;
use crate::kernel::Context;
use serde_json::{json, Map, Value};
use std::collections::HashMap;

/// `commands.list`.
pub struct CommandsList;

const HELP: &str = "commands.list — list available Lobster pipeline commands\n\nUsage:\n  commands.list\n\nNotes:\n  - Intended for agents (e.g. OpenClaw) to discover available pipeline stages dynamically.\n  - Output includes name/description plus optional metadata (argsSchema/examples/sideEffects) when provided by commands.\n";

/// A JSON Schema of the flags and positionals, shaped as the reference's
/// `meta.argsSchema` (`{type, properties, required}`).
fn args_schema(sig: &Signature) -> Value {
    let mut props = Map::new();
    for f in sig.flags {
        // Values are text in the pipeline language; the type says how the
        // command reads it.
        let prop = match f.kind {
            FlagType::Switch => json!({"type": "boolean", "description": f.description}),
            FlagType::Text => json!({"type": "string", "description": f.description}),
            FlagType::Number => json!({"type": "number", "description": f.description}),
            FlagType::Integer => json!({"type": "integer", "description": f.description}),
            FlagType::Json => json!({
                "type": "string",
                "contentMediaType": "application/json",
                "description": f.description,
            }),
        };
        props.insert(f.name.to_string(), prop);
    }
    if let Some(desc) = sig.positional {
        props.insert(
            "_".into(),
            json!({"type": "array", "items": {"type": "string"}, "description": desc}),
        );
    }
    json!({"type": "object", "properties": props, "required": []})
}

/// The runnable examples; null when there are none.
fn examples(list: &[Example]) -> Value {
    if list.is_empty() {
        return Value::Null;
    }
    let parse = |s: &str| serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.into()));
    Value::Array(
        list.iter()
            .map(|e| {
                json!({
                    "description": e.description,
                    "pipeline": e.pipeline,
                    "input": parse(e.input),
                    "output": parse(e.output),
                })
            })
            .collect(),
    )
}

/// Where an entry's data lies. A [`Signature`] and its examples are
/// `'static` (a step's are leaked once, when it is interned), so the same
/// addresses and lengths always hold the same text.
type Key = [usize; 12];

fn key(sig: &Signature, examples: &[Example]) -> Key {
    let text = |s: &str| [s.as_ptr() as usize, s.len()];
    let [n, nl] = text(sig.name);
    let [d, dl] = text(sig.description);
    let [p, pl] = sig.positional.map_or([0, usize::MAX], text);
    [
        n,
        nl,
        d,
        dl,
        sig.flags.as_ptr() as usize,
        sig.flags.len(),
        p,
        pl,
        sig.side_effects.as_ptr() as usize,
        sig.side_effects.len(),
        examples.as_ptr() as usize,
        examples.len(),
    ]
}

/// Most entries a thread keeps (each is a few KiB).
const KEPT: usize = 4096;

thread_local! {
    /// The entries this thread built. Per thread, not per process: a
    /// server's runs list on many threads at once, and one shared map's
    /// lock was contended on every entry of every run.
    static KEPT_ENTRIES: std::cell::RefCell<HashMap<Key, Value>> = Default::default();
}

/// One inventory entry: built once per thread for each command or
/// interned step (building it parses every example's JSON, and a server
/// lists the same commands for every run), then cloned.
fn describe(cmd: &dyn Command) -> Value {
    let k = key(&cmd.signature(), cmd.examples());
    KEPT_ENTRIES.with(|kept| {
        if let Some(v) = kept.borrow().get(&k) {
            return v.clone();
        }
        let v = build(cmd);
        let mut kept = kept.borrow_mut();
        if kept.len() >= KEPT {
            kept.clear();
        }
        kept.insert(k, v.clone());
        v
    })
}

/// [`describe`]'s entry, built.
fn build(cmd: &dyn Command) -> Value {
    let sig = cmd.signature();
    // Always an array, `[]` for pure commands, as the reference's metadata.
    let side_effects = json!(sig.side_effects);
    let mut out = Map::new();
    out.insert("name".into(), json!(sig.name));
    out.insert("description".into(), json!(sig.description));
    out.insert("argsSchema".into(), args_schema(&sig));
    out.insert("examples".into(), examples(cmd.examples()));
    out.insert("sideEffects".into(), side_effects);
    Value::Object(out)
}

impl Command for CommandsList {
    fn signature(&self) -> Signature {
        Signature {
            name: "commands.list",
            description: "List available Lobster pipeline commands",
            flags: &[],
            positional: None,
            side_effects: &[],
        }
    }

    fn help(&self) -> &'static str {
        HELP
    }

    fn examples(&self) -> &'static [Example] {
        &[
            Example {
                description: "the input is drained; it lists itself too",
                pipeline: "commands.list | where name==commands.list | pick name",
                input: "[1, 2]",
                output: r#"[{"name": "commands.list"}]"#,
            },
            Example {
                description: "one entry per command, with its metadata",
                pipeline: "commands.list | where name==head | pick name,description,sideEffects",
                input: "[]",
                output: r#"[{"name": "head", "description": "Take first N items", "sideEffects": []}]"#,
            },
        ]
    }

    fn run(&self, _args: &Args, input: ItemStream, ctx: &Context) -> Result<Output> {
        collect(input)?;
        let mut items: Vec<Value> = ctx.registry.iter().map(describe).collect();
        // Then the steps on the step path (a built-in name always wins).
        if let Some(steps) = ctx.registry.steps() {
            for name in steps.names() {
                if ctx.registry.get(&name).is_some() {
                    continue;
                }
                if let Ok(Some(step)) = steps.resolve(&name) {
                    items.push(describe(step));
                }
            }
        }
        Ok(Output::Items(stream_of(items)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn examples() {
        super::super::examples::check_examples(&CommandsList);
    }

    #[test]
    fn a_kept_entry_is_the_one_built() {
        let reg = crate::commands::builtin();
        for cmd in reg.iter() {
            // Twice: the second comes from what the first kept.
            assert_eq!(describe(cmd), build(cmd));
            assert_eq!(describe(cmd), build(cmd));
        }
        // Entries of different commands never share a key.
        let keys: std::collections::BTreeSet<Key> = reg
            .iter()
            .map(|c| key(&c.signature(), c.examples()))
            .collect();
        assert_eq!(keys.len(), reg.names().len());
    }

    #[test]
    fn lists_every_registered_command_in_order() {
        let reg = crate::commands::builtin();
        let items: Vec<Value> = reg.iter().map(describe).collect();
        let names: Vec<&str> = items.iter().filter_map(|v| v["name"].as_str()).collect();
        assert_eq!(names, reg.names());
        assert!(names.contains(&"commands.list"));
        let sort = items.iter().find(|v| v["name"] == "sort").cloned();
        let sort = sort.unwrap_or(Value::Null);
        assert_eq!(sort["argsSchema"]["properties"]["desc"]["type"], "boolean");
        assert_eq!(sort["argsSchema"]["properties"]["key"]["type"], "string");
        assert!(sort["examples"].is_array());
        let set = items.iter().find(|v| v["name"] == "state.set").cloned();
        assert_eq!(
            set.unwrap_or(Value::Null)["sideEffects"],
            json!(["writes_state"])
        );
        // Every built-in has runnable examples, and flags are typed by meaning.
        for item in &items {
            assert!(
                item["examples"].as_array().is_some_and(|e| !e.is_empty()),
                "{} has no examples",
                item["name"]
            );
        }
        let prop = |cmd: &str, flag: &str| {
            let item = items.iter().find(|v| v["name"] == cmd).cloned();
            item.unwrap_or(Value::Null)["argsSchema"]["properties"][flag].clone()
        };
        assert_eq!(prop("approve", "limit")["type"], "integer");
        assert_eq!(prop("head", "n")["type"], "number");
        assert_eq!(prop("llm.invoke", "temperature")["type"], "number");
        assert_eq!(prop("llm.invoke", "max-output-tokens")["type"], "integer");
        assert_eq!(
            prop("ask", "schema")["contentMediaType"],
            "application/json"
        );
        assert_eq!(prop("approve", "emit")["type"], "boolean");
        let json_cmd = items.iter().find(|v| v["name"] == "json").cloned();
        assert_eq!(
            json_cmd.unwrap_or(Value::Null)["argsSchema"],
            json!({"type": "object", "properties": {}, "required": []})
        );
    }
}
