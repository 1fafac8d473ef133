//! Template filters (`{{path | filter arg …}}`), as the reference's
//! `core/filters.ts`. Dates are UTC.

mod date;

use super::js::{js_trim, utf16_len};
use crate::error::{Error, Result};
use crate::value::{js_to_number, js_to_string, to_js_json_pretty};
use serde_json::Value;

/// A JavaScript value as filters see it: `undefined`, a JSON value, or a
/// non-finite number (`round` can produce `Infinity`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum JsVal {
    Undefined,
    Json(Value),
    NonFinite(f64),
}

impl JsVal {
    pub(crate) fn from_option(v: Option<Value>) -> Self {
        v.map_or(JsVal::Undefined, JsVal::Json)
    }

    fn number(n: f64) -> Self {
        match serde_json::Number::from_f64(n) {
            Some(num) if n.is_finite() => JsVal::Json(Value::Number(num)),
            _ => JsVal::NonFinite(n),
        }
    }

    fn is_nullish(&self) -> bool {
        matches!(self, JsVal::Undefined | JsVal::Json(Value::Null))
    }

    /// `String(v)`.
    fn js_string(&self) -> String {
        match self {
            JsVal::Undefined => "undefined".into(),
            JsVal::Json(v) => js_to_string(Some(v)),
            JsVal::NonFinite(n) => non_finite_text(*n).into(),
        }
    }

    /// `String(v ?? "")`.
    fn string_or_empty(&self) -> String {
        if self.is_nullish() {
            String::new()
        } else {
            self.js_string()
        }
    }

    /// `Number(v)`.
    fn to_number(&self) -> f64 {
        match self {
            JsVal::Undefined => f64::NAN,
            JsVal::Json(v) => js_to_number(Some(v)),
            JsVal::NonFinite(n) => *n,
        }
    }

    /// What a placeholder renders: nullish → "", strings raw, numbers and
    /// booleans via `String()`, anything else as compact JSON.
    pub(crate) fn to_template_text(&self) -> String {
        match self {
            JsVal::Undefined | JsVal::Json(Value::Null) => String::new(),
            JsVal::Json(Value::String(s)) => s.clone(),
            JsVal::Json(v @ (Value::Number(_) | Value::Bool(_))) => js_to_string(Some(v)),
            JsVal::Json(v) => crate::value::to_js_json(v),
            JsVal::NonFinite(n) => non_finite_text(*n).into(),
        }
    }
}

fn non_finite_text(n: f64) -> &'static str {
    if n.is_nan() {
        "NaN"
    } else if n > 0.0 {
        "Infinity"
    } else {
        "-Infinity"
    }
}

const NAMES: [&str; 15] = [
    "upper", "lower", "trim", "truncate", "replace", "split", "first", "last", "length", "join",
    "json", "string", "default", "round", "date",
];

/// `parseFilterExpression`: words split on single spaces; quoted words keep
/// their spaces, lose their quotes, and `\x` becomes `x`.
pub(crate) fn parse_filter_expression(expr: &str) -> Vec<String> {
    let trimmed = js_trim(expr);
    let chars: Vec<char> = trimmed.chars().collect();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        while i < chars.len() && chars[i] == ' ' {
            i += 1;
        }
        if i >= chars.len() {
            break;
        }
        let mut arg = String::new();
        if chars[i] == '"' || chars[i] == '\'' {
            let quote = chars[i];
            i += 1;
            while i < chars.len() && chars[i] != quote {
                if chars[i] == '\\' && i + 1 < chars.len() {
                    arg.push(chars[i + 1]);
                    i += 2;
                } else {
                    arg.push(chars[i]);
                    i += 1;
                }
            }
            if i < chars.len() {
                i += 1;
            }
        } else {
            while i < chars.len() && chars[i] != ' ' {
                arg.push(chars[i]);
                i += 1;
            }
        }
        parts.push(arg);
    }
    if parts.is_empty() {
        parts.push(trimmed.to_string());
    }
    parts
}

fn unknown(name: &str) -> Error {
    Error::runtime(format!("Unknown template filter: {name}"))
}

/// Fail on the first unknown filter name in `chain`.
pub(crate) fn check_filter_names(chain: &[String]) -> Result<()> {
    for expr in chain {
        let parts = parse_filter_expression(expr);
        let name = parts.first().map(String::as_str).unwrap_or("");
        if !NAMES.contains(&name) {
            return Err(unknown(name));
        }
    }
    Ok(())
}

/// Apply each filter of `chain` in turn.
pub(crate) fn apply_filters(value: JsVal, chain: &[String]) -> Result<JsVal> {
    let mut v = value;
    for expr in chain {
        let parts = parse_filter_expression(expr);
        let name = parts.first().map(String::as_str).unwrap_or("");
        let args = parts.get(1..).unwrap_or(&[]);
        v = apply_one(name, v, args)?;
    }
    Ok(v)
}

fn string_val(s: String) -> JsVal {
    JsVal::Json(Value::String(s))
}

fn apply_one(name: &str, v: JsVal, args: &[String]) -> Result<JsVal> {
    let arg = |i: usize| args.get(i).map(String::as_str);
    Ok(match name {
        "upper" => string_val(v.string_or_empty().to_uppercase()),
        "lower" => string_val(v.string_or_empty().to_lowercase()),
        "trim" => string_val(js_trim(&v.string_or_empty()).to_string()),
        "truncate" => {
            let s = v.string_or_empty();
            let parsed = parse_int(arg(0).unwrap_or(""));
            let len = if parsed.is_nan() { 80.0 } else { parsed };
            if (utf16_len(&s) as f64) > len {
                string_val(format!("{}...", slice_utf16(&s, len)))
            } else {
                string_val(s)
            }
        }
        "replace" => string_val(replace_all(
            &v.string_or_empty(),
            arg(0).unwrap_or(""),
            arg(1).unwrap_or(""),
        )),
        "split" => {
            let s = v.string_or_empty();
            let sep = arg(0).unwrap_or(",");
            let parts: Vec<Value> = if sep.is_empty() {
                s.chars().map(|c| Value::String(c.to_string())).collect()
            } else {
                s.split(sep).map(|p| Value::String(p.to_string())).collect()
            };
            JsVal::Json(Value::Array(parts))
        }
        "first" => match v {
            JsVal::Json(Value::Array(items)) => JsVal::from_option(items.into_iter().next()),
            other => other,
        },
        "last" => match v {
            JsVal::Json(Value::Array(mut items)) => JsVal::from_option(items.pop()),
            other => other,
        },
        "length" => JsVal::Json(Value::from(match &v {
            JsVal::Json(Value::Array(items)) => items.len() as u64,
            JsVal::Json(Value::String(s)) => utf16_len(s) as u64,
            _ => 0,
        })),
        "join" => match &v {
            JsVal::Json(Value::Array(items)) => string_val(
                items
                    .iter()
                    .map(|x| match x {
                        Value::Null => String::new(),
                        other => js_to_string(Some(other)),
                    })
                    .collect::<Vec<_>>()
                    .join(arg(0).unwrap_or(", ")),
            ),
            _ => string_val(v.string_or_empty()),
        },
        "json" => match &v {
            JsVal::Undefined => JsVal::Undefined,
            JsVal::Json(x) => string_val(to_js_json_pretty(x)),
            JsVal::NonFinite(_) => string_val("null".into()),
        },
        "string" => string_val(v.string_or_empty()),
        "default" => {
            if v.is_nullish() || v == JsVal::Json(Value::String(String::new())) {
                JsVal::from_option(arg(0).map(|s| Value::String(s.to_string())))
            } else {
                v
            }
        }
        "round" => {
            let num = v.to_number();
            let dec = parse_int(arg(0).unwrap_or(""));
            let dec = if dec.is_nan() { 0.0 } else { dec };
            if num.is_nan() {
                v
            } else {
                JsVal::number(round_to_fixed(num, dec)?)
            }
        }
        "date" => date::format_date(&v, arg(0))?,
        other => return Err(unknown(other)),
    })
}

/// `parseInt(s, 10)`: leading whitespace, a sign, then decimal digits; NaN
/// when there are none.
fn parse_int(s: &str) -> f64 {
    let t = s.trim_start_matches(super::js::is_js_space);
    let (sign, body) = match t.as_bytes().first() {
        Some(b'-') => (-1.0, &t[1..]),
        Some(b'+') => (1.0, &t[1..]),
        _ => (1.0, t),
    };
    let digits: String = body.chars().take_while(char::is_ascii_digit).collect();
    if digits.is_empty() {
        return f64::NAN;
    }
    digits.parse::<f64>().map(|n| sign * n).unwrap_or(f64::NAN)
}

/// `s.slice(0, end)` in UTF-16 code units (a negative end counts from the end).
fn slice_utf16(s: &str, end: f64) -> String {
    let units: Vec<u16> = s.encode_utf16().collect();
    let len = units.len() as f64;
    let end = if end < 0.0 {
        (len + end).max(0.0)
    } else {
        end.min(len)
    };
    String::from_utf16_lossy(&units[..end as usize])
}

/// `s.replaceAll(from, to)` with a string pattern, including the `$$`, `$&`,
/// `` $` `` and `$'` replacement patterns.
fn replace_all(s: &str, from: &str, to: &str) -> String {
    let mut positions: Vec<usize> = Vec::new();
    if from.is_empty() {
        positions.extend(s.char_indices().map(|(i, _)| i));
        positions.push(s.len());
    } else {
        positions.extend(s.match_indices(from).map(|(i, _)| i));
    }
    let mut out = String::with_capacity(s.len());
    let mut last = 0;
    for pos in positions {
        out.push_str(&s[last..pos]);
        let end = pos + from.len();
        let mut chars = to.chars().peekable();
        while let Some(c) = chars.next() {
            if c != '$' {
                out.push(c);
                continue;
            }
            match chars.peek() {
                Some('$') => out.push('$'),
                Some('&') => out.push_str(from),
                Some('`') => out.push_str(&s[..pos]),
                Some('\'') => out.push_str(&s[end..]),
                _ => {
                    out.push('$');
                    continue;
                }
            }
            chars.next();
        }
        last = end;
    }
    out.push_str(&s[last..]);
    out
}

/// `Number(num.toFixed(dec))`.
fn round_to_fixed(num: f64, dec: f64) -> Result<f64> {
    if !(0.0..=100.0).contains(&dec) {
        return Err(Error::runtime(
            "toFixed() digits argument must be between 0 and 100",
        ));
    }
    if !num.is_finite() || num.abs() >= 1e21 {
        return Ok(num);
    }
    let dec = dec as usize;
    // The exact decimal expansion of the double (at most 1074 fractional
    // digits), rounded half away from zero as `toFixed` does.
    let exact = format!("{:.1100}", num.abs());
    let (int_part, frac) = exact.split_once('.').unwrap_or((&exact, ""));
    let mut digits: Vec<u8> = int_part.bytes().chain(frac.bytes().take(dec)).collect();
    let round_up = frac.as_bytes().get(dec).is_some_and(|&d| d >= b'5');
    if round_up {
        let mut i = digits.len();
        loop {
            if i == 0 {
                digits.insert(0, b'1');
                break;
            }
            i -= 1;
            if digits[i] == b'9' {
                digits[i] = b'0';
            } else {
                digits[i] += 1;
                break;
            }
        }
    }
    let split = digits.len() - dec;
    let text = format!(
        "{}{}.{}",
        if num < 0.0 { "-" } else { "" },
        String::from_utf8_lossy(&digits[..split]),
        String::from_utf8_lossy(&digits[split..])
    );
    Ok(text.trim_end_matches('.').parse::<f64>().unwrap_or(num))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn f(value: Value, expr: &str) -> JsVal {
        apply_filters(JsVal::Json(value), &[expr.to_string()]).unwrap()
    }

    fn s(x: &str) -> JsVal {
        JsVal::Json(json!(x))
    }

    #[test]
    fn case_and_trim() {
        assert_eq!(f(json!("aBc"), "upper"), s("ABC"));
        assert_eq!(f(json!("aBc"), "lower"), s("abc"));
        assert_eq!(f(json!(null), "upper"), s(""));
        assert_eq!(f(json!(" \u{feff}x\n"), "trim"), s("x"));
        assert_eq!(f(json!(12), "trim"), s("12"));
    }

    #[test]
    fn truncate_counts_utf16_units() {
        assert_eq!(f(json!("abcdef"), "truncate 3"), s("abc..."));
        assert_eq!(f(json!("abc"), "truncate 3"), s("abc"));
        assert_eq!(f(json!("abcdef"), "truncate -2"), s("abcd..."));
        assert_eq!(f(json!("abcdef"), "truncate x"), s("abcdef"));
        assert_eq!(f(json!("abcdef"), "truncate 2.9"), s("ab..."));
        assert_eq!(
            f(json!("x".repeat(81)), "truncate")
                .to_template_text()
                .len(),
            83
        );
    }

    #[test]
    fn replace_uses_replace_all_patterns() {
        assert_eq!(f(json!("a-b-c"), r#"replace "-" "+""#), s("a+b+c"));
        assert_eq!(f(json!("ab"), r#"replace "" "-""#), s("-a-b-"));
        assert_eq!(f(json!("ab"), r#"replace b "[$&$$]""#), s("a[b$]"));
        assert_eq!(f(json!("ab"), "replace b"), s("a"));
    }

    #[test]
    fn split_first_last_length_join() {
        assert_eq!(f(json!("a,b"), "split"), JsVal::Json(json!(["a", "b"])));
        assert_eq!(f(json!(""), "split"), JsVal::Json(json!([""])));
        assert_eq!(
            f(json!("ab"), r#"split """#),
            JsVal::Json(json!(["a", "b"]))
        );
        assert_eq!(f(json!([1, 2]), "first"), JsVal::Json(json!(1)));
        assert_eq!(f(json!([1, 2]), "last"), JsVal::Json(json!(2)));
        assert_eq!(f(json!([]), "first"), JsVal::Undefined);
        assert_eq!(f(json!("x"), "first"), s("x"));
        assert_eq!(f(json!("\u{1f600}"), "length"), JsVal::Json(json!(2)));
        assert_eq!(f(json!({"a": 1}), "length"), JsVal::Json(json!(0)));
        assert_eq!(f(json!([1, null, [2, 3]]), "join"), s("1, , 2,3"));
        assert_eq!(f(json!(["a", "b"]), "join -"), s("a-b"));
        assert_eq!(f(json!(5), "join"), s("5"));
    }

    #[test]
    fn json_string_default() {
        assert_eq!(
            f(json!({"a": [1]}), "json"),
            s("{\n  \"a\": [\n    1\n  ]\n}")
        );
        assert_eq!(
            apply_filters(JsVal::Undefined, &["json".into()]).unwrap(),
            JsVal::Undefined
        );
        assert_eq!(f(json!(null), "string"), s(""));
        assert_eq!(f(json!(false), "string"), s("false"));
        assert_eq!(f(json!(""), "default x"), s("x"));
        assert_eq!(f(json!(0), "default x"), JsVal::Json(json!(0)));
        assert_eq!(f(json!(false), "default x"), JsVal::Json(json!(false)));
        assert_eq!(f(json!(null), "default"), JsVal::Undefined);
        assert_eq!(f(json!(null), r#"default "N/A""#), s("N/A"));
    }

    #[test]
    fn round_is_to_fixed() {
        assert_eq!(f(json!(2.5), "round"), JsVal::Json(json!(3.0)));
        assert_eq!(f(json!(-2.5), "round"), JsVal::Json(json!(-3.0)));
        assert_eq!(f(json!(1.005), "round 2"), JsVal::Json(json!(1.0)));
        assert_eq!(f(json!(1.25), "round 1"), JsVal::Json(json!(1.3)));
        assert_eq!(f(json!("2.71828"), "round 2"), JsVal::Json(json!(2.72)));
        assert_eq!(f(json!(9.99), "round 1"), JsVal::Json(json!(10.0)));
        assert_eq!(f(json!("abc"), "round"), s("abc"));
        assert_eq!(f(json!(null), "round"), JsVal::Json(json!(0.0)));
        assert_eq!(f(json!("1e400"), "round").to_template_text(), "Infinity");
        assert!(apply_filters(JsVal::Json(json!(1)), &["round -1".into()]).is_err());
    }

    #[test]
    fn dates_are_utc() {
        assert_eq!(f(json!(0), "date"), s("1970-01-01T00:00:00.000Z"));
        assert_eq!(
            f(json!("1700000000000"), "date"),
            s("2023-11-14T22:13:20.000Z")
        );
        assert_eq!(
            f(
                json!("2024-02-29T13:05:09Z"),
                r#"date "YYYY/MM/DD HH:mm:ss""#
            ),
            s("2024/02/29 13:05:09")
        );
        assert_eq!(f(json!("2024-03-04"), "date DD.MM.YYYY"), s("04.03.2024"));
        assert_eq!(f(json!("2024-03-04T10:00+02:00"), "date HH"), s("08"));
        assert_eq!(f(json!("2024-03-04 HH:mm"), "date"), s("2024-03-04 HH:mm"));
        assert_eq!(f(json!("YYYY-MM-DD"), "date YYYY-MM-DD"), s("YYYY-MM-DD"));
        assert_eq!(f(json!("nope"), "date"), s("nope"));
        assert_eq!(f(json!(null), "date"), s("null"));
        assert_eq!(
            apply_filters(JsVal::Undefined, &["date".into()]).unwrap(),
            s("undefined")
        );
        assert_eq!(f(json!(-1), "date"), s("1969-12-31T23:59:59.999Z"));
        assert_eq!(f(json!(8.64e15), "date"), s("+275760-09-13T00:00:00.000Z"));
        assert_eq!(f(json!(8.64e15 + 1.0), "date"), s("8640000000000001"));
        assert_eq!(
            f(json!("2023-02-31"), "date"),
            s("2023-03-03T00:00:00.000Z")
        );
        assert_eq!(f(json!("2023-02-32"), "date"), s("2023-02-32"));
        assert_eq!(
            f(json!("2024-03-04T24:00"), "date"),
            s("2024-03-05T00:00:00.000Z")
        );
        assert_eq!(
            f(json!("2024-03-04T10:00:00.1234Z"), "date"),
            s("2024-03-04T10:00:00.123Z")
        );
        assert_eq!(
            f(json!("2024-03-04T10:00:60"), "date"),
            s("2024-03-04T10:00:60")
        );
        assert_eq!(
            f(json!("Tue, 14 Nov 2023 22:13:20 GMT"), "date"),
            s("2023-11-14T22:13:20.000Z")
        );
        assert_eq!(
            f(json!(1_700_000_000_000_i64), "date YYYYMMDD"),
            s("20231114")
        );
    }

    #[test]
    fn filter_expressions_tokenise_on_single_spaces() {
        assert_eq!(
            parse_filter_expression(r#"replace "a b" 'c\'d'"#),
            vec!["replace", "a b", "c'd"]
        );
        assert_eq!(
            parse_filter_expression("date YYYY-MM-DD HH:mm"),
            vec!["date", "YYYY-MM-DD", "HH:mm"]
        );
        assert_eq!(parse_filter_expression(""), vec![""]);
        let err = apply_filters(JsVal::Undefined, &["shout".into()]).unwrap_err();
        assert_eq!(err.to_string(), "Unknown template filter: shout");
    }
}
