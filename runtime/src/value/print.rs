//! `JSON.stringify(value, null, indent)` exactly as JavaScript prints it.
//!
//! What differs from serde_json's printer: object keys that are canonical array
//! indices (`"0"`, `"10"`) come first in ascending order, and numbers use the
//! ECMAScript shortest round-trip format (`1e+21`, `1e-7`, `-0` → `0`, integers
//! above 2^53 lose precision as they do in JavaScript).

use serde_json::{Map, Number, Value};

/// `JSON.stringify(v)`: compact.
pub fn to_js_json(v: &Value) -> String {
    let mut out = String::new();
    write_js_json(&mut out, v, None);
    out
}

/// `JSON.stringify(items)` of an array holding `items`, without building
/// (copying) the array first.
pub fn items_to_js_json(items: &[Value]) -> String {
    let mut out = String::new();
    write_items(&mut out, items, None, 0);
    out
}

/// `JSON.stringify(v, null, 2)`: two-space indent, no trailing newline.
pub fn to_js_json_pretty(v: &Value) -> String {
    let mut out = String::new();
    write_js_json(&mut out, v, Some(2));
    out
}

/// Append the JSON text of `v` to `out`, compact (`None`) or indented.
pub fn write_js_json(out: &mut String, v: &Value, indent: Option<usize>) {
    write_value(out, v, indent, 0);
}

fn write_value(out: &mut String, v: &Value, indent: Option<usize>, depth: usize) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => write_items(out, items, indent, depth),
        Value::Object(map) => {
            if map.is_empty() {
                out.push_str("{}");
                return;
            }
            out.push('{');
            let mut entry = |i: usize, k: &String, item: &Value| {
                if i > 0 {
                    out.push(',');
                }
                newline(out, indent, depth + 1);
                write_string(out, k);
                out.push(':');
                if indent.is_some() {
                    out.push(' ');
                }
                write_value(out, item, indent, depth + 1);
            };
            // Most objects have no integer-like key: their order is the
            // insertion order, written without sorting (or allocating).
            if map.keys().any(|k| array_index(k).is_some()) {
                for (i, (k, item)) in js_key_order(map).into_iter().enumerate() {
                    entry(i, k, item);
                }
            } else {
                for (i, (k, item)) in map.iter().enumerate() {
                    entry(i, k, item);
                }
            }
            newline(out, indent, depth);
            out.push('}');
        }
    }
}

fn write_items(out: &mut String, items: &[Value], indent: Option<usize>, depth: usize) {
    if items.is_empty() {
        out.push_str("[]");
        return;
    }
    out.push('[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        newline(out, indent, depth + 1);
        write_value(out, item, indent, depth + 1);
    }
    newline(out, indent, depth);
    out.push(']');
}

fn newline(out: &mut String, indent: Option<usize>, depth: usize) {
    if let Some(width) = indent {
        out.push('\n');
        out.extend(std::iter::repeat_n(' ', width * depth));
    }
}

/// JavaScript's own-property order: integer-like keys ascending, then insertion order.
fn js_key_order(map: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut indexed: Vec<(u32, &String, &Value)> = Vec::new();
    let mut named: Vec<(&String, &Value)> = Vec::with_capacity(map.len());
    for (k, v) in map {
        match array_index(k) {
            Some(i) => indexed.push((i, k, v)),
            None => named.push((k, v)),
        }
    }
    if indexed.is_empty() {
        return named;
    }
    indexed.sort_by_key(|(i, _, _)| *i);
    indexed
        .into_iter()
        .map(|(_, k, v)| (k, v))
        .chain(named)
        .collect()
}

/// A canonical array index: digits without leading zeros, below 2^32 - 1.
fn array_index(key: &str) -> Option<u32> {
    if key.is_empty() || key.len() > 10 || !key.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if key.len() > 1 && key.starts_with('0') {
        return None;
    }
    let n: u64 = key.parse().ok()?;
    (n < u32::MAX as u64).then_some(n as u32)
}

/// Format a number as JavaScript's `Number.prototype.toString` does.
pub(crate) fn write_number(out: &mut String, n: &Number) {
    const MAX_SAFE: u64 = 1 << 53;
    if let Some(i) = n.as_u64() {
        if i <= MAX_SAFE {
            out.push_str(&i.to_string());
            return;
        }
    } else if let Some(i) = n.as_i64() {
        if i.unsigned_abs() <= MAX_SAFE {
            out.push_str(&i.to_string());
            return;
        }
    }
    out.push_str(&format_f64(n.as_f64().unwrap_or(f64::NAN)));
}

/// JavaScript `String(f)` for a finite or non-finite double.
pub(crate) fn format_f64(f: f64) -> String {
    if f == 0.0 {
        return "0".to_string();
    }
    if !f.is_finite() {
        // JSON.stringify prints these as null; String() as NaN/Infinity.
        return "null".to_string();
    }
    let mut buf = ryu_js::Buffer::new();
    buf.format(f).to_string()
}

fn write_string(out: &mut String, s: &str) {
    out.push('"');
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        let escape: Option<&str> = match b {
            b'"' => Some("\\\""),
            b'\\' => Some("\\\\"),
            b'\n' => Some("\\n"),
            b'\r' => Some("\\r"),
            b'\t' => Some("\\t"),
            0x08 => Some("\\b"),
            0x0c => Some("\\f"),
            0..=0x1f => None,
            _ => continue,
        };
        out.push_str(&s[start..i]);
        match escape {
            Some(e) => out.push_str(e),
            None => out.push_str(&format!("\\u{:04x}", b)),
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(s: &str) -> Value {
        serde_json::from_str(s).unwrap()
    }

    #[test]
    fn integer_keys_sort_first() {
        let v = parse(r#"{"b":1,"10":2,"a":3,"2":4,"02":5}"#);
        assert_eq!(to_js_json(&v), r#"{"2":4,"10":2,"b":1,"a":3,"02":5}"#);
    }

    #[test]
    fn numbers_print_as_javascript() {
        for (input, want) in [
            ("2.0", "2"),
            ("1e21", "1e+21"),
            ("1e-7", "1e-7"),
            ("-0", "0"),
            ("-0.0", "0"),
            ("0.1", "0.1"),
            ("123456789012345678901", "123456789012345680000"),
            ("12345678901234567890", "12345678901234567000"),
            ("9007199254740993", "9007199254740992"),
            ("1.5e300", "1.5e+300"),
            ("100", "100"),
        ] {
            assert_eq!(to_js_json(&parse(input)), want, "input {input}");
        }
    }

    #[test]
    fn pretty_matches_stringify_null_2() {
        let v = json!({"a": [1, {"b": null}], "c": {}, "d": []});
        assert_eq!(
            to_js_json_pretty(&v),
            "{\n  \"a\": [\n    1,\n    {\n      \"b\": null\n    }\n  ],\n  \"c\": {},\n  \"d\": []\n}"
        );
    }

    #[test]
    fn strings_escape_like_javascript() {
        let v = json!("q\"\\/\u{1}\u{8}é\n");
        assert_eq!(to_js_json(&v), "\"q\\\"\\\\/\\u0001\\bé\\n\"");
    }

    #[test]
    fn items_print_as_the_array_of_them() {
        let items = vec![
            parse(r#"{"b":1,"2":"x","a":[1,{"10":0,"1":1}],"01":null}"#),
            json!("s"),
            json!([]),
            json!({}),
        ];
        let whole = Value::Array(items.clone());
        assert_eq!(items_to_js_json(&items), to_js_json(&whole));
        assert_eq!(
            items_to_js_json(&items),
            r#"[{"2":"x","b":1,"a":[1,{"1":1,"10":0}],"01":null},"s",[],{}]"#
        );
        assert_eq!(items_to_js_json(&[]), "[]");
    }
}
