//! The JSON Canonicalization Scheme (RFC 8785): the bytes a journal event is
//! hashed over. Object keys sorted by their UTF-16 code units, no
//! whitespace, strings with the minimal escapes of ECMAScript's
//! `JSON.stringify`, numbers as ECMAScript's `Number.prototype.toString`
//! of the IEEE double (`ryu-js`). JSON parsed by `serde_json` has no NaN or
//! infinity, so every value has a canonical form.

use serde_json::Value;

/// The canonical (RFC 8785) text of `value`.
pub fn to_canonical(value: &Value) -> String {
    let mut out = String::with_capacity(128);
    write_value(&mut out, value);
    out
}

/// Append the canonical text of `value` to `out`.
pub fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
            out.push('{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, k);
                out.push(':');
                write_value(out, v);
            }
            out.push('}');
        }
    }
}

fn write_number(out: &mut String, n: &serde_json::Number) {
    // Integers that a double holds exactly print as integers either way;
    // everything is a double in RFC 8785 (I-JSON), as in ECMAScript.
    let f = match (n.as_i64(), n.as_u64()) {
        (Some(i), _) if i.unsigned_abs() <= (1u64 << 53) => {
            out.push_str(&i.to_string());
            return;
        }
        (_, Some(u)) if u <= (1u64 << 53) => {
            out.push_str(&u.to_string());
            return;
        }
        _ => n.as_f64().unwrap_or(0.0),
    };
    write_f64(out, f);
}

/// ECMAScript's `Number.prototype.toString` of `f` (−0 prints `0`).
pub fn write_f64(out: &mut String, f: f64) {
    if f == 0.0 {
        out.push('0');
    } else if !f.is_finite() {
        // Not reachable from parsed JSON; RFC 8785 forbids them.
        out.push_str("null");
    } else {
        let mut buf = ryu_js::Buffer::new();
        out.push_str(buf.format_finite(f));
    }
}

fn write_string(out: &mut String, s: &str) {
    out.push('"');
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        let esc: Option<&str> = match b {
            b'"' => Some("\\\""),
            b'\\' => Some("\\\\"),
            b'\x08' => Some("\\b"),
            b'\x0c' => Some("\\f"),
            b'\n' => Some("\\n"),
            b'\r' => Some("\\r"),
            b'\t' => Some("\\t"),
            0..=0x1f => None,
            _ => continue,
        };
        out.push_str(&s[start..i]);
        match esc {
            Some(e) => out.push_str(e),
            None => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.push_str("\\u00");
                out.push(HEX[(b >> 4) as usize] as char);
                out.push(HEX[(b & 15) as usize] as char);
            }
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(text: &str) -> String {
        to_canonical(&serde_json::from_str::<Value>(text).unwrap())
    }

    /// RFC 8785 §3.2.2, the example of the whole scheme.
    #[test]
    fn rfc_example_of_the_whole_scheme() {
        let input = r#"{
          "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
          "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
          "literals": [null, true, false]
        }"#;
        assert_eq!(
            canon(input),
            r#"{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}"#
        );
    }

    /// RFC 8785 §3.2.3: keys sorted by UTF-16 code units (the emoji's
    /// surrogates sort before U+FB33 although its code point is larger).
    #[test]
    fn rfc_example_of_key_sorting() {
        let input = r#"{
          "\u20ac": "Euro Sign",
          "\r": "Carriage Return",
          "\ufb33": "Hebrew Letter Dalet With Dagesh",
          "1": "One",
          "\ud83d\ude00": "Emoji: Grinning Face",
          "\u0080": "Control",
          "\u00f6": "Latin Small Letter O With Diaeresis"
        }"#;
        let out = canon(input);
        let keys: Vec<String> = serde_json::from_str::<serde_json::Map<String, Value>>(&out)
            .unwrap()
            .keys()
            .cloned()
            .collect();
        assert_eq!(
            keys,
            [
                "\r",
                "1",
                "\u{80}",
                "\u{f6}",
                "\u{20ac}",
                "\u{1f600}",
                "\u{fb33}"
            ]
        );
        assert!(out.starts_with(r#"{"\r":"Carriage Return","1":"One","#));
    }

    /// RFC 8785 Appendix B: IEEE 754 doubles and their canonical text.
    #[test]
    fn rfc_appendix_b_numbers() {
        let cases: &[(u64, &str)] = &[
            (0x0000000000000000, "0"),
            (0x8000000000000000, "0"),
            (0x0000000000000001, "5e-324"),
            (0x8000000000000001, "-5e-324"),
            (0x7fefffffffffffff, "1.7976931348623157e+308"),
            (0xffefffffffffffff, "-1.7976931348623157e+308"),
            (0x4340000000000000, "9007199254740992"),
            (0xc340000000000000, "-9007199254740992"),
            (0x4430000000000000, "295147905179352830000"),
            (0x44b52d02c7e14af5, "9.999999999999997e+22"),
            (0x44b52d02c7e14af6, "1e+23"),
            (0x44b52d02c7e14af7, "1.0000000000000001e+23"),
            (0x444b1ae4d6e2ef4e, "999999999999999700000"),
            (0x444b1ae4d6e2ef4f, "999999999999999900000"),
            (0x444b1ae4d6e2ef50, "1e+21"),
            (0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"),
            (0x3eb0c6f7a0b5ed8d, "0.000001"),
            (0x41b3de4355555553, "333333333.3333332"),
            (0x41b3de4355555554, "333333333.33333325"),
            (0x41b3de4355555555, "333333333.3333333"),
            (0x41b3de4355555556, "333333333.3333334"),
            (0x41b3de4355555557, "333333333.33333343"),
            (0xbecbf647612f3696, "-0.0000033333333333333333"),
            (0x43143ff3c1cb0959, "1424953923781206.2"),
        ];
        for (bits, want) in cases {
            let f = f64::from_bits(*bits);
            let mut out = String::new();
            write_f64(&mut out, f);
            assert_eq!(&out, want, "{bits:016x}");
            // The same through a parsed JSON number.
            let parsed: Value = serde_json::from_str(&format!("{f:e}")).unwrap();
            assert_eq!(&to_canonical(&parsed), want, "{bits:016x} parsed");
        }
    }

    #[test]
    fn integers_beyond_two_to_the_53_are_doubles() {
        assert_eq!(canon("9007199254740993"), "9007199254740992");
        assert_eq!(canon("-12"), "-12");
        assert_eq!(canon("18446744073709551615"), "18446744073709552000");
    }

    #[test]
    fn control_characters_escape_in_lowercase_and_others_stay_literal() {
        assert_eq!(
            canon(r#""\u001f\u007f\u2028é""#),
            "\"\\u001f\u{7f}\u{2028}é\""
        );
        assert_eq!(canon(r#"{"b":[],"a":{}}"#), r#"{"a":{},"b":[]}"#);
    }
}
