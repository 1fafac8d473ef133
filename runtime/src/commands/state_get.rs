//! `state.get`: read one JSON value from the state store (null if missing).

use super::{collect, stream_of, Command, Example, ItemStream, Output, Signature};
use crate::dsl::Args;
use crate::error::{Error, Result};
use crate::kernel::Context;
use crate::state::user_state_key;
use crate::state::Writer;
use serde_json::Value;

/// `state.get <key>`.
pub struct StateGet;

const HELP: &str = "state.get — read a JSON value from Lobster state\n\nUsage:\n  state.get <key>\n\nEnv:\n  LOBSTER_STATE_DIR overrides storage directory\n";

/// The key of `state.get`/`state.set`: the first positional, checked.
pub(crate) fn state_key<'a>(args: &'a Args, missing: &str) -> Result<&'a str> {
    match args.positional.first() {
        Some(k) if !k.is_empty() => {
            user_state_key(k)?;
            Ok(k)
        }
        _ => Err(Error::runtime(missing.to_string())),
    }
}

const MISSING: &str = "state.get requires a key";

impl Command for StateGet {
    fn signature(&self) -> Signature {
        Signature {
            name: "state.get",
            description: "Read a JSON value from Lobster state",
            flags: &[],
            positional: Some("Key"),
            side_effects: &["reads_state"],
        }
    }

    fn help(&self) -> &'static str {
        HELP
    }

    fn examples(&self) -> &'static [Example] {
        &[
            Example {
                description: "a missing key reads as null",
                pipeline: "state.get never-written",
                input: "[]",
                output: "[null]",
            },
            Example {
                description: "keys are case-insensitive; input is drained",
                pipeline: "state.set My/Key | state.get my_key",
                input: r#"[{"a": 1}]"#,
                output: r#"[{"a": 1}]"#,
            },
        ]
    }

    fn validate(&self, args: &Args) -> Result<()> {
        state_key(args, MISSING).map(|_| ())
    }

    fn run(&self, args: &Args, input: ItemStream, ctx: &Context) -> Result<Output> {
        let key = state_key(args, MISSING)?;
        collect(input)?;
        ctx.cancel.check()?;
        let value = ctx
            .state
            .user(Writer::Pipeline)
            .get(key)?
            .unwrap_or(Value::Null);
        Ok(Output::Items(stream_of(vec![value])))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn examples() {
        super::super::examples::check_examples(&StateGet);
    }

    #[test]
    fn key_errors() {
        let err = StateGet.validate(&Args::default()).unwrap_err();
        assert_eq!(err.to_string(), "state.get requires a key");
        let args = Args {
            positional: vec!["///".into()],
            flags: vec![],
        };
        let err = StateGet.validate(&args).unwrap_err();
        assert_eq!(err.to_string(), "state key is empty/invalid");
    }
}
