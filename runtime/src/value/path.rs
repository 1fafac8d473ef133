//! Dotted paths into items (`a.b.0.c`), as the reference's commands read them.

use serde_json::Value;

/// Follow `path` (segments separated by `.`) into `item`.
///
/// Objects are indexed by key, arrays by canonical integer segment; reaching a
/// primitive or `null` before the end yields `None` (JavaScript `undefined`).
pub fn get_path<'a>(item: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = item;
    for seg in path.split('.') {
        cur = match cur {
            Value::Object(map) => map.get(seg)?,
            Value::Array(items) => {
                if seg.len() > 1 && seg.starts_with('0') {
                    return None;
                }
                items.get(seg.parse::<usize>().ok()?)?
            }
            _ => return None,
        };
    }
    Some(cur)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn follows_objects_and_arrays() {
        let v = json!({"a": {"b": [10, {"c": "x"}]}});
        assert_eq!(get_path(&v, "a.b.1.c"), Some(&json!("x")));
        assert_eq!(get_path(&v, "a.b.0"), Some(&json!(10)));
        assert_eq!(get_path(&v, "a.b.01"), None);
        assert_eq!(get_path(&v, "a.b.0.c"), None);
        assert_eq!(get_path(&v, "missing.x"), None);
        assert_eq!(get_path(&json!(null), "a"), None);
    }
}
