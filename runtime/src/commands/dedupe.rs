//! `dedupe`: drop items whose identity (JSON of the key, or of the whole
//! item) was already seen. Lazy; keeps the first occurrence.

use super::js::{dot_path, flag_string};
use super::{Command, Example, FlagSpec, ItemStream, Output, Signature};
use crate::dsl::Args;
use crate::error::Result;
use crate::kernel::Context;
use crate::value::to_js_json;
use std::collections::HashSet;

/// `dedupe [--key path]`.
pub struct Dedupe;

const HELP: &str = "dedupe — remove duplicate items (stable)\n\nUsage:\n  ... | dedupe\n  ... | dedupe --key id\n\nNotes:\n  - Keeps the first occurrence.\n";

impl Command for Dedupe {
    fn signature(&self) -> Signature {
        Signature {
            name: "dedupe",
            description: "Remove duplicate items, keeping first occurrence (stable)",
            flags: &[FlagSpec {
                name: "key",
                value: Some("path"),
                kind: super::FlagType::Text,
                description: "Dot-path key used for identity (defaults to whole item)",
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
                description: "whole items; identity is key-order sensitive",
                pipeline: "dedupe",
                input: r#"[{"a": 1, "b": 2}, {"a": 1, "b": 2}, {"b": 2, "a": 1}, 1, "1", 1]"#,
                output: r#"[{"a": 1, "b": 2}, {"b": 2, "a": 1}, 1, "1"]"#,
            },
            Example {
                description: "by key; items missing the key share one identity",
                pipeline: "dedupe --key id",
                input: r#"[{"id": 1, "v": "a"}, {"id": 1, "v": "b"}, {"v": "c"}, {"v": "d"}, {"id": null}]"#,
                output: r#"[{"id": 1, "v": "a"}, {"v": "c"}, {"id": null}]"#,
            },
            Example {
                description: "empty input",
                pipeline: "dedupe --key id",
                input: "[]",
                output: "[]",
            },
        ]
    }

    fn run(&self, args: &Args, input: ItemStream, _ctx: &Context) -> Result<Output> {
        let key = flag_string(args, "key").map(str::to_string);
        // `None` is JSON.stringify(undefined): every missing key shares it.
        let mut seen: HashSet<Option<String>> = HashSet::new();
        Ok(Output::Items(Box::new(input.filter(move |item| {
            let Ok(item) = item else { return true };
            let id = match &key {
                Some(k) => dot_path(item, k).map(|v| to_js_json(&v)),
                None => Some(to_js_json(item)),
            };
            seen.insert(id)
        }))))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn examples() {
        super::super::examples::check_examples(&super::Dedupe);
    }
}
