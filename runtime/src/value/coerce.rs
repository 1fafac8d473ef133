//! ECMAScript coercions used by `where`, `sort` and the template filters.
//!
//! `None` stands for JavaScript `undefined` (a missing field).

use serde_json::Value;
use std::cmp::Ordering;

/// `String(v)`: `undefined`, `null`, `true`, numbers as JS prints them, strings raw,
/// arrays joined with `,` (null/undefined elements empty), objects `[object Object]`.
pub fn js_to_string(v: Option<&Value>) -> String {
    match v {
        None => "undefined".into(),
        Some(Value::Null) => "null".into(),
        Some(Value::Bool(b)) => b.to_string(),
        Some(Value::Number(n)) => {
            let mut s = String::new();
            super::print::write_number(&mut s, n);
            s
        }
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|x| match x {
                Value::Null => String::new(),
                other => js_to_string(Some(other)),
            })
            .collect::<Vec<_>>()
            .join(","),
        Some(Value::Object(_)) => "[object Object]".into(),
    }
}

/// `Number(v)`.
pub fn js_to_number(v: Option<&Value>) -> f64 {
    match v {
        None => f64::NAN,
        Some(Value::Null) => 0.0,
        Some(Value::Bool(b)) => f64::from(u8::from(*b)),
        Some(Value::Number(n)) => n.as_f64().unwrap_or(f64::NAN),
        Some(Value::String(s)) => string_to_number(s),
        Some(other @ (Value::Array(_) | Value::Object(_))) => {
            string_to_number(&js_to_string(Some(other)))
        }
    }
}

/// ECMAScript `StringToNumber`: trims whitespace; empty is 0; accepts decimal literals,
/// `Infinity`, and `0x`/`0o`/`0b` integers; anything else is NaN.
pub fn string_to_number(s: &str) -> f64 {
    let t = s.trim_matches(is_js_whitespace);
    if t.is_empty() {
        return 0.0;
    }
    let radix = match t.get(..2) {
        Some("0x" | "0X") => Some(16),
        Some("0o" | "0O") => Some(8),
        Some("0b" | "0B") => Some(2),
        _ => None,
    };
    if let Some(radix) = radix {
        let digits = &t[2..];
        if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
            return f64::NAN;
        }
        return digits.chars().fold(0.0, |acc, c| {
            acc * radix as f64 + c.to_digit(radix).unwrap() as f64
        });
    }
    let (sign, body) = match t.as_bytes()[0] {
        b'-' => (-1.0, &t[1..]),
        b'+' => (1.0, &t[1..]),
        _ => (1.0, t),
    };
    if body == "Infinity" {
        return sign * f64::INFINITY;
    }
    if !is_decimal_literal(body) {
        return f64::NAN;
    }
    body.parse::<f64>().map(|f| sign * f).unwrap_or(f64::NAN)
}

/// `digits [. digits] [e[+-]digits]` or `. digits ...`, at least one digit in the mantissa.
fn is_decimal_literal(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    let int_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let mut mantissa_digits = i - int_start;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let frac_start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        mantissa_digits += i - frac_start;
    }
    if mantissa_digits == 0 {
        return false;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        let exp_start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == exp_start {
            return false;
        }
    }
    i == b.len()
}

fn is_js_whitespace(c: char) -> bool {
    c.is_whitespace() || c == '\u{feff}'
}

/// A primitive after `ToPrimitive`: objects and arrays become their string form.
enum Prim<'a> {
    Undefined,
    Null,
    Bool(bool),
    Num(f64),
    Str(std::borrow::Cow<'a, str>),
}

fn to_primitive(v: Option<&Value>) -> Prim<'_> {
    match v {
        None => Prim::Undefined,
        Some(Value::Null) => Prim::Null,
        Some(Value::Bool(b)) => Prim::Bool(*b),
        Some(Value::Number(n)) => Prim::Num(n.as_f64().unwrap_or(f64::NAN)),
        Some(Value::String(s)) => Prim::Str(s.as_str().into()),
        Some(other) => Prim::Str(js_to_string(Some(other)).into()),
    }
}

fn prim_to_number(p: &Prim) -> f64 {
    match p {
        Prim::Undefined => f64::NAN,
        Prim::Null => 0.0,
        Prim::Bool(b) => f64::from(u8::from(*b)),
        Prim::Num(n) => *n,
        Prim::Str(s) => string_to_number(s),
    }
}

/// JavaScript `a == b` (abstract equality) for JSON values.
///
/// Two objects/arrays are equal only if they are the same object, which two
/// distinct JSON values never are.
pub fn js_loose_eq(a: Option<&Value>, b: Option<&Value>) -> bool {
    let composite = |v: Option<&Value>| matches!(v, Some(Value::Array(_) | Value::Object(_)));
    if composite(a) && composite(b) {
        return false;
    }
    let (pa, pb) = (to_primitive(a), to_primitive(b));
    match (&pa, &pb) {
        (Prim::Undefined | Prim::Null, Prim::Undefined | Prim::Null) => true,
        (Prim::Undefined | Prim::Null, _) | (_, Prim::Undefined | Prim::Null) => false,
        (Prim::Str(x), Prim::Str(y)) => x == y,
        (Prim::Bool(x), Prim::Bool(y)) => x == y,
        _ => prim_to_number(&pa) == prim_to_number(&pb),
    }
}

/// JavaScript `a < b` (abstract relational comparison). `None` means undefined
/// (the comparison is false either way, as with NaN).
pub fn js_less_than(a: Option<&Value>, b: Option<&Value>) -> Option<bool> {
    let (pa, pb) = (to_primitive(a), to_primitive(b));
    if let (Prim::Str(x), Prim::Str(y)) = (&pa, &pb) {
        return Some(compare_utf16(x, y) == Ordering::Less);
    }
    let (x, y) = (prim_to_number(&pa), prim_to_number(&pb));
    if x.is_nan() || y.is_nan() {
        None
    } else {
        Some(x < y)
    }
}

/// Compare strings by UTF-16 code units, as JavaScript does.
pub(crate) fn compare_utf16(a: &str, b: &str) -> Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn string_to_number_follows_ecmascript() {
        assert_eq!(string_to_number(" 12 "), 12.0);
        assert_eq!(string_to_number(""), 0.0);
        assert_eq!(string_to_number("0x10"), 16.0);
        assert_eq!(string_to_number("1e3"), 1000.0);
        assert_eq!(string_to_number("-Infinity"), f64::NEG_INFINITY);
        assert_eq!(string_to_number(".5"), 0.5);
        assert_eq!(string_to_number("5."), 5.0);
        assert!(string_to_number("inf").is_nan());
        assert!(string_to_number("1,2").is_nan());
        assert!(string_to_number("-0x10").is_nan());
        assert!(string_to_number("abc").is_nan());
    }

    #[test]
    fn loose_equality_matches_javascript() {
        let one = json!(1);
        assert!(js_loose_eq(Some(&json!("1")), Some(&one)));
        assert!(js_loose_eq(Some(&json!(true)), Some(&one)));
        assert!(js_loose_eq(None, Some(&json!(null))));
        assert!(!js_loose_eq(Some(&json!(0)), Some(&json!(null))));
        assert!(js_loose_eq(Some(&json!([1])), Some(&one)));
        assert!(js_loose_eq(Some(&json!("")), Some(&json!(0))));
        assert!(!js_loose_eq(Some(&json!("a")), Some(&json!("b"))));
    }

    #[test]
    fn relational_comparison_coerces() {
        assert_eq!(
            js_less_than(Some(&json!(null)), Some(&json!(10))),
            Some(true)
        );
        assert_eq!(js_less_than(None, Some(&json!(10))), None);
        assert_eq!(
            js_less_than(Some(&json!("10")), Some(&json!("9"))),
            Some(true)
        );
        assert_eq!(
            js_less_than(Some(&json!("10")), Some(&json!(9))),
            Some(false)
        );
    }

    #[test]
    fn to_string_of_composites() {
        assert_eq!(
            js_to_string(Some(&json!([1, null, "a", [2, 3]]))),
            "1,,a,2,3"
        );
        assert_eq!(js_to_string(Some(&json!({"a": 1}))), "[object Object]");
        assert_eq!(js_to_string(Some(&json!(1.5e21))), "1.5e+21");
    }
}
