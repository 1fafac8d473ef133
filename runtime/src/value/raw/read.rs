//! Reading one field of validated bytes.

use super::scan::ONES;
use serde_json::{Number, Value};

/// `bytes` (validated JSON) is not an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotObject;

fn skip_ws(bytes: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\n' | b'\r' | b'\t') = bytes.get(i) {
        i += 1;
    }
    i
}

/// The end of the string whose opening quote is at `i` (one past its
/// closing quote). `bytes` is valid JSON.
fn skip_string(bytes: &[u8], mut i: usize) -> usize {
    i += 1;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'"' => return i + 1,
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
    i
}

/// The end of the value starting at `i` (valid JSON).
fn skip_value(bytes: &[u8], i: usize) -> usize {
    match bytes.get(i) {
        Some(b'"') => skip_string(bytes, i),
        Some(b'{' | b'[') => {
            let mut depth = 0usize;
            let mut j = i;
            while let Some(&b) = bytes.get(j) {
                match b {
                    b'"' => {
                        j = skip_string(bytes, j);
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return j + 1;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            j
        }
        _ => {
            let mut j = i;
            while let Some(&b) = bytes.get(j) {
                if matches!(b, b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t') {
                    break;
                }
                j += 1;
            }
            j
        }
    }
}

/// Whether the JSON string `raw` (with its quotes) means `key`.
fn key_is(raw: &[u8], key: &str) -> bool {
    let inner = &raw[1..raw.len() - 1];
    if !inner.contains(&b'\\') {
        return inner == key.as_bytes();
    }
    serde_json::from_slice::<String>(raw).is_ok_and(|k| k == key)
}

/// The raw value of `key` in the object `bytes` (validated; whitespace
/// around it allowed): the last one when the key repeats, as
/// `JSON.parse` and serde_json keep it. `Err(NotObject)` when `bytes` is
/// another kind of value.
pub fn object_get<'a>(bytes: &'a [u8], key: &str) -> Result<Option<&'a [u8]>, NotObject> {
    let mut i = skip_ws(bytes, 0);
    if bytes.get(i) != Some(&b'{') {
        return Err(NotObject);
    }
    let mut found = None;
    i += 1;
    loop {
        i = skip_ws(bytes, i);
        match bytes.get(i) {
            Some(b'"') => {}
            _ => return Ok(found), // `}` (or the end)
        }
        let key_end = skip_string(bytes, i);
        let matched = key_end - i == key.len() + 2 || bytes[i + 1..key_end].contains(&b'\\');
        let matched = matched && key_is(&bytes[i..key_end], key);
        i = skip_ws(bytes, key_end) + 1; // the `:`
        i = skip_ws(bytes, i);
        let end = skip_value(bytes, i);
        if matched {
            found = Some(&bytes[i..end]);
        }
        i = skip_ws(bytes, end);
        if bytes.get(i) == Some(&b',') {
            i += 1;
        }
    }
}

/// [`object_get`] for a flat object (see [`Shape::flat`]): `quoted` is the
/// key with its quotes, as it appears in flat text (which has no escapes,
/// so a key needing one is never found). In flat text the quotes pair up
/// into strings, and a string followed by `:` is a key; the quotes are
/// found eight bytes at a time. The last occurrence wins, or the first when
/// `first` (for a [`Shape::unique`] object). Returns the value and where its
/// key starts.
pub fn flat_get<'a>(bytes: &'a [u8], quoted: &[u8], first: bool) -> Option<(&'a [u8], usize)> {
    let mut found = None;
    // The opening quote of the string being read, if inside one.
    let mut open = None;
    // The wanted key's string value (its start, and its key's), until its
    // closing quote.
    let mut value_at = None;
    let mut base = 0;
    while base < bytes.len() {
        let word = match bytes.get(base..base + 8) {
            Some(chunk) => u64::from_le_bytes(chunk.try_into().ok()?),
            None => {
                let mut word = [b' '; 8];
                word[..bytes.len() - base].copy_from_slice(&bytes[base..]);
                u64::from_le_bytes(word)
            }
        };
        let mut quotes = quote_bytes(word);
        while quotes != 0 {
            let q = base + (quotes.trailing_zeros() / 8) as usize;
            quotes &= quotes - 1;
            let Some(start) = open.take() else {
                open = Some(q);
                continue;
            };
            if let Some((at, key)) = value_at.take() {
                found = Some((&bytes[at..=q], key));
                if first {
                    return found;
                }
                continue;
            }
            let colon = skip_ws(bytes, q + 1);
            if bytes.get(colon) != Some(&b':') || &bytes[start..=q] != quoted {
                continue; // a value, or another key
            }
            let at = skip_ws(bytes, colon + 1);
            if bytes.get(at) == Some(&b'"') {
                value_at = Some((at, start)); // ends at the next closing quote
            } else {
                found = Some((&bytes[at..scalar_end(bytes, at)], start));
                if first {
                    return found;
                }
            }
        }
        base += 8;
    }
    found
}

/// Where the number or literal starting at `at` ends.
fn scalar_end(bytes: &[u8], at: usize) -> usize {
    let mut j = at + 1;
    while let Some(&b) = bytes.get(j) {
        if matches!(b, b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t') {
            break;
        }
        j += 1;
    }
    j
}

/// Whether a key's quoted form can be looked for by a plain byte match in
/// flat text ([`flat_at`]): it contains a character other than the ones
/// that separate strings outside them (whitespace, `:` and `,`), or is
/// empty. Then any match is a whole string: two consecutive quotes in flat
/// text enclose a string or such separators.
pub fn plain_key(key: &str) -> bool {
    key.is_empty()
        || key
            .bytes()
            .any(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b',' | b':'))
}

/// In flat text, the value of the key `quoted` (a [`plain_key`] with its
/// quotes) if that key is at byte `at` (items of one stream usually share
/// a layout, so the last place a key was found is tried first).
pub fn flat_at<'a>(bytes: &'a [u8], at: usize, quoted: &[u8]) -> Option<&'a [u8]> {
    let after = at + quoted.len();
    if bytes.get(at..after)? != quoted {
        return None;
    }
    let colon = skip_ws(bytes, after);
    if bytes.get(colon) != Some(&b':') {
        return None;
    }
    let v = skip_ws(bytes, colon + 1);
    let end = match bytes.get(v)? {
        b'"' => v + 2 + memchr::memchr(b'"', bytes.get(v + 1..)?)?,
        _ => scalar_end(bytes, v),
    };
    Some(&bytes[v..end])
}

/// The high bit of every byte of `word` that is `"` (exactly, no carries).
#[inline]
fn quote_bytes(word: u64) -> u64 {
    const LOWS: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let x = word ^ (ONES * u64::from(b'"'));
    !(((x & LOWS) + LOWS) | x | LOWS)
}

/// Follow `path` through objects only, starting at `bytes`: returns the
/// raw value reached and how many segments were used. Fewer than all are
/// used when a value on the way is not an object (the caller parses that
/// value and goes on with its own rules); `None` is a missing key.
pub fn object_path<'a, 'p>(
    bytes: &'a [u8],
    path: impl IntoIterator<Item = &'p str>,
) -> (Option<&'a [u8]>, usize) {
    let mut cur = bytes;
    let mut used = 0;
    for seg in path {
        match object_get(cur, seg) {
            Ok(Some(next)) => cur = next,
            Ok(None) => return (None, used + 1),
            Err(NotObject) => return (Some(cur), used),
        }
        used += 1;
    }
    (Some(cur), used)
}

/// Parse one validated value (a field read with [`object_get`]) into the
/// `Value` serde_json makes of it; small scalars without serde_json.
pub fn leaf(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    let start = skip_ws(bytes, 0);
    let mut end = bytes.len();
    while end > start && matches!(bytes[end - 1], b' ' | b'\n' | b'\r' | b'\t') {
        end -= 1;
    }
    let text = &bytes[start..end];
    match text.first() {
        // A plain non-negative integer of up to 18 digits: serde_json gives a u64.
        Some(b'1'..=b'9') if text.len() <= 18 => {
            let mut n = 0u64;
            for &d in text {
                if !d.is_ascii_digit() {
                    return serde_json::from_slice(text);
                }
                n = n * 10 + u64::from(d - b'0');
            }
            return Ok(Value::Number(Number::from(n)));
        }
        Some(b'0') if text.len() == 1 => return Ok(Value::Number(Number::from(0u64))),
        Some(b't') if text == b"true" => return Ok(Value::Bool(true)),
        Some(b'f') if text == b"false" => return Ok(Value::Bool(false)),
        Some(b'n') if text == b"null" => return Ok(Value::Null),
        _ => {}
    }
    if text.len() >= 2 && text[0] == b'"' && !text.contains(&b'\\') {
        if let Ok(s) = std::str::from_utf8(&text[1..text.len() - 1]) {
            return Ok(Value::String(s.to_owned()));
        }
    }
    serde_json::from_slice(text)
}

#[cfg(test)]
mod tests {
    use super::super::check_element;
    use super::super::Shape;
    use super::*;
    #[test]
    fn fields_are_read_without_parsing_the_rest() {
        let item = br#"{"id":1,"n":{"k":[1,"}"]},"s":"x\"y","n":{"k":2},"e\u0073c":true}"#;
        assert_eq!(check_element(item).map(|s| s.flat), Some(false));
        assert_eq!(object_get(item, "id"), Ok(Some(&b"1"[..])));
        // The last of a repeated key, as JSON.parse keeps it.
        assert_eq!(object_get(item, "n"), Ok(Some(&br#"{"k":2}"#[..])));
        assert_eq!(object_get(item, "esc"), Ok(Some(&b"true"[..])));
        assert_eq!(object_get(item, "missing"), Ok(None));
        assert_eq!(object_get(b" [1] ", "0"), Err(NotObject));
        assert_eq!(object_path(item, ["n", "k"]), (Some(&b"2"[..]), 2));
        assert_eq!(object_path(item, ["id", "x"]), (Some(&b"1"[..]), 1));
        assert_eq!(object_path(item, ["nope", "x"]), (None, 1));
        assert_eq!(leaf(b" 42 ").unwrap(), serde_json::json!(42));
        assert_eq!(leaf(br#""x\"y""#).unwrap(), serde_json::json!("x\"y"));
        for text in [
            "0",
            "-3",
            "1.25",
            "1e2",
            "123456789012345678901",
            "\"\u{e9}\"",
            "[1,{\"a\":null}]",
            "007",
        ] {
            let want: Result<Value, _> = serde_json::from_str(text);
            assert_eq!(leaf(text.as_bytes()).ok(), want.ok(), "{text}");
        }
    }

    #[test]
    fn flat_objects_are_read_key_by_key() {
        let item = br#"{"id":1, "k" : "score", "score":7,"x":"e","":true,"score" : "last" }"#;
        assert_eq!(
            check_element(item),
            Some(Shape {
                flat: true,
                unique: false
            })
        );
        let find = |key: &str| flat_get(item, format!("\"{key}\"").as_bytes(), false).map(|f| f.0);
        assert_eq!(find("score"), Some(&b"\"last\""[..]));
        assert_eq!(find("id"), Some(&b"1"[..]));
        assert_eq!(find("k"), Some(&b"\"score\""[..]));
        assert_eq!(find(""), Some(&b"true"[..]));
        assert_eq!(find("nope"), None);
        assert_eq!(flat_get(item, b"\"score\"", true), Some((&b"7"[..], 24)));
        // The place a key was found is tried first.
        assert_eq!(flat_at(item, 24, b"\"score\""), Some(&b"7"[..]));
        assert_eq!(flat_at(item, 25, b"\"score\""), None);
        // `"score"` at 15 is a value, not a key.
        assert_eq!(flat_at(item, 15, b"\"score\""), None);
        assert!(plain_key("a") && plain_key("") && plain_key(" x,"));
        assert!(!plain_key(",") && !plain_key(" : "));
        let flat = br#"{"a":"",": y":1, "b" :2, ",":3}"#;
        assert_eq!(
            check_element(flat),
            Some(Shape {
                flat: true,
                unique: true
            })
        );
        for key in ["a", "b", ": y", "", ",", "zz", "\"", "\\"] {
            let fast = flat_get(flat, format!("\"{key}\"").as_bytes(), false).map(|f| f.0);
            assert_eq!(fast, object_get(flat, key).unwrap(), "{key}");
        }
        assert_eq!(flat_get(b" {} ", b"\"a\"", false), None);
    }
}
