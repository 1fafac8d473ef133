//! JSON that stays as bytes until a stage needs more than a field of it.
//!
//! [`scan_element`] is a conservative validator: it says [`Scan::Element`]
//! only for text that `serde_json` certainly parses (into the value that
//! [`leaf`] and a later full parse give); anything it does not decide —
//! escaped surrogates, very long or very large numbers, deep nesting, bad
//! syntax, or input that ends too soon — is [`Scan::Unsure`], and the
//! caller parses that element with `serde_json` as before (which gives the
//! same items, or the same error). So an item that is never looked at in
//! full is still checked, and an invalid one still fails the run.
//!
//! [`object_get`] and [`leaf`] read one field of validated bytes without
//! building the rest of the item.

use serde_json::{Number, Value};

/// Deepest nesting the fast path accepts (serde_json's own limit is 128).
const MAX_DEPTH: usize = 64;
/// Most digits a number may have on the fast path (no overflow possible).
const MAX_DIGITS: usize = 100;

/// What [`scan_element`] found at the start of its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scan {
    /// `ws value ws` takes the first `len` bytes, followed by `,` (more
    /// elements) or `]` (`last`).
    Element {
        len: usize,
        last: bool,
        shape: Shape,
    },
    /// Not decided here (too short, unusual or invalid): parse it slowly.
    Unsure,
}

/// Scan one array element and its terminator at the start of `buf`.
pub fn scan_element(buf: &[u8]) -> Scan {
    let mut s = Scanner::new(buf, false);
    let Some(shape) = s.value() else {
        return Scan::Unsure;
    };
    s.ws();
    match buf.get(s.i) {
        Some(b',') => Scan::Element {
            len: s.i,
            last: false,
            shape,
        },
        Some(b']') => Scan::Element {
            len: s.i,
            last: true,
            shape,
        },
        _ => Scan::Unsure,
    }
}

/// `Some(shape)` when `bytes` is exactly `ws value ws` that
/// [`scan_element`] accepts.
pub fn check_element(bytes: &[u8]) -> Option<Shape> {
    let mut s = Scanner::new(bytes, true);
    let shape = s.value()?;
    s.ws();
    (s.i == bytes.len()).then_some(shape)
}

/// What the scan learnt about a validated value, for reading its fields.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Shape {
    /// An object whose values are all strings, numbers, booleans or `null`,
    /// with no backslash anywhere. In such text every `"` starts or ends a
    /// string and a string followed by `:` is a key ([`flat_get`]).
    pub flat: bool,
    /// A flat object with no key twice, so the first occurrence of a key
    /// is the one (JSON.parse keeps the last).
    pub unique: bool,
}

/// Byte classes inside a string.
const PLAIN: u8 = 0;
const QUOTE: u8 = 1;
const ESCAPE: u8 = 2;
const CONTROL: u8 = 3;
const HIGH: u8 = 4;

static STRING_CLASS: [u8; 256] = {
    let mut t = [PLAIN; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = if b < 0x20 {
            CONTROL
        } else if b >= 0x80 {
            HIGH
        } else if b == b'"' as usize {
            QUOTE
        } else if b == b'\\' as usize {
            ESCAPE
        } else {
            PLAIN
        };
        b += 1;
    }
    t
};

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit of the first byte of `word` (little-endian) that is `"`,
/// `\\`, below 0x20 or above 0x7f is set, and no bit below it; zero when
/// there is none. (Bits above the first may be set spuriously.)
#[inline]
fn needs_look(word: u64) -> u64 {
    let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
    let quote = zero(word ^ (ONES * u64::from(b'"')));
    let backslash = zero(word ^ (ONES * u64::from(b'\\')));
    let control = word.wrapping_sub(ONES * 0x20) & !word & HIGHS;
    quote | backslash | control | (word & HIGHS)
}

struct Scanner<'a> {
    buf: &'a [u8],
    i: usize,
    /// The input ends where `buf` does (else more may follow, and a number
    /// or literal at the end is undecided).
    complete: bool,
    /// A backslash was seen.
    escapes: bool,
    /// A 128-bit filter of the top-level object's keys so far (one bit per
    /// key, from its length and a few of its bytes).
    key_bits: u128,
    /// Two top-level keys may be the same (they set the same bit).
    repeated: bool,
}

impl<'a> Scanner<'a> {
    fn new(buf: &'a [u8], complete: bool) -> Self {
        Scanner {
            buf,
            i: 0,
            complete,
            escapes: false,
            key_bits: 0,
            repeated: false,
        }
    }

    #[inline]
    fn peek(&self) -> Option<u8> {
        self.buf.get(self.i).copied()
    }

    /// Whether a number or literal may end here: at a byte that cannot
    /// continue it, or at the end of complete input.
    #[inline]
    fn ends_here(&self, continues: impl Fn(u8) -> bool) -> Option<()> {
        match self.peek() {
            Some(b) if continues(b) => None,
            Some(_) => Some(()),
            None => self.complete.then_some(()),
        }
    }

    #[inline]
    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.peek() {
            self.i += 1;
        }
    }

    #[inline]
    fn eat(&mut self, b: u8) -> Option<()> {
        (self.peek()? == b).then(|| self.i += 1)
    }

    /// One value, iteratively; `None` when unsure, else its [`Shape`].
    fn value(&mut self) -> Option<Shape> {
        self.ws();
        let object = self.peek() == Some(b'{');
        // Bit d of `objects` is set when the container at depth d+1 is an object.
        let mut objects: u64 = 0;
        let mut depth = 0usize;
        let mut deepest = 0usize;
        'value: loop {
            self.ws();
            match self.peek()? {
                b'{' => {
                    self.i += 1;
                    self.ws();
                    if self.peek()? == b'}' {
                        self.i += 1;
                        deepest = deepest.max(depth + 1);
                    } else {
                        if depth == MAX_DEPTH {
                            return None;
                        }
                        objects |= 1 << depth;
                        depth += 1;
                        deepest = deepest.max(depth);
                        self.key(depth == 1)?;
                        continue 'value;
                    }
                }
                b'[' => {
                    self.i += 1;
                    self.ws();
                    if self.peek()? == b']' {
                        self.i += 1;
                        deepest = deepest.max(depth + 1);
                    } else {
                        if depth == MAX_DEPTH {
                            return None;
                        }
                        objects &= !(1 << depth);
                        depth += 1;
                        deepest = deepest.max(depth);
                        continue 'value;
                    }
                }
                b'"' => self.string()?,
                b'-' | b'0'..=b'9' => self.number()?,
                b't' => self.literal(b"true")?,
                b'f' => self.literal(b"false")?,
                b'n' => self.literal(b"null")?,
                _ => return None,
            }
            // After a value: close containers until one continues.
            loop {
                if depth == 0 {
                    let flat = object && deepest <= 1 && !self.escapes;
                    return Some(Shape {
                        flat,
                        unique: flat && !self.repeated,
                    });
                }
                self.ws();
                let in_object = objects & (1 << (depth - 1)) != 0;
                match self.peek()? {
                    b',' => {
                        self.i += 1;
                        if in_object {
                            self.ws();
                            self.key(depth == 1)?;
                        }
                        continue 'value;
                    }
                    b'}' if in_object => {
                        self.i += 1;
                        depth -= 1;
                    }
                    b']' if !in_object => {
                        self.i += 1;
                        depth -= 1;
                    }
                    _ => return None,
                }
            }
        }
    }

    /// `"key" ws :` (whitespace before the key already skipped); `top`:
    /// a key of the top-level object, remembered for [`Shape::unique`].
    #[inline(always)]
    fn key(&mut self, top: bool) -> Option<()> {
        if self.peek()? != b'"' {
            return None;
        }
        let start = self.i + 1;
        self.string()?;
        if top && !self.repeated {
            self.remember_key(start, self.i - 1);
        }
        self.ws();
        self.eat(b':')
    }

    /// Note a top-level key (raw text `start..end`) in the filter; when
    /// its bit is set already, the object may repeat a key and is not
    /// [`Shape::unique`] (two different keys sharing a bit only cost the
    /// fast lookup, never correctness).
    #[inline]
    fn remember_key(&mut self, start: usize, end: usize) {
        let key = &self.buf[start..end];
        let (first, last) = match key {
            [] => (0, 0),
            [one] => (*one, *one),
            [first, .., last] => (*first, *last),
        };
        let mix = (key.len() as u32)
            .wrapping_mul(0x9e37_79b1)
            .wrapping_add(u32::from(first).wrapping_mul(0x85eb_ca6b))
            .wrapping_add(u32::from(last).wrapping_mul(0xc2b2_ae35));
        let bit = 1u128 << (mix >> 25);
        self.repeated |= self.key_bits & bit != 0;
        self.key_bits |= bit;
    }

    #[inline]
    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.i + word.len();
        if self.buf.get(self.i..end)? != word {
            return None;
        }
        self.i = end;
        // A letter right after (`nullx`) is not ours to judge.
        self.ends_here(|b| b.is_ascii_alphanumeric() || b == b'_')
    }

    /// A string starting at the opening quote: eight bytes at a time up to
    /// the first byte that needs a look; the common end (a quote) here, the
    /// rest in [`Scanner::string_rest`].
    #[inline(always)]
    fn string(&mut self) -> Option<()> {
        let buf = self.buf;
        let start = self.i + 1;
        let mut i = start;
        while let Some(chunk) = buf.get(i..i + 8) {
            let special = needs_look(u64::from_le_bytes(chunk.try_into().ok()?));
            if special != 0 {
                i += (special.trailing_zeros() / 8) as usize;
                if buf[i] == b'"' {
                    self.i = i + 1;
                    return Some(());
                }
                break;
            }
            i += 8;
        }
        self.i = i;
        self.string_rest(start)
    }

    /// The rest of a string that started at `start` (after its quote),
    /// byte by byte from `self.i`: escapes, non-ASCII text, the last bytes
    /// of the input.
    #[cold]
    #[inline(never)]
    fn string_rest(&mut self, start: usize) -> Option<()> {
        let mut high = false;
        loop {
            let b = *self.buf.get(self.i)?;
            match STRING_CLASS[b as usize] {
                PLAIN => self.i += 1,
                QUOTE => break,
                ESCAPE => {
                    self.escapes = true;
                    match *self.buf.get(self.i + 1)? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.i += 2,
                        b'u' => {
                            let hex = self.buf.get(self.i + 2..self.i + 6)?;
                            let mut n = 0u32;
                            for &h in hex {
                                n = n * 16 + (h as char).to_digit(16)?;
                            }
                            // Surrogates (paired or not) go the slow way.
                            if (0xd800..=0xdfff).contains(&n) {
                                return None;
                            }
                            self.i += 6;
                        }
                        _ => return None,
                    }
                }
                HIGH => {
                    high = true;
                    self.i += 1;
                }
                _ => return None, // CONTROL: serde_json refuses it
            }
        }
        // Escapes are ASCII, so checking the raw text checks every part.
        if high && std::str::from_utf8(&self.buf[start..self.i]).is_err() {
            return None;
        }
        self.i += 1;
        Some(())
    }

    /// `-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?`, small enough that
    /// serde_json cannot find it out of range.
    #[inline]
    fn number(&mut self) -> Option<()> {
        self.eat(b'-');
        let int_start = self.i;
        match self.peek()? {
            b'0' => self.i += 1,
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        let int_digits = self.i - int_start;
        let mut digits = int_digits;
        if self.peek() == Some(b'.') {
            self.i += 1;
            let start = self.i;
            self.digits();
            if self.i == start {
                return None;
            }
            digits += self.i - start;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            let negative = match self.peek()? {
                b'-' => {
                    self.i += 1;
                    true
                }
                b'+' => {
                    self.i += 1;
                    false
                }
                _ => false,
            };
            let start = self.i;
            self.digits();
            let exp_digits = &self.buf[start..self.i];
            if exp_digits.is_empty() || exp_digits.len() > 3 {
                return None;
            }
            let exp = exp_digits
                .iter()
                .fold(0usize, |n, d| n * 10 + usize::from(d - b'0'));
            if !negative && int_digits + exp > 300 {
                return None;
            }
        }
        if digits > MAX_DIGITS {
            return None;
        }
        self.ends_here(|b| matches!(b, b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-'))
    }

    #[inline]
    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.i += 1;
        }
    }
}

// ------------------------------------------------------------ reading

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
    use super::*;

    fn element(text: &str) -> Scan {
        scan_element(text.as_bytes())
    }

    #[test]
    fn whole_elements_are_found_with_their_terminator() {
        let nothing = Shape::default();
        let flat = Shape {
            flat: true,
            unique: true,
        };
        assert_eq!(
            element("1,"),
            Scan::Element {
                len: 1,
                last: false,
                shape: nothing
            }
        );
        assert_eq!(
            element(" {\"a\": [1, {}], \"b\": \"x,]\"} ]"),
            Scan::Element {
                len: 28,
                last: true,
                shape: nothing
            }
        );
        assert_eq!(
            element("[] ,"),
            Scan::Element {
                len: 3,
                last: false,
                shape: nothing
            }
        );
        assert_eq!(
            element("{},"),
            Scan::Element {
                len: 2,
                last: false,
                shape: flat
            }
        );
        assert_eq!(
            element("{\"a\": 1, \"b\": \"x\", \"c\": null} ,"),
            Scan::Element {
                len: 30,
                last: false,
                shape: flat
            }
        );
        assert_eq!(element("{\"a\": \"\\n\"},").shape(), Some(nothing));
        assert_eq!(element("{\"a\": {}},").shape(), Some(nothing));
        assert_eq!(element("{\"a\": []},").shape(), Some(nothing));
        assert_eq!(element("[],").shape(), Some(nothing));
        // A repeated key: flat, not unique.
        assert_eq!(
            element("{\"ab\": 1, \"b\": 2, \"ab\": 3},").shape(),
            Some(Shape {
                flat: true,
                unique: false
            })
        );
        // The keys of the benchmark's items do not share a bit.
        assert_eq!(
            element(r#"{"id":1,"name":"item-0000001","score":92,"tag":"beta"},"#).shape(),
            Some(flat)
        );
        assert_eq!(element("\"\\u00e9\\n\u{e9}\",").len(), Some(12));
        assert_eq!(element("-0.5e-3,").len(), Some(7));
        assert_eq!(
            element("null]"),
            Scan::Element {
                len: 4,
                last: true,
                shape: nothing
            }
        );
    }

    impl Scan {
        fn len(self) -> Option<usize> {
            match self {
                Scan::Element { len, .. } => Some(len),
                Scan::Unsure => None,
            }
        }

        fn shape(self) -> Option<Shape> {
            match self {
                Scan::Element { shape, .. } => Some(shape),
                Scan::Unsure => None,
            }
        }
    }

    #[test]
    fn anything_undecided_or_invalid_is_unsure() {
        for text in [
            "1",            // the number may go on
            "{\"a\":1",     // cut off
            "\"abc",        // cut off
            "tru",          // cut off
            "01,",          // leading zero
            "1.,",          // no fraction digits
            "1e,",          // no exponent digits
            "1e400,",       // out of range
            "-,",           // no digits
            "+1,",          // plus sign
            "nul,",         // not a literal
            "nullx,",       // trailing letters
            "{\"a\" 1},",   // missing colon
            "{1:2},",       // key not a string
            "[1,],",        // trailing comma
            "{\"a\":1,},",  // trailing comma
            "[1}],",        // mismatched
            "1 2,",         // two values
            "\"\\x\",",     // bad escape
            "\"\\ud800\",", // surrogate
            "\"\\udc00\",", // lone trailing surrogate
            "\"\u{1}\",",   // control character
        ] {
            assert_eq!(element(text), Scan::Unsure, "{text:?}");
        }
        assert_eq!(scan_element(b"\"\xff\","), Scan::Unsure);
        assert_eq!(scan_element(b"\"\xc3\","), Scan::Unsure);
        let deep = format!("{}{}", "[".repeat(66), "]".repeat(66));
        assert_eq!(element(&format!("{deep},")), Scan::Unsure);
        let ok = format!("{}{}", "[".repeat(64), "]".repeat(64));
        assert_eq!(element(&format!("{ok},")).len(), Some(128));
        assert_eq!(element(&format!("{},", "9".repeat(101))), Scan::Unsure);
        assert_eq!(element(&format!("{},", "9".repeat(100))).len(), Some(100));
    }

    /// Every text the scanner accepts, serde_json parses.
    #[test]
    fn what_the_scanner_accepts_serde_json_parses() {
        let texts = [
            "0",
            "-0",
            "1.5",
            "-12e+5",
            "1E-300",
            "123456789012345678901234",
            "\"\"",
            "\"a\\\"b\\\\c\\/\\b\\f\\n\\r\\t\\u0041\\uFFFF\"",
            "\"\u{1f600}\u{e9}\"",
            "true",
            "false",
            "null",
            "[]",
            "{}",
            "[1,[2,[3]]]",
            "{\"a\":{\"b\":[]},\"a\":2}",
            " \t\n\r{ \"k\" : [ 1 , \"x\" ] } ",
        ];
        for text in texts {
            assert!(check_element(text.as_bytes()).is_some(), "{text}");
            assert!(serde_json::from_str::<Value>(text).is_ok(), "{text}");
        }
    }

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

    #[test]
    fn the_word_scan_stops_at_the_first_byte_that_needs_a_look() {
        for (i, special) in [b'"', b'\\', 0x00, 0x1f, 0x80, 0xff]
            .into_iter()
            .enumerate()
        {
            for at in 0..8 {
                let mut word = *b"abcdefgh";
                word[at] = special;
                // Later bytes that also need a look do not hide the first.
                if at < 7 {
                    word[7] = [b'"', 0x01, 0xc3][i % 3];
                }
                let got = needs_look(u64::from_le_bytes(word));
                assert_eq!(got.trailing_zeros() / 8, at as u32, "{special:#x} at {at}");
            }
        }
        assert_eq!(needs_look(u64::from_le_bytes(*b" !#[]~\x7f0")), 0);
    }
}
