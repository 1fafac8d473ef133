//! `groupBy`: collect items into `{key, items, count}` groups, in order of
//! first appearance.

use super::js::{dot_path, js_trim};
use super::{collect, stream_of, Command, Example, FlagSpec, ItemStream, Output, Signature};
use crate::dsl::Args;
use crate::error::{Error, Result};
use crate::kernel::Context;
use crate::value::{to_js_json, Item};
use serde_json::{Map, Value};
use std::collections::HashMap;

/// `groupBy --key path`.
pub struct GroupBy;

const HELP: &str = "groupBy — group items by a key\n\nUsage:\n  ... | groupBy --key from\n\nOutput:\n  Stream of { key, items, count } objects\n\nNotes:\n  - Group order is stable (order of first appearance).\n";

impl GroupBy {
    fn key(args: &Args) -> Result<String> {
        // `String(args.key ?? "").trim()`: a bare `--key` is the path "true".
        let key = js_trim(args.str("key").unwrap_or("")).to_string();
        if key.is_empty() {
            return Err(Error::runtime("groupBy requires --key"));
        }
        Ok(key)
    }
}

fn group(items: Vec<Item>, key: &str) -> Vec<Item> {
    let mut index: HashMap<Option<String>, usize> = HashMap::new();
    let mut groups: Vec<(Option<Value>, Vec<Item>)> = Vec::new();
    for item in items {
        let kv = dot_path(&item, key).map(|v| v.into_owned());
        let id = kv.as_ref().map(to_js_json);
        let slot = *index.entry(id).or_insert_with(|| {
            groups.push((kv, Vec::new()));
            groups.len() - 1
        });
        groups[slot].1.push(item);
    }
    groups
        .into_iter()
        .map(|(kv, items)| {
            let mut out = Map::new();
            // An undefined key is omitted from the object, as in JSON.
            if let Some(kv) = kv {
                out.insert("key".into(), kv);
            }
            let count = items.len() as u64;
            out.insert("items".into(), Value::Array(items));
            out.insert("count".into(), Value::from(count));
            Value::Object(out)
        })
        .collect()
}

impl Command for GroupBy {
    fn signature(&self) -> Signature {
        Signature {
            name: "groupBy",
            description: "Group items by a key (stable group order)",
            flags: &[FlagSpec {
                name: "key",
                value: Some("path"),
                kind: super::FlagType::Text,
                description: "Dot-path key to group by (required)",
            }],
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
                description: "groups in order of first appearance",
                pipeline: "groupBy --key from",
                input: r#"[{"from": "b", "i": 1}, {"from": "a", "i": 2}, {"from": "b", "i": 3}]"#,
                output: r#"[{"key": "b", "items": [{"from": "b", "i": 1}, {"from": "b", "i": 3}], "count": 2}, {"key": "a", "items": [{"from": "a", "i": 2}], "count": 1}]"#,
            },
            Example {
                description: "a missing key groups apart from null, and `key` is omitted",
                pipeline: "groupBy --key u.id",
                input: r#"[{"u": {}}, {"u": {"id": null}}, {"u": null}, {"u": {"id": 1}}, {"u": {"id": "1"}}]"#,
                output: r#"[{"items": [{"u": {}}, {"u": null}], "count": 2}, {"key": null, "items": [{"u": {"id": null}}], "count": 1}, {"key": 1, "items": [{"u": {"id": 1}}], "count": 1}, {"key": "1", "items": [{"u": {"id": "1"}}], "count": 1}]"#,
            },
            Example {
                description: "empty input gives no groups",
                pipeline: "groupBy --key from",
                input: "[]",
                output: "[]",
            },
        ]
    }

    fn validate(&self, args: &Args) -> Result<()> {
        Self::key(args).map(|_| ())
    }

    fn run(&self, args: &Args, input: ItemStream, _ctx: &Context) -> Result<Output> {
        let key = Self::key(args)?;
        let items = collect(input)?;
        Ok(Output::Items(stream_of(group(items, &key))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn examples() {
        super::super::examples::check_examples(&GroupBy);
    }

    #[test]
    fn key_is_required() {
        let err = GroupBy.validate(&Args::default()).unwrap_err();
        assert_eq!(err.to_string(), "groupBy requires --key");
        let args = Args {
            positional: vec![],
            flags: vec![("key".into(), crate::dsl::FlagValue::Str("  ".into()))],
        };
        assert!(GroupBy.validate(&args).is_err());
    }

    #[test]
    fn object_keys_group_by_json_text() {
        let got = group(vec![json!({"k": {"a": 1}}), json!({"k": {"a": 1}})], "k");
        assert_eq!(got[0]["count"], json!(2));
    }
}
