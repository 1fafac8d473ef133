//! JSON Schema validation of input responses (`ask --schema`, input gates).
//!
//! Schemas without `$schema` are read as draft-07, the reference's (Ajv) default.
//! Messages use Ajv's wording (`must have required property 'name'`, `must be
//! string`, …): agents read them to repair their answer, and the reference
//! prints Ajv's `instancePath` and `message`.

use crate::error::{Error, Result};
use serde_json::Value;

/// A compiled schema (and its source, to quote keyword values as Ajv does).
pub struct Schema(jsonschema::Validator, Value);

/// The first validation failure: where (`/a/0`, or `/` for the root) and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    pub path: String,
    pub message: String,
}

impl Schema {
    /// Compile `schema`; `Err` carries the compiler's message.
    pub fn compile(schema: &Value) -> Result<Self, String> {
        let declared = schema.get("$schema").is_some();
        let built = if declared {
            jsonschema::validator_for(schema)
        } else {
            jsonschema::draft7::new(schema)
        };
        built
            .map(|v| Schema(v, schema.clone()))
            .map_err(|e| e.to_string())
    }

    /// Every violation, in the validator's order (empty when valid), each
    /// worded as Ajv words it.
    pub fn violations(&self, value: &Value) -> Vec<Violation> {
        self.0
            .iter_errors(value)
            .map(|err| {
                let path = err.instance_path().to_string();
                let keyword_value = self.1.pointer(&err.schema_path().to_string());
                Violation {
                    path: if path.is_empty() { "/".into() } else { path },
                    message: ajv_message(&err, keyword_value),
                }
            })
            .collect()
    }

    /// `Ok` when `value` is valid, else the violation Ajv would report first.
    pub fn check(&self, value: &Value) -> Result<(), Violation> {
        // Ajv (allErrors: false) stops at the first failing keyword in its
        // own evaluation order; the crate reports in another order, so every
        // violation is ranked by Ajv's order and the first one kept.
        let mut first: Option<(Vec<u32>, jsonschema::ValidationError<'_>)> = None;
        for err in self.0.iter_errors(value) {
            let key = ajv_order(&self.1, &err.schema_path().to_string());
            if first.as_ref().is_none_or(|(k, _)| key < *k) {
                first = Some((key, err));
            }
        }
        match first.map(|(_, e)| e) {
            None => Ok(()),
            Some(err) => {
                let path = err.instance_path().to_string();
                let keyword_value = self.1.pointer(&err.schema_path().to_string());
                Err(Violation {
                    path: if path.is_empty() { "/".into() } else { path },
                    message: ajv_message(&err, keyword_value),
                })
            }
        }
    }
}

/// Where a keyword sits in Ajv v8's evaluation order: `type` first, then the
/// keywords for any type (`$ref`, `const`, `enum`, `not`, `anyOf`, `oneOf`,
/// `allOf`, `if`), then the number, string, array and object groups, each in
/// the order Ajv registers its keywords.
fn keyword_rank(keyword: &str) -> u32 {
    match keyword {
        "type" => 0,
        "$ref" => 1,
        "const" => 2,
        "enum" => 3,
        "not" => 4,
        "anyOf" => 5,
        "oneOf" => 6,
        "allOf" => 7,
        "if" | "then" | "else" => 8,
        "maximum" => 10,
        "minimum" => 11,
        "exclusiveMaximum" => 12,
        "exclusiveMinimum" => 13,
        "multipleOf" => 14,
        "maxLength" => 20,
        "minLength" => 21,
        "pattern" => 22,
        "format" => 23,
        "maxItems" => 30,
        "minItems" => 31,
        "uniqueItems" => 32,
        "items" => 33,
        "additionalItems" => 34,
        "contains" => 35,
        "maxProperties" => 40,
        "minProperties" => 41,
        "required" => 42,
        "dependencies" | "dependentRequired" | "dependentSchemas" => 43,
        "propertyNames" => 44,
        "additionalProperties" => 45,
        "properties" => 46,
        "patternProperties" => 47,
        _ => 100,
    }
}

/// Where Ajv checks `type` in `node`: first, unless `type` is one of
/// number/string/array/object and `node` has keywords of that group; then
/// the check happens with that group (after the any-type keywords).
fn type_rank(node: &Value) -> u32 {
    let base = match node.get("type").and_then(Value::as_str) {
        Some("number") => 10,
        Some("string") => 20,
        Some("array") => 30,
        Some("object") => 40,
        _ => return 0,
    };
    let has_group_keyword = node.as_object().is_some_and(|m| {
        m.keys().any(|k| {
            let r = keyword_rank(k);
            (base..base + 10).contains(&r) || (k == "format" && base == 10)
        })
    });
    if has_group_keyword {
        base - 1
    } else {
        0
    }
}

/// The sort key of a violation at `schema_path` (a JSON pointer into
/// `schema`): per nesting level, the keyword's rank and, under `properties`
/// and the like, the position of the name in the schema (Ajv walks them in
/// order). Smaller is reported first by Ajv.
fn ajv_order(schema: &Value, schema_path: &str) -> Vec<u32> {
    let segments: Vec<String> = schema_path
        .split('/')
        .skip(1)
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect();
    let mut key = Vec::new();
    let mut node = Some(schema);
    let mut i = 0;
    while i < segments.len() {
        let keyword = segments[i].as_str();
        key.push(match (keyword, node) {
            ("type", Some(n)) => type_rank(n),
            _ => keyword_rank(keyword),
        });
        let inner = node.and_then(|n| n.get(keyword));
        i += 1;
        match keyword {
            "properties" | "patternProperties" | "dependencies" | "definitions" | "$defs" => {
                let Some(name) = segments.get(i) else { break };
                let position = inner
                    .and_then(Value::as_object)
                    .and_then(|m| m.keys().position(|k| k == name))
                    .unwrap_or(usize::MAX);
                key.push(u32::try_from(position).unwrap_or(u32::MAX));
                node = inner.and_then(|m| m.get(name));
                i += 1;
            }
            "anyOf" | "oneOf" | "allOf" | "items" | "prefixItems"
                if segments.get(i).is_some_and(|s| s.parse::<usize>().is_ok()) =>
            {
                let index: usize = segments[i].parse().unwrap_or(usize::MAX);
                key.push(u32::try_from(index).unwrap_or(u32::MAX));
                node = inner.and_then(|v| v.get(index));
                i += 1;
            }
            _ => node = inner,
        }
    }
    key
}

/// Ajv's message for `err` (ajv v8, `allErrors: false`, no custom messages).
/// `keyword_value` is the failing keyword's value in the schema, when the
/// schema path leads to it (not through a `$ref`).
fn ajv_message(err: &jsonschema::ValidationError<'_>, keyword_value: Option<&Value>) -> String {
    use jsonschema::error::{TypeKind, ValidationErrorKind as K};
    let num = |v: &Value| crate::value::js_to_string(Some(v));
    match err.kind() {
        K::Required { property } => format!(
            "must have required property '{}'",
            property
                .as_str()
                .map_or_else(|| property.to_string(), str::to_string)
        ),
        K::Type { kind } => {
            let names = match keyword_value {
                Some(Value::String(t)) => t.clone(),
                Some(Value::Array(ts)) => ts
                    .iter()
                    .map(|t| t.as_str().unwrap_or_default().to_string())
                    .collect::<Vec<_>>()
                    .join(","),
                _ => match kind {
                    TypeKind::Single(t) => t.to_string(),
                    TypeKind::Multiple(set) => set
                        .iter()
                        .map(|t| t.to_string())
                        .collect::<Vec<_>>()
                        .join(","),
                },
            };
            format!("must be {names}")
        }
        K::Enum { .. } => "must be equal to one of the allowed values".into(),
        K::Constant { .. } => "must be equal to constant".into(),
        K::AdditionalProperties { .. } => "must NOT have additional properties".into(),
        K::Minimum { limit } => format!("must be >= {}", num(limit)),
        K::Maximum { limit } => format!("must be <= {}", num(limit)),
        K::ExclusiveMinimum { limit } => format!("must be > {}", num(limit)),
        K::ExclusiveMaximum { limit } => format!("must be < {}", num(limit)),
        K::MinLength { limit } => format!("must NOT have fewer than {limit} characters"),
        K::MaxLength { limit } => format!("must NOT have more than {limit} characters"),
        K::MinItems { limit } => format!("must NOT have fewer than {limit} items"),
        K::MaxItems { limit } => format!("must NOT have more than {limit} items"),
        K::AdditionalItems { limit } => format!("must NOT have more than {limit} items"),
        K::MinProperties { limit } => format!("must NOT have fewer than {limit} properties"),
        K::MaxProperties { limit } => format!("must NOT have more than {limit} properties"),
        K::Pattern { pattern } => format!("must match pattern \"{pattern}\""),
        K::Format { format } => format!("must match format \"{format}\""),
        K::MultipleOf { .. } => match keyword_value {
            Some(v) => format!("must be multiple of {}", num(v)),
            None => err.to_string(),
        },
        K::UniqueItems => "must NOT have duplicate items".into(),
        K::Not { .. } => "must NOT be valid".into(),
        K::AnyOf { .. } => "must match a schema in anyOf".into(),
        K::OneOfNotValid { .. } | K::OneOfMultipleValid { .. } => {
            "must match exactly one schema in oneOf".into()
        }
        K::FalseSchema => "boolean schema is false".into(),
        K::Contains => "must contain at least 1 valid item(s)".into(),
        K::PropertyNames { .. } => "property name must be valid".into(),
        _ => err.to_string(),
    }
}

/// Validate `value` against `schema`, formatting failures as
/// `<prefix> failed schema validation at <path>: <message>` (a parse error).
pub fn validate_response(schema: &Value, value: &Value, prefix: &str) -> Result<()> {
    let compiled = Schema::compile(schema)
        .map_err(|e| Error::parse(format!("{prefix} schema is invalid: {e}")))?;
    compiled.check(value).map_err(|v| {
        Error::parse(format!(
            "{prefix} failed schema validation at {}: {}",
            v.path, v.message
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reports_first_violation_with_path() {
        let schema = json!({"type":"object","properties":{"n":{"type":"number"}},"required":["n"]});
        assert!(validate_response(&schema, &json!({"n": 1}), "x").is_ok());
        let e =
            validate_response(&schema, &json!({"n": "a"}), "pipeline input response").unwrap_err();
        assert_eq!(e.kind(), "parse_error");
        assert!(
            e.to_string()
                .starts_with("pipeline input response failed schema validation at /n: "),
            "{e}"
        );
        let e = validate_response(&schema, &json!({}), "r").unwrap_err();
        assert!(e.to_string().contains("at /: "), "{e}");
    }

    /// Ajv v8's wording for the common keywords, with Ajv's instancePath.
    #[test]
    fn messages_use_ajv_wording() {
        let cases = [
            (
                json!({"required": ["name"]}),
                json!({}),
                "/",
                "must have required property 'name'",
            ),
            (
                json!({"properties": {"n": {"type": "string"}}}),
                json!({"n": 1}),
                "/n",
                "must be string",
            ),
            (
                json!({"type": ["string", "null"]}),
                json!(1),
                "/",
                "must be string,null",
            ),
            (
                json!({"type": "integer"}),
                json!(1.5),
                "/",
                "must be integer",
            ),
            (
                json!({"enum": ["a", "b"]}),
                json!("c"),
                "/",
                "must be equal to one of the allowed values",
            ),
            (
                json!({"const": 1}),
                json!(2),
                "/",
                "must be equal to constant",
            ),
            (
                json!({"properties": {"a": {}}, "additionalProperties": false}),
                json!({"a": 1, "b": 2}),
                "/",
                "must NOT have additional properties",
            ),
            (json!({"minimum": 1}), json!(0), "/", "must be >= 1"),
            (json!({"maximum": 2.5}), json!(3), "/", "must be <= 2.5"),
            (json!({"exclusiveMinimum": 1}), json!(1), "/", "must be > 1"),
            (json!({"exclusiveMaximum": 1}), json!(1), "/", "must be < 1"),
            (
                json!({"minLength": 3}),
                json!("ab"),
                "/",
                "must NOT have fewer than 3 characters",
            ),
            (
                json!({"maxLength": 1}),
                json!("ab"),
                "/",
                "must NOT have more than 1 characters",
            ),
            (
                json!({"pattern": "^a"}),
                json!("b"),
                "/",
                "must match pattern \"^a\"",
            ),
            (
                json!({"minItems": 2}),
                json!([1]),
                "/",
                "must NOT have fewer than 2 items",
            ),
            (
                json!({"maxItems": 1}),
                json!([1, 2]),
                "/",
                "must NOT have more than 1 items",
            ),
            (
                json!({"multipleOf": 2}),
                json!(3),
                "/",
                "must be multiple of 2",
            ),
            (
                json!({"items": {"type": "number"}}),
                json!([1, "x"]),
                "/1",
                "must be number",
            ),
        ];
        for (schema, value, path, message) in cases {
            let v = Schema::compile(&schema).unwrap().check(&value).unwrap_err();
            assert_eq!(
                (v.path.as_str(), v.message.as_str()),
                (path, message),
                "{schema}"
            );
        }
        // Several violations: the one Ajv reports first (required before
        // additionalProperties before properties, properties in schema order).
        let schema = json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}, "c": {}}, "required": ["c"], "additionalProperties": false});
        let first = |v: Value| Schema::compile(&schema).unwrap().check(&v).unwrap_err();
        assert_eq!(
            first(json!({"b": 1, "a": 1})).message,
            "must have required property 'c'"
        );
        let v = first(json!({"c": 1, "b": 1, "a": 1}));
        assert_eq!(
            (v.path.as_str(), v.message.as_str()),
            ("/a", "must be string")
        );
        assert_eq!(
            first(json!({"c": 1, "x": 1, "a": 1})).message,
            "must NOT have additional properties"
        );
        assert_eq!(first(json!(3)).message, "must be object");
        // `type` comes after `enum` when the schema has keywords of that
        // type's group (Ajv checks it with the group), first otherwise.
        let both = |schema: Value| {
            Schema::compile(&schema)
                .unwrap()
                .check(&json!(5))
                .unwrap_err()
                .message
        };
        assert_eq!(
            both(json!({"type": "string", "minLength": 2, "enum": ["abc"]})),
            "must be equal to one of the allowed values"
        );
        assert_eq!(
            both(json!({"type": "string", "enum": ["abc"]})),
            "must be string"
        );
        let e = validate_response(
            &json!({"required": ["name"]}),
            &json!({}),
            "pipeline input response",
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "pipeline input response failed schema validation at /: must have required property 'name'"
        );
    }

    #[test]
    fn invalid_schema_is_reported() {
        assert!(Schema::compile(&json!({"type": 12})).is_err());
    }
}
