//! `map`: wrap, unwrap, or add templated string fields to each item. Lazy.

use super::js::{dot_path, flag_string, js_prop, js_trim};
use super::template::replace_placeholders;
use super::{Command, Example, FlagSpec, ItemStream, Output, Signature};
use crate::dsl::Args;
use crate::error::{Error, Result};
use crate::kernel::Context;
use crate::value::{to_js_json, Item};
use serde_json::{Map, Value};

/// `map [--wrap name | --unwrap name] [k=v …]`.
pub struct MapCmd;

const HELP: &str = "map — transform items\n\nUsage:\n  ... | map --wrap item\n  ... | map --unwrap item\n  ... | map foo=bar id={{id}}\n\nNotes:\n  - Assignments are added to an object item (preserves existing fields).\n  - Assignment values support template placeholders like {{id}} and {{nested.field}}.\n";

struct Plan {
    wrap: Option<String>,
    unwrap: Option<String>,
    assignments: Vec<(String, String)>,
}

impl MapCmd {
    fn plan(args: &Args) -> Result<Plan> {
        let wrap = flag_string(args, "wrap").map(str::to_string);
        let unwrap = flag_string(args, "unwrap").map(str::to_string);
        if wrap.is_some() && unwrap.is_some() {
            return Err(Error::runtime("map cannot use both --wrap and --unwrap"));
        }
        let assignments = args
            .positional
            .iter()
            .filter_map(|tok| {
                let (k, v) = tok.split_once('=')?;
                let k = js_trim(k);
                (!k.is_empty()).then(|| (k.to_string(), v.to_string()))
            })
            .collect();
        Ok(Plan {
            wrap,
            unwrap,
            assignments,
        })
    }
}

/// map.ts `renderTemplate`: `{{path}}` → "" for missing/null, strings raw,
/// anything else as compact JSON.
fn render(tpl: &str, ctx: &Item) -> String {
    let out: Result<String> = replace_placeholders(tpl, |expr| {
        let val = if expr == "." || expr == "this" {
            Some(std::borrow::Cow::Borrowed(ctx))
        } else {
            dot_path(ctx, expr)
        };
        Ok(match val.as_deref() {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(other) => to_js_json(other),
        })
    });
    out.unwrap_or_default()
}

fn apply(plan: &Plan, item: Item) -> Item {
    if let Some(name) = &plan.unwrap {
        // `undefined` for non-objects and missing fields; it prints as null.
        return match &item {
            Value::Object(_) | Value::Array(_) => js_prop(&item, name).map(|v| v.into_owned()),
            _ => None,
        }
        .unwrap_or(Value::Null);
    }
    let wrapped = plan.wrap.is_some();
    let mut cur = match &plan.wrap {
        Some(name) => {
            let mut m = Map::new();
            m.insert(name.clone(), item.clone());
            Value::Object(m)
        }
        None => item.clone(),
    };
    if plan.assignments.is_empty() {
        return cur;
    }
    // Without --wrap, an object item is mutated in place in the reference,
    // so later placeholders see earlier assignments.
    let in_place = !wrapped && cur.is_object();
    if !cur.is_object() {
        let mut m = Map::new();
        m.insert("value".into(), cur);
        cur = Value::Object(m);
    }
    for (key, tpl) in &plan.assignments {
        let text = if in_place {
            render(tpl, &cur)
        } else {
            render(tpl, &item)
        };
        if let Value::Object(m) = &mut cur {
            m.insert(key.clone(), Value::String(text));
        }
    }
    cur
}

impl Command for MapCmd {
    fn signature(&self) -> Signature {
        Signature {
            name: "map",
            description: "Transform items (wrap/unwrap/add fields)",
            flags: &[
                FlagSpec {
                    name: "wrap",
                    value: Some("name"),
                    kind: super::FlagType::Text,
                    description: "Wrap each item as {wrap: item}",
                },
                FlagSpec {
                    name: "unwrap",
                    value: Some("name"),
                    kind: super::FlagType::Text,
                    description: "Unwrap a field (yield item[unwrap])",
                },
            ],
            positional: Some("Optional assignments like key=value (value supports {{path}})"),
            side_effects: &[],
        }
    }

    fn help(&self) -> &'static str {
        HELP
    }

    fn examples(&self) -> &'static [Example] {
        &[
            Example {
                description: "unwrap a field; missing fields and non-objects give null",
                pipeline: "map --unwrap a",
                input: r#"[{"a": 1}, {"b": 2}, 5, null]"#,
                output: "[1, null, null, null]",
            },
            Example {
                description: "wrap, then assign (placeholders see the original item)",
                pipeline: "map --wrap item tag=x{{id}}",
                input: r#"[{"id": 7}]"#,
                output: r#"[{"item": {"id": 7}, "tag": "x7"}]"#,
            },
            Example {
                description: "assignments are strings; non-objects become {value}",
                pipeline: "map n={{n}} s={{s}} o={{o}} m={{missing}} all={{.}}",
                input: r#"[{"n": 1.5, "s": "t", "o": {"a": [1]}}, 3]"#,
                output: r#"[{"n": "1.5", "s": "t", "o": "{\"a\":[1]}", "m": "", "all": "{\"n\":\"1.5\",\"s\":\"t\",\"o\":\"{\\\"a\\\":[1]}\",\"m\":\"\"}"}, {"value": 3, "n": "", "s": "", "o": "", "m": "", "all": "3"}]"#,
            },
            Example {
                description: "tokens without = or with an empty key are ignored",
                pipeline: "map plain =v ' k '=1",
                input: r#"[{"a": 1}]"#,
                output: r#"[{"a": 1, "k": "1"}]"#,
            },
        ]
    }

    fn validate(&self, args: &Args) -> Result<()> {
        Self::plan(args).map(|_| ())
    }

    fn run(&self, args: &Args, input: ItemStream, _ctx: &Context) -> Result<Output> {
        let plan = Self::plan(args)?;
        Ok(Output::Items(Box::new(
            input.map(move |item| item.map(|v| apply(&plan, v))),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn examples() {
        super::super::examples::check_examples(&MapCmd);
    }

    #[test]
    fn wrap_and_unwrap_conflict() {
        let args = Args {
            positional: vec![],
            flags: vec![
                ("wrap".into(), crate::dsl::FlagValue::Str("a".into())),
                ("unwrap".into(), crate::dsl::FlagValue::Str("b".into())),
            ],
        };
        let err = MapCmd.validate(&args).err().map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("map cannot use both --wrap and --unwrap")
        );
    }

    #[test]
    fn reassigned_fields_keep_their_position() {
        let plan = Plan {
            wrap: None,
            unwrap: None,
            assignments: vec![("kind".into(), "pr".into()), ("id".into(), "{{id}}".into())],
        };
        let got = apply(&plan, json!({"id": 123, "title": "t"}));
        assert_eq!(to_js_json(&got), r#"{"id":"123","title":"t","kind":"pr"}"#);
    }

    #[test]
    fn later_placeholders_see_earlier_assignments_without_wrap() {
        let plan = Plan {
            wrap: None,
            unwrap: None,
            assignments: vec![("a".into(), "x".into()), ("b".into(), "{{a}}".into())],
        };
        assert_eq!(apply(&plan, json!({"a": "1"})), json!({"a": "x", "b": "x"}));
        let wrapped = Plan {
            wrap: Some("w".into()),
            ..plan
        };
        assert_eq!(
            apply(&wrapped, json!({"a": "1"})),
            json!({"w": {"a": "1"}, "a": "x", "b": "1"})
        );
    }

    #[test]
    fn arrays_become_value_objects() {
        let plan = Plan {
            wrap: None,
            unwrap: None,
            assignments: vec![("first".into(), "{{0}}".into())],
        };
        assert_eq!(
            apply(&plan, json!(["a", "b"])),
            json!({"value": ["a", "b"], "first": "a"})
        );
    }
}
