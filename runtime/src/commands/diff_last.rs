//! `diff.last`: compare the input with the snapshot stored under a key,
//! then store the input as the new snapshot.

use super::js::js_keys;
use super::state_set::single_or_array;
use super::{collect, stream_of, Command, Example, FlagSpec, ItemStream, Output, Signature};
use crate::dsl::{Args, FlagValue};
use crate::error::{Error, Result};
use crate::kernel::Context;
use crate::state::user_state_key;
use crate::state::Writer;
use crate::value::to_js_json;
use serde_json::{Map, Value};

/// `diff.last --key <stateKey>` (or a positional key).
pub struct DiffLast;

const HELP: &str = "diff.last — compare current items to last stored snapshot\n\nUsage:\n  <items> | diff.last --key <stateKey>\n\nOutput:\n  { changed, key, before, after }\n";

impl DiffLast {
    /// `args.key ?? args._[0]`: the key text and the value echoed as `key`.
    fn key(args: &Args) -> Result<(String, Value)> {
        let (text, echoed) = match args.flag("key") {
            Some(FlagValue::Bool(b)) => (b.to_string(), Value::Bool(*b)),
            Some(FlagValue::Str(s)) => (s.clone(), Value::String(s.clone())),
            None => match args.positional.first() {
                Some(s) => (s.clone(), Value::String(s.clone())),
                None => (String::new(), Value::Null),
            },
        };
        if text.is_empty() || echoed == Value::Bool(false) {
            return Err(Error::runtime("diff.last requires --key"));
        }
        user_state_key(&text)?;
        Ok((text, echoed))
    }
}

/// Objects with their keys sorted (UTF-16 order), recursively: the
/// reference's `stableStringify` before comparing.
fn sorted_keys(v: &Value) -> Value {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = js_keys(map);
            keys.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
            let mut out = Map::new();
            for k in keys {
                if let Some(x) = map.get(k) {
                    out.insert(k.clone(), sorted_keys(x));
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted_keys).collect()),
        other => other.clone(),
    }
}

/// The stored snapshot; a missing or corrupt file reads as null.
fn read_snapshot(ctx: &Context, key: &str) -> Result<Value> {
    Ok(ctx
        .state
        .user(Writer::Pipeline)
        .get_text(key)?
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or(Value::Null))
}

impl Command for DiffLast {
    fn signature(&self) -> Signature {
        Signature {
            name: "diff.last",
            description: "Compare current items to last stored snapshot",
            flags: &[FlagSpec {
                name: "key",
                value: Some("stateKey"),
                kind: super::FlagType::Text,
                description: "State key to diff against",
            }],
            positional: Some("State key (when --key is not given)"),
            side_effects: &["writes_state"],
        }
    }

    fn help(&self) -> &'static str {
        HELP
    }

    fn examples(&self) -> &'static [Example] {
        &[
            Example {
                description: "first run: nothing stored, so changed",
                pipeline: "diff.last --key snap",
                input: "[1, 2]",
                output: r#"[{"kind": "diff.last", "key": "snap", "changed": true, "before": null, "after": [1, 2]}]"#,
            },
            Example {
                description: "same value with other key order: unchanged",
                pipeline: "diff.last --key snap | map --unwrap after | pick b,a | diff.last snap",
                input: r#"[{"a": 1, "b": 2}]"#,
                output: r#"[{"kind": "diff.last", "key": "snap", "changed": false, "before": {"a": 1, "b": 2}, "after": {"b": 2, "a": 1}}]"#,
            },
            Example {
                description: "nothing stored and a null value: unchanged",
                pipeline: "diff.last --key snap",
                input: "[null]",
                output: r#"[{"kind": "diff.last", "key": "snap", "changed": false, "before": null, "after": null}]"#,
            },
        ]
    }

    fn validate(&self, args: &Args) -> Result<()> {
        Self::key(args).map(|_| ())
    }

    fn run(&self, args: &Args, input: ItemStream, ctx: &Context) -> Result<Output> {
        let (key, echoed) = Self::key(args)?;
        let after = single_or_array(collect(input)?);
        let before = read_snapshot(ctx, &key)?;
        let changed = to_js_json(&sorted_keys(&before)) != to_js_json(&sorted_keys(&after));
        // A cancelled run stores nothing.
        ctx.cancel.check()?;
        ctx.state.user(Writer::Pipeline).set(&key, &after)?;
        let mut out = Map::new();
        out.insert("kind".into(), Value::String("diff.last".into()));
        out.insert("key".into(), echoed);
        out.insert("changed".into(), Value::Bool(changed));
        out.insert("before".into(), before);
        out.insert("after".into(), after);
        Ok(Output::Items(stream_of(vec![Value::Object(out)])))
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
        super::super::examples::check_examples(&DiffLast);
    }

    fn diff(ctx: &Context, key: &str, items: Vec<Value>) -> Value {
        let args = Args {
            positional: vec![],
            flags: vec![("key".into(), FlagValue::Str(key.into()))],
        };
        let Ok(Output::Items(out)) = DiffLast.run(&args, stream_of(items), ctx) else {
            panic!("items expected")
        };
        collect(out).unwrap().remove(0)
    }

    #[test]
    fn compares_key_sorted_json_and_stores() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = crate::commands::test_context(Mode::Tool, StateStore::new(dir.path()));
        let first = diff(&ctx, "K", vec![json!({"a": 1, "b": {"y": 1, "x": 2}})]);
        assert_eq!(first["changed"], json!(true));
        let second = diff(&ctx, "k", vec![json!({"b": {"x": 2, "y": 1}, "a": 1})]);
        assert_eq!(second["changed"], json!(false));
        assert_eq!(second["before"], json!({"a": 1, "b": {"y": 1, "x": 2}}));
        let third = diff(&ctx, "k", vec![json!(1), json!(2)]);
        assert_eq!(third["changed"], json!(true));
        assert_eq!(ctx.state.get("k").unwrap(), Some(json!([1, 2])));
    }

    #[test]
    fn corrupt_snapshot_reads_as_null() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = crate::commands::test_context(Mode::Tool, StateStore::new(dir.path()));
        std::fs::write(dir.path().join("k.json"), "{not json").unwrap();
        let out = diff(&ctx, "k", vec![json!(1)]);
        assert_eq!(out["before"], json!(null));
        assert_eq!(out["changed"], json!(true));
    }

    #[test]
    fn key_is_required() {
        let err = DiffLast.validate(&Args::default()).unwrap_err();
        assert_eq!(err.to_string(), "diff.last requires --key");
    }
}
