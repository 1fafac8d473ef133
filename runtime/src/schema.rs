//! JSON Schema validation of input responses (`ask --schema`, input gates).
//!
//! Schemas without `$schema` are read as draft-07, the reference's (Ajv) default.

use crate::error::{Error, Result};
use serde_json::Value;

/// A compiled schema.
pub struct Schema(jsonschema::Validator);

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
        built.map(Schema).map_err(|e| e.to_string())
    }

    /// Every violation, in the validator's order (empty when valid).
    pub fn violations(&self, value: &Value) -> Vec<Violation> {
        self.0
            .iter_errors(value)
            .map(|err| {
                let path = err.instance_path().to_string();
                Violation {
                    path: if path.is_empty() { "/".into() } else { path },
                    message: err.to_string(),
                }
            })
            .collect()
    }

    /// `Ok` when `value` is valid, else the first violation.
    pub fn check(&self, value: &Value) -> Result<(), Violation> {
        match self.0.iter_errors(value).next() {
            None => Ok(()),
            Some(err) => {
                let path = err.instance_path().to_string();
                Err(Violation {
                    path: if path.is_empty() { "/".into() } else { path },
                    message: err.to_string(),
                })
            }
        }
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

    #[test]
    fn invalid_schema_is_reported() {
        assert!(Schema::compile(&json!({"type": 12})).is_err());
    }
}
