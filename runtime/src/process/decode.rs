//! Turning a child's stdout into items as the bytes arrive.
//!
//! - [`decode_json`]: `JSON.parse(stdout.trim() || "null")` with a top-level
//!   array spread into items: elements are cut (and validated, by
//!   [`raw::scan_element`]) where they lie in the read buffer, or by a byte
//!   scanner when one spans two reads, and serde_json parses each from a
//!   slice, so a 60 MB array never sits in memory whole. [`decode_json_to`]
//!   hands the elements' bytes to a [`Sink`] instead, to be parsed elsewhere
//!   with [`parse_element`] or read unparsed when validated.
//! - [`decode_lines`]: `stdout.split(/\r?\n/).filter(Boolean)`, line by line.
//!
//! Both hand every item to `emit`, which returns `false` when nobody wants
//! more (the consumer went away); decoding then stops with [`Stop::Consumer`].
//!
//! Parse errors read `<serde_json message> at position N`, N a byte offset
//! from the array's `[` (inside an element) or from the start of the value.
//!
//! Differences from decoding the whole text at once: leading whitespace is
//! skipped by the JavaScript `trim()` rules for ASCII, U+00A0 and U+FEFF only
//! (other Unicode spaces before the value are a parse error), trailing
//! whitespace after the value must be JSON whitespace, and invalid UTF-8
//! inside a JSON string is a parse error instead of U+FFFD.

use crate::value::raw::{self, Scan, Shape};
use crate::value::Item;
use serde::de::{DeserializeSeed, Deserializer, SeqAccess, Visitor};
use std::fmt;
use std::io::{BufRead, ErrorKind, Read};

/// Why decoding stopped before the end of the stream.
#[derive(Debug)]
pub enum Stop {
    /// `emit` returned `false`.
    Consumer,
    /// The bytes are not JSON; the text is serde_json's message (with the
    /// line and column in the whole stream).
    Parse(String),
    /// Reading the pipe failed (this includes the output cap, which the
    /// reader reports as an I/O error).
    Io(std::io::Error),
}

/// Decode one JSON value from `input`; an array yields its elements one by
/// one, anything else yields itself, and empty (all-whitespace) input yields
/// `null`.
pub fn decode_json<R: BufRead>(input: R, emit: &mut dyn FnMut(Item) -> bool) -> Result<(), Stop> {
    let mut sink = Parsing {
        emit,
        width: std::cell::Cell::new(0),
    };
    decode_json_to(input, &mut sink)
}

/// Where [`decode_json_to`] puts what it finds.
pub trait Sink {
    /// A whole item (a non-array value, or `null` for empty input); `false`
    /// stops decoding.
    fn item(&mut self, item: Item) -> bool;

    /// The bytes of one element of a top-level array (not yet parsed: see
    /// [`parse_element`]), which starts `offset` bytes after the `[`;
    /// `checked` is `Some(shape)` when [`raw::scan_element`] accepted them
    /// (serde_json parses them without error). `false` stops decoding.
    fn element(
        &mut self,
        bytes: &[u8],
        offset: usize,
        checked: Option<Shape>,
    ) -> Result<bool, Stop>;
}

/// [`decode_json`]'s sink: parse each element here and emit it.
struct Parsing<'a> {
    emit: &'a mut dyn FnMut(Item) -> bool,
    width: std::cell::Cell<usize>,
}

impl Sink for Parsing<'_> {
    fn item(&mut self, item: Item) -> bool {
        (self.emit)(item)
    }

    fn element(
        &mut self,
        bytes: &[u8],
        offset: usize,
        _checked: Option<Shape>,
    ) -> Result<bool, Stop> {
        let item = parse_element(bytes, offset, &self.width).map_err(Stop::Parse)?;
        Ok((self.emit)(item))
    }
}

/// Parse one array element found by the splitter. `width` carries the
/// previous element's field count between calls (maps are sized from it).
/// The error is serde_json's message at the byte offset in the array.
pub fn parse_element(
    bytes: &[u8],
    offset: usize,
    width: &std::cell::Cell<usize>,
) -> Result<Item, String> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    Element { width }
        .deserialize(&mut de)
        .and_then(|item| de.end().map(|()| item))
        .map_err(|e| match element_error(&e, bytes, offset) {
            Stop::Parse(message) => message,
            other => format!("{other:?}"),
        })
}

/// [`decode_json`] with the elements of a top-level array handed to `sink`
/// as bytes, so that another thread can parse them.
pub fn decode_json_to<R: BufRead>(mut input: R, sink: &mut dyn Sink) -> Result<(), Stop> {
    match skip_leading_space(&mut input)? {
        None => {
            if sink.item(Item::Null) {
                Ok(())
            } else {
                Err(Stop::Consumer)
            }
        }
        Some((first, taken)) if taken.is_empty() => parse_value(input, first, sink),
        // Bytes read while looking for a split space character: put them back.
        Some((first, taken)) => parse_value(
            &mut std::io::BufReader::new(std::io::Cursor::new(taken).chain(input)),
            first,
            sink,
        ),
    }
}

fn parse_value<R: BufRead>(mut input: R, first: u8, sink: &mut dyn Sink) -> Result<(), Stop> {
    if first == b'[' {
        return split_array(&mut input, sink);
    }
    // Anything else is one item: let serde_json read it whole.
    let mut de = serde_json::Deserializer::from_reader(input);
    let value: Item = serde::Deserialize::deserialize(&mut de).map_err(serde_stop)?;
    de.end().map_err(serde_stop)?;
    if sink.item(value) {
        Ok(())
    } else {
        Err(Stop::Consumer)
    }
}

/// JSON's whitespace (what may separate array elements).
fn is_json_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// The elements of a top-level array, one by one: a byte scanner finds where
/// each element ends (outside strings, at depth 0, the next `,` or `]`),
/// then serde_json parses just that element from a slice (much cheaper than
/// its byte-at-a-time reader). Positions in messages are byte offsets from
/// the start of the array, like JavaScript's `at position N`.
fn split_array<R: BufRead>(input: &mut R, sink: &mut dyn Sink) -> Result<(), Stop> {
    input.consume(1); // the `[`
    let mut offset = 1usize; // bytes consumed since the `[`
    let mut element: Vec<u8> = Vec::with_capacity(256);
    let mut element_start = offset;
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    let mut count = 0usize;
    loop {
        if element.is_empty() {
            // Fast path: whole elements inside the buffer, validated as they
            // are cut; anything it does not decide goes the byte-wise way.
            let buf = fill(input)?;
            let (mut used, mut last) = (0, false);
            while !last {
                let Scan::Element {
                    len,
                    last: end,
                    shape,
                } = raw::scan_element(&buf[used..])
                else {
                    break;
                };
                count += 1;
                if !sink.element(&buf[used..used + len], offset + used, Some(shape))? {
                    return Err(Stop::Consumer);
                }
                used += len + 1;
                last = end;
            }
            if used > 0 {
                input.consume(used);
                offset += used;
                element_start = offset;
                if last {
                    return expect_end(input, offset);
                }
                continue;
            }
        }
        let buf = fill(input)?;
        if buf.is_empty() {
            return Err(parse_error("EOF while parsing a list", offset));
        }
        let mut end = None;
        for (i, &b) in buf.iter().enumerate() {
            if in_string {
                if escaped {
                    escaped = false;
                } else if b == b'\\' {
                    escaped = true;
                } else if b == b'"' {
                    in_string = false;
                }
                continue;
            }
            match b {
                b'"' => in_string = true,
                b'[' | b'{' => depth += 1,
                b']' | b'}' if depth > 0 => depth -= 1,
                b',' | b']' | b'}' if depth == 0 => {
                    end = Some((i, b));
                    break;
                }
                _ => {}
            }
        }
        let Some((i, terminator)) = end else {
            element.extend_from_slice(buf);
            let n = buf.len();
            input.consume(n);
            offset += n;
            continue;
        };
        element.extend_from_slice(&buf[..i]);
        input.consume(i + 1);
        let at = offset + i;
        offset += i + 1;
        if terminator == b'}' {
            return Err(parse_error("expected `,` or `]`", at));
        }
        if element.iter().all(|&b| is_json_space(b)) {
            if terminator == b']' && count == 0 {
                return expect_end(input, offset);
            }
            let message = if terminator == b']' {
                "trailing comma"
            } else {
                "expected value"
            };
            return Err(parse_error(message, at));
        }
        count += 1;
        let checked = raw::check_element(&element);
        if !sink.element(&element, element_start, checked)? {
            return Err(Stop::Consumer);
        }
        element.clear();
        element_start = offset;
        if terminator == b']' {
            return expect_end(input, offset);
        }
    }
}

/// After the closing `]`: only whitespace may follow.
fn expect_end<R: BufRead>(input: &mut R, mut offset: usize) -> Result<(), Stop> {
    loop {
        let buf = fill(input)?;
        if buf.is_empty() {
            return Ok(());
        }
        if let Some(i) = buf
            .iter()
            .position(|&b| !(is_json_space(b) || b == 0x0b || b == 0x0c))
        {
            return Err(parse_error("trailing characters", offset + i));
        }
        let n = buf.len();
        input.consume(n);
        offset += n;
    }
}

fn parse_error(message: &str, position: usize) -> Stop {
    Stop::Parse(format!("{message} at position {position}"))
}

/// serde_json's error for one element, its line/column turned into a byte
/// offset in the whole array.
fn element_error(e: &serde_json::Error, element: &[u8], start: usize) -> Stop {
    let text = e.to_string();
    let message = text
        .rfind(" at line ")
        .map_or(text.as_str(), |i| &text[..i]);
    let mut line_start = 0;
    for _ in 1..e.line() {
        match element[line_start..].iter().position(|&b| b == b'\n') {
            Some(i) => line_start += i + 1,
            None => break,
        }
    }
    let within = (line_start + e.column().saturating_sub(1)).min(element.len());
    parse_error(message, start + within)
}

/// Decode non-empty lines (a `\r` before `\n` is dropped) as string items;
/// invalid UTF-8 becomes U+FFFD.
pub fn decode_lines<R: BufRead>(
    mut input: R,
    emit: &mut dyn FnMut(Item) -> bool,
) -> Result<(), Stop> {
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = match input.read_until(b'\n', &mut line) {
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(Stop::Io(e)),
        };
        if n == 0 {
            return Ok(());
        }
        if line.last() == Some(&b'\n') {
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
        }
        if line.is_empty() {
            continue;
        }
        let text = match String::from_utf8(std::mem::take(&mut line)) {
            Ok(text) => text,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        };
        if !emit(Item::String(text)) {
            return Err(Stop::Consumer);
        }
    }
}

fn serde_stop(e: serde_json::Error) -> Stop {
    if e.is_io() {
        // serde_json keeps the io::Error's text; rebuild an error of the same kind.
        return Stop::Io(std::io::Error::other(e.to_string()));
    }
    Stop::Parse(e.to_string())
}

/// Skip what `String.prototype.trim` removes at the start (ASCII space,
/// U+00A0, U+FEFF). Returns `None` at the end of input, else the first byte
/// of the value and the bytes already consumed from it (empty unless a
/// would-be space character was split across reads).
fn skip_leading_space<R: BufRead>(input: &mut R) -> Result<Option<(u8, Vec<u8>)>, Stop> {
    loop {
        let buf = fill(input)?;
        let Some(&first) = buf.first() else {
            return Ok(None);
        };
        let candidate: &[u8] = match first {
            b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c => b" ",
            0xc2 => &[0xc2, 0xa0],
            0xef => &[0xef, 0xbb, 0xbf],
            _ => return Ok(Some((first, Vec::new()))),
        };
        let len = candidate.len();
        if len == 1 {
            input.consume(1);
            continue;
        }
        if buf.len() >= len {
            if &buf[..len] != candidate {
                return Ok(Some((first, Vec::new())));
            }
            input.consume(len);
            continue;
        }
        // The buffer ends inside the candidate: take its bytes one by one.
        let mut taken = Vec::with_capacity(len);
        while taken.len() < len && candidate.starts_with(&taken) {
            let Some(&byte) = fill(input)?.first() else {
                break;
            };
            input.consume(1);
            taken.push(byte);
        }
        if taken != candidate {
            return Ok(Some((first, taken)));
        }
    }
}

fn fill<R: BufRead>(input: &mut R) -> Result<&[u8], Stop> {
    loop {
        match input.fill_buf() {
            Ok(_) => break,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(Stop::Io(e)),
        }
    }
    input.fill_buf().map_err(Stop::Io)
}

/// One array element, as `serde_json::Value` would decode it, except that
/// an object's map is sized for as many fields as the previous element had
/// (array items usually share a shape), which saves the map's regrowth.
struct Element<'a> {
    width: &'a std::cell::Cell<usize>,
}

impl<'de> DeserializeSeed<'de> for Element<'_> {
    type Value = Item;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Item, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Element<'_> {
    type Value = Item;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Item, E> {
        Ok(Item::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Item, E> {
        Ok(Item::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Item, E> {
        Ok(Item::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Item, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Item::Null, Item::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Item, E> {
        Ok(Item::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Item, E> {
        Ok(Item::String(v))
    }

    fn visit_unit<E>(self) -> Result<Item, E> {
        Ok(Item::Null)
    }

    fn visit_none<E>(self) -> Result<Item, E> {
        Ok(Item::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Item, D::Error> {
        serde::Deserialize::deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Item, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element::<Item>()? {
            out.push(item);
        }
        Ok(Item::Array(out))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Item, A::Error> {
        let mut out = serde_json::Map::with_capacity(self.width.get());
        while let Some((key, value)) = map.next_entry::<String, Item>()? {
            out.insert(key, value);
        }
        self.width.set(out.len());
        Ok(Item::Object(out))
    }
}

#[cfg(test)]
#[path = "decode_tests.rs"]
mod tests;
