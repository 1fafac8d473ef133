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
    write_json_string(out, s);
}

/// Append `s` as a JSON string literal with `JSON.stringify`'s escapes
/// (the same as RFC 8785's): `"`, `\\`, `\b \f \n \r \t`, other control
/// characters as `\u00xx`; everything else as it is. Shared by this printer
/// and the journal's canonical form.
///
/// Eight bytes are checked at a time (the digests and item texts of every
/// journaled run go through here, and most of their strings need no
/// escape); a word with a byte to escape is written byte by byte.
pub(crate) fn write_json_string(out: &mut String, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push('"');
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        // The next byte to escape: found from the word's lowest flagged
        // byte (always a true one), or byte by byte in the last word.
        let at = match bytes.get(i..i + 8) {
            Some(word) => {
                let mut w = [0u8; 8];
                w.copy_from_slice(word);
                match escape_mask(u64::from_le_bytes(w)) {
                    0 => {
                        i += 8;
                        continue;
                    }
                    mask => i + (mask.trailing_zeros() / 8) as usize,
                }
            }
            None => match bytes[i..].iter().position(|&b| escape_of(b).is_some()) {
                Some(j) => i + j,
                None => break,
            },
        };
        let b = bytes[at];
        i = at + 1;
        // (A byte that needs no escape is never found first; were it, it
        // would stay in the text, not be dropped.)
        let Some(escape) = escape_of(b) else {
            continue;
        };
        // An escaped byte is ASCII: `start` and `at` are char boundaries.
        out.push_str(&s[start..at]);
        match escape {
            Escape::Short(e) => out.push_str(e),
            Escape::Unicode => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.push_str("\\u00");
                out.push(HEX[(b >> 4) as usize] as char);
                out.push(HEX[(b & 15) as usize] as char);
            }
        }
        start = at + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// How a byte is escaped in a JSON string.
enum Escape {
    Short(&'static str),
    Unicode,
}

fn escape_of(b: u8) -> Option<Escape> {
    Some(match b {
        b'"' => Escape::Short("\\\""),
        b'\\' => Escape::Short("\\\\"),
        b'\n' => Escape::Short("\\n"),
        b'\r' => Escape::Short("\\r"),
        b'\t' => Escape::Short("\\t"),
        0x08 => Escape::Short("\\b"),
        0x0c => Escape::Short("\\f"),
        0..=0x1f => Escape::Unicode,
        _ => return None,
    })
}

/// The high bit of each byte of `w` (little-endian) that may need an
/// escape (a control character, `"` or `\\`); 0 when none does. The
/// lowest bit set is always a byte that does (a false one can only follow
/// a true one, through a borrow).
fn escape_mask(w: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let below_space = w.wrapping_sub(ONES * 0x20) & !w;
    let quote = w ^ (ONES * b'"' as u64);
    let backslash = w ^ (ONES * b'\\' as u64);
    let has_zero = |v: u64| v.wrapping_sub(ONES) & !v;
    (below_space | has_zero(quote) | has_zero(backslash)) & HIGH
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

    /// The escaper before it checked eight bytes at a time, byte by byte.
    fn escaped_one_byte_at_a_time(s: &str) -> String {
        let mut out = String::from('"');
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
        out
    }

    /// Every ASCII byte (each control character, `"`, `\\`, DEL) and
    /// multi-byte characters, at every offset within the eight-byte words
    /// and across their ends, alone and in runs, short and long: the same
    /// text as escaping byte by byte, and what serde_json reads back.
    #[test]
    fn strings_escape_eight_bytes_at_a_time_as_byte_by_byte() {
        let mut cases: Vec<String> = vec![String::new(), "a".into(), "\"".repeat(17)];
        let specials = [
            "\"", "\\", "\n", "\u{0}", "\u{1f}", "\u{7f}", "é", "€", "😀", "\u{2028}", "/",
        ];
        for len in 0..=20 {
            for at in 0..len {
                for sp in (0u8..=0x7f)
                    .map(|b| (b as char).to_string())
                    .chain(specials.iter().map(|s| s.to_string()))
                {
                    let mut s = "x".repeat(at);
                    s.push_str(&sp);
                    s.push_str(&"y".repeat(len - at));
                    cases.push(s);
                }
            }
        }
        // Long texts: a workflow file, JSON as a string, random bytes.
        cases.push("name: w\nsteps:\n  - id: \"a\"\t# é€😀\n".repeat(200));
        cases.push(to_js_json(&json!([{"a": "b\"c", "d": [1, 2.5, "\u{1}"]}])).repeat(50));
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..200 {
            let s: String = (0..(x % 300))
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    match x % 5 {
                        0 => char::from((x >> 8) as u8 & 0x7f),
                        1 => char::from_u32(0x80 + (x >> 8) as u32 % 0x700).unwrap_or('?'),
                        2 => '😀',
                        _ => char::from(b'a' + (x >> 8) as u8 % 26),
                    }
                })
                .collect();
            cases.push(s);
        }
        for s in &cases {
            let mut out = String::from("prefix");
            write_json_string(&mut out, s);
            assert_eq!(
                &out["prefix".len()..],
                escaped_one_byte_at_a_time(s),
                "{s:?}"
            );
            assert_eq!(
                serde_json::from_str::<String>(&out["prefix".len()..]).unwrap(),
                *s
            );
        }
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
