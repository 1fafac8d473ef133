//! `state.set`: store the input (one item as itself, else an array).

use super::state_get::state_key;
use super::{collect, stream_of, Command, Example, ItemStream, Output, Signature};
use crate::dsl::Args;
use crate::error::Result;
use crate::kernel::Context;
use crate::state::Writer;
use serde_json::Value;

/// `state.set <key>`.
pub struct StateSet;

const HELP: &str = "state.set — write a JSON value to Lobster state\n\nUsage:\n  <value> | state.set <key>\n\nNotes:\n  - Consumes the entire input stream; stores a single JSON value.\n";

const MISSING: &str = "state.set requires a key";

/// One item is stored as itself; zero or several as an array.
pub(crate) fn single_or_array(mut items: Vec<Value>) -> Value {
    if items.len() == 1 {
        items.pop().unwrap_or(Value::Null)
    } else {
        Value::Array(items)
    }
}

impl Command for StateSet {
    fn signature(&self) -> Signature {
        Signature {
            name: "state.set",
            description: "Write a JSON value to Lobster state",
            flags: &[],
            positional: Some("Key"),
            side_effects: &["writes_state"],
        }
    }

    fn help(&self) -> &'static str {
        HELP
    }

    fn examples(&self) -> &'static [Example] {
        &[
            Example {
                description: "one item is stored (and echoed) as itself",
                pipeline: "state.set k",
                input: r#"[{"a": 1}]"#,
                output: r#"[{"a": 1}]"#,
            },
            Example {
                description: "several items are stored as an array",
                pipeline: "state.set k",
                input: "[1, 2]",
                output: "[[1, 2]]",
            },
            Example {
                description: "no items store an empty array",
                pipeline: "state.set k | state.get K",
                input: "[]",
                output: "[[]]",
            },
        ]
    }

    fn validate(&self, args: &Args) -> Result<()> {
        state_key(args, MISSING).map(|_| ())
    }

    fn run(&self, args: &Args, input: ItemStream, ctx: &Context) -> Result<Output> {
        let key = state_key(args, MISSING)?;
        let value = single_or_array(collect(input)?);
        ctx.cancel.check()?;
        ctx.state.user(Writer::Pipeline).set(key, &value)?;
        Ok(Output::Items(stream_of(vec![value])))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::Mode;
    use crate::state::StateStore;
    use serde_json::json;

    #[test]
    fn examples() {
        super::super::examples::check_examples(&StateSet);
    }

    #[test]
    fn writes_the_file_and_keys_are_case_insensitive() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = crate::commands::test_context(Mode::Tool, StateStore::new(dir.path()));
        let args = Args {
            positional: vec!["Demo KEY".into()],
            flags: vec![],
        };
        let out = StateSet
            .run(&args, stream_of(vec![json!({"x": [1]})]), &ctx)
            .unwrap();
        let Output::Items(items) = out else {
            panic!("items expected")
        };
        assert_eq!(collect(items).unwrap(), vec![json!({"x": [1]})]);
        let text = std::fs::read_to_string(dir.path().join("demo_key.json")).unwrap();
        assert_eq!(text, "{\n  \"x\": [\n    1\n  ]\n}\n");
        assert_eq!(ctx.state.get("demo_KEY").unwrap(), Some(json!({"x": [1]})));
        let err = StateSet.validate(&Args::default()).unwrap_err();
        assert_eq!(err.to_string(), "state.set requires a key");
    }
}
