//! Small JavaScript property-access helpers shared by the stdlib commands.
//!
//! The reference reads paths with `cur[p]` on plain JavaScript values, so
//! arrays and strings answer integer indices and `length` too.

use crate::value::Item;
use serde_json::Value;
use std::borrow::Cow;

/// A canonical array index (`"0"`, `"12"`; not `"01"`, `"-1"`, `"+1"`).
pub(crate) fn array_index(key: &str) -> Option<usize> {
    if key.is_empty() || (key.len() > 1 && key.starts_with('0')) {
        return None;
    }
    if !key.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = key.parse().ok()?;
    if n >= u64::from(u32::MAX) {
        return None;
    }
    usize::try_from(n).ok()
}

/// JavaScript `v[key]` for a JSON value; `None` is `undefined`.
pub(crate) fn js_prop<'a>(v: &'a Value, key: &str) -> Option<Cow<'a, Value>> {
    match v {
        Value::Object(map) => map.get(key).map(Cow::Borrowed),
        Value::Array(items) => {
            if key == "length" {
                return Some(Cow::Owned(Value::from(items.len() as u64)));
            }
            items.get(array_index(key)?).map(Cow::Borrowed)
        }
        Value::String(s) => {
            let units: Vec<u16> = s.encode_utf16().collect();
            if key == "length" {
                return Some(Cow::Owned(Value::from(units.len() as u64)));
            }
            let unit = *units.get(array_index(key)?)?;
            Some(Cow::Owned(Value::String(String::from_utf16_lossy(&[unit]))))
        }
        _ => None,
    }
}

/// The `getByPath` of sort/dedupe/groupBy/map/template: empty segments are
/// skipped, and reaching `null`/`undefined` gives `undefined`.
pub(crate) fn dot_path<'a>(item: &'a Item, path: &str) -> Option<Cow<'a, Value>> {
    let mut cur: Cow<'a, Value> = Cow::Borrowed(item);
    for seg in path.split('.').filter(|s| !s.is_empty()) {
        if cur.is_null() {
            return None;
        }
        cur = match cur {
            Cow::Borrowed(v) => js_prop(v, seg)?,
            Cow::Owned(v) => Cow::Owned(js_prop(&v, seg)?.into_owned()),
        };
    }
    Some(cur)
}

/// JavaScript `String.prototype.trim` whitespace.
pub(crate) fn is_js_space(c: char) -> bool {
    c != '\u{85}' && (c.is_whitespace() || c == '\u{feff}')
}

/// `s.trim()` as JavaScript does it.
pub(crate) fn js_trim(s: &str) -> &str {
    s.trim_matches(is_js_space)
}

/// Length in UTF-16 code units (`s.length`).
pub(crate) fn utf16_len(s: &str) -> usize {
    s.encode_utf16().count()
}

/// Object keys in JavaScript order: array-index keys ascending, then the
/// others in insertion order.
pub(crate) fn js_keys(map: &serde_json::Map<String, Value>) -> Vec<&String> {
    let mut indexed: Vec<(usize, &String)> = map
        .keys()
        .filter_map(|k| array_index(k).map(|i| (i, k)))
        .collect();
    indexed.sort_by_key(|(i, _)| *i);
    let mut keys: Vec<&String> = indexed.into_iter().map(|(_, k)| k).collect();
    keys.extend(map.keys().filter(|k| array_index(k).is_none()));
    keys
}

/// `Boolean(flag)` for a flag value: bare is true, an empty string false.
pub(crate) fn flag_truthy(v: Option<&crate::dsl::FlagValue>) -> bool {
    match v {
        None => false,
        Some(crate::dsl::FlagValue::Bool(b)) => *b,
        Some(crate::dsl::FlagValue::Str(s)) => !s.is_empty(),
    }
}

/// `typeof args[name] === "string" ? args[name] : undefined`, non-empty.
pub(crate) fn flag_string<'a>(args: &'a crate::dsl::Args, name: &str) -> Option<&'a str> {
    match args.flag(name) {
        Some(crate::dsl::FlagValue::Str(s)) if !s.is_empty() => Some(s),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn props_follow_javascript() {
        let v = json!({"a": [1, {"b": "xyz"}]});
        assert_eq!(dot_path(&v, "a.1.b").as_deref(), Some(&json!("xyz")));
        assert_eq!(dot_path(&v, "a.length").as_deref(), Some(&json!(2)));
        assert_eq!(dot_path(&v, "a.1.b.0").as_deref(), Some(&json!("x")));
        assert_eq!(dot_path(&v, "a.1.b.length").as_deref(), Some(&json!(3)));
        assert_eq!(dot_path(&v, "a..1").as_deref(), Some(&json!({"b": "xyz"})));
        assert_eq!(dot_path(&v, "a.01"), None);
        assert_eq!(dot_path(&json!({"a": null}), "a.b"), None);
        assert_eq!(dot_path(&v, "").as_deref(), Some(&v));
    }

    #[test]
    fn key_order_puts_indices_first() {
        let v = json!({"b": 1, "10": 2, "a": 3, "2": 4});
        let Value::Object(map) = v else {
            unreachable!()
        };
        let keys: Vec<&str> = js_keys(&map).into_iter().map(|s| s.as_str()).collect();
        assert_eq!(keys, ["2", "10", "b", "a"]);
    }
}
