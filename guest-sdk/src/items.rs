//! Items in and out: the JSON text that crosses the component boundary.

use crate::Error;
use serde_json::Value;

/// Parse the host's input: a JSON array of items (a single non-array value
/// is one item; empty text is no items).
pub fn items_from_json(text: &str) -> Result<Vec<Value>, Error> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    match serde_json::from_str(text)? {
        Value::Array(items) => Ok(items),
        other => Ok(vec![other]),
    }
}

/// Serialise output items as a JSON array.
pub fn items_to_json(items: &[Value]) -> String {
    serde_json::to_string(items).unwrap_or_else(|_| "[]".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arrays_single_values_and_empty_input() {
        assert_eq!(items_from_json("[1,2]").unwrap(), vec![json!(1), json!(2)]);
        assert_eq!(items_from_json("{\"a\":1}").unwrap(), vec![json!({"a":1})]);
        assert!(items_from_json("  ").unwrap().is_empty());
        assert!(items_from_json("[").is_err());
        assert_eq!(
            items_to_json(&[json!({"b":2,"a":1})]),
            "[{\"b\":2,\"a\":1}]"
        );
    }
}
