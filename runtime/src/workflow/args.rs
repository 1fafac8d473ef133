//! Workflow args: defaults, then the caller's values; `required` and `type`
//! checked; exported to steps as `LOBSTER_ARG_<NAME>` and `LOBSTER_ARGS_JSON`.

use super::model::Workflow;
use crate::error::{Error, Result};
use crate::value::{js_to_string, to_js_json, Item};
use serde_json::Map;
use std::collections::BTreeMap;

/// Parse `--args-json` text: it must be a JSON object.
pub fn parse_args_json(text: Option<&str>, flag: &str) -> Result<Map<String, Item>> {
    let Some(text) = text else {
        return Ok(Map::new());
    };
    let v: Item = serde_json::from_str(text)
        .map_err(|_| Error::parse(format!("{flag} must be valid JSON")))?;
    match v {
        Item::Object(m) => Ok(m),
        _ => Err(Error::parse(format!("{flag} must be a JSON object"))),
    }
}

/// Resolve the args of `wf` from the caller's `given` values.
pub fn resolve(wf: &Workflow, given: &Map<String, Item>) -> Result<Map<String, Item>> {
    let mut out = Map::new();
    for def in &wf.args {
        if let Some(d) = &def.default {
            out.insert(def.name.clone(), d.clone());
        }
    }
    for (k, v) in given {
        out.insert(k.clone(), v.clone());
    }
    let mut problems = Vec::new();
    for def in &wf.args {
        match out.get(&def.name) {
            None | Some(Item::Null) if def.required => {
                problems.push(format!("Workflow arg {} is required", def.name))
            }
            Some(v) if !v.is_null() => {
                if let Some(t) = def.ty {
                    if !t.accepts(v) {
                        problems.push(format!(
                            "Workflow arg {} must be {} (got {})",
                            def.name,
                            t.with_article(),
                            js_type(v)
                        ));
                    }
                }
            }
            _ => {}
        }
    }
    if !problems.is_empty() {
        return Err(Error::parse(problems.join("\n")));
    }
    Ok(out)
}

/// JavaScript-ish type name for messages.
pub fn js_type(v: &Item) -> &'static str {
    match v {
        Item::Null => "null",
        Item::Bool(_) => "boolean",
        Item::Number(_) => "number",
        Item::String(_) => "string",
        Item::Array(_) => "array",
        Item::Object(_) => "object",
    }
}

/// `my-key` → `MY_KEY`; `__edge__key__` → `EDGE_KEY`; `None` when empty.
pub fn env_name(arg: &str) -> Option<String> {
    let mut out = String::new();
    let mut pending = false;
    for c in arg.trim().chars().flat_map(char::to_uppercase) {
        if c.is_ascii_uppercase() || c.is_ascii_digit() {
            if pending && !out.is_empty() {
                out.push('_');
            }
            pending = false;
            out.push(c);
        } else {
            pending = true;
        }
    }
    (!out.is_empty()).then(|| format!("LOBSTER_ARG_{out}"))
}

/// Add `LOBSTER_ARGS_JSON` and every `LOBSTER_ARG_<NAME>` to `env`.
pub fn export(args: &Map<String, Item>, env: &mut BTreeMap<String, String>) {
    env.insert(
        "LOBSTER_ARGS_JSON".into(),
        to_js_json(&Item::Object(args.clone())),
    );
    for (k, v) in args {
        if let Some(name) = env_name(k) {
            env.insert(name, js_to_string(Some(v)));
        }
    }
}

/// blake3 of the args' JSON, for the resume state.
pub fn digest(args: &Map<String, Item>) -> String {
    blake3::hash(to_js_json(&Item::Object(args.clone())).as_bytes())
        .to_hex()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_and_json() {
        assert_eq!(env_name("my-key").unwrap(), "LOBSTER_ARG_MY_KEY");
        assert_eq!(env_name("__edge__key__").unwrap(), "LOBSTER_ARG_EDGE_KEY");
        assert_eq!(env_name("--"), None);
        assert!(parse_args_json(Some("[1]"), "run --args-json").is_err());
        assert_eq!(
            parse_args_json(Some("{"), "run --args-json")
                .unwrap_err()
                .to_string(),
            "run --args-json must be valid JSON"
        );
        assert_eq!(
            parse_args_json(Some("3"), "run --args-json")
                .unwrap_err()
                .to_string(),
            "run --args-json must be a JSON object"
        );
        let mut env = BTreeMap::new();
        export(json!({"a": 1, "b": [1, 2]}).as_object().unwrap(), &mut env);
        assert_eq!(env["LOBSTER_ARG_B"], "1,2");
        assert_eq!(env["LOBSTER_ARGS_JSON"], "{\"a\":1,\"b\":[1,2]}");
    }
}
