//! `pick`: keep only the listed top-level fields of each object. Lazy.

use super::js::{js_prop, js_trim};
use super::{Command, Example, ItemStream, Output, Signature};
use crate::dsl::Args;
use crate::error::{Error, Result};
use crate::kernel::Context;
use serde_json::{Map, Value};

/// `pick f1,f2,…`.
pub struct Pick;

const HELP: &str = "pick — project fields from objects\n\nUsage:\n  ... | pick id,subject,from\n";

impl Pick {
    fn fields(args: &Args) -> Result<Vec<String>> {
        match args.positional.first() {
            Some(spec) if !spec.is_empty() => Ok(spec
                .split(',')
                .map(|s| js_trim(s).to_string())
                .filter(|s| !s.is_empty())
                .collect()),
            _ => Err(Error::runtime("pick requires a comma-separated field list")),
        }
    }
}

/// Objects (arrays too, as in JavaScript) are projected; everything else passes.
fn project(item: Value, fields: &[String]) -> Value {
    if !matches!(item, Value::Object(_) | Value::Array(_)) {
        return item;
    }
    let mut out = Map::new();
    for f in fields {
        // Missing keys are `undefined` and vanish from JSON.
        if let Some(v) = js_prop(&item, f) {
            out.insert(f.clone(), v.into_owned());
        }
    }
    Value::Object(out)
}

impl Command for Pick {
    fn signature(&self) -> Signature {
        Signature {
            name: "pick",
            description: "Project fields from objects",
            flags: &[],
            positional: Some("First positional arg is a comma-separated list of fields"),
            side_effects: &[],
        }
    }

    fn help(&self) -> &'static str {
        HELP
    }

    fn examples(&self) -> &'static [Example] {
        &[
            Example {
                description: "project two fields; missing ones disappear",
                pipeline: "pick id,title",
                input: r#"[{"id": 1, "title": "a", "body": "x"}, {"id": 2}]"#,
                output: r#"[{"id": 1, "title": "a"}, {"id": 2}]"#,
            },
            Example {
                description: "non-objects and null pass through unchanged",
                pipeline: "pick id",
                input: r#"[null, 3, "s", {"id": null}]"#,
                output: r#"[null, 3, "s", {"id": null}]"#,
            },
            Example {
                description: "names are trimmed and empty names dropped",
                pipeline: "pick ' a , ,b'",
                input: r#"[{"a": 1, "b": 2, "c": 3}]"#,
                output: r#"[{"a": 1, "b": 2}]"#,
            },
        ]
    }

    fn validate(&self, args: &Args) -> Result<()> {
        Self::fields(args).map(|_| ())
    }

    fn run(&self, args: &Args, input: ItemStream, _ctx: &Context) -> Result<Output> {
        let fields = Self::fields(args)?;
        Ok(Output::Items(Box::new(
            input.map(move |item| item.map(|v| project(v, &fields))),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn examples() {
        super::super::examples::check_examples(&Pick);
    }

    #[test]
    fn arrays_are_objects_in_javascript() {
        let f = vec!["0".to_string(), "length".to_string()];
        assert_eq!(project(json!([7, 8]), &f), json!({"0": 7, "length": 2}));
    }

    #[test]
    fn field_list_is_required() {
        let err = Pick.validate(&Args::default()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "pick requires a comma-separated field list"
        );
    }
}
