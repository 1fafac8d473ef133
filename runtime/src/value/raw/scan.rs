//! The conservative validator: [`scan_element`] and [`check_element`].

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

pub(super) const ONES: u64 = 0x0101_0101_0101_0101;
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;
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
