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

/// The canonical (RFC 8785) text of `value` as serde would give it to
/// `serde_json::to_value` — the same text as `to_canonical(&to_value(v))`,
/// written straight from the value: no `Value` tree, one buffer. An
/// object's entries are written as they come and put in order at its end
/// (nothing moves when they come in order).
pub fn to_canonical_of<T: serde::Serialize + ?Sized>(
    value: &T,
) -> std::result::Result<String, CanonError> {
    let mut out = String::with_capacity(256);
    value.serialize(Canon { out: &mut out })?;
    Ok(out)
}

/// Why a value has no canonical text (a custom `Serialize` refused, or a
/// map key that is not a string).
#[derive(Debug)]
pub struct CanonError(String);

impl std::fmt::Display for CanonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CanonError {}

impl serde::ser::Error for CanonError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        CanonError(msg.to_string())
    }
}

/// Integers a double holds exactly print as integers (as `write_number`).
const MAX_EXACT: u64 = 1 << 53;

fn write_i64(out: &mut String, i: i64) {
    if i.unsigned_abs() <= MAX_EXACT {
        out.push_str(itoa::Buffer::new().format(i));
    } else {
        write_f64(out, i as f64);
    }
}

fn write_u64(out: &mut String, u: u64) {
    if u <= MAX_EXACT {
        out.push_str(itoa::Buffer::new().format(u));
    } else {
        write_f64(out, u as f64);
    }
}

struct Canon<'a> {
    out: &'a mut String,
}

/// An array being written.
struct Seq<'a> {
    out: &'a mut String,
    first: bool,
    /// `}` to close after `]` (a tuple variant's `{"name":[…]}`).
    close_variant: bool,
}

/// An object being written: each entry's key and where its `"key":value`
/// text lies in `out`.
struct Obj<'a> {
    out: &'a mut String,
    start: usize,
    entries: Vec<(std::borrow::Cow<'static, str>, usize, usize)>,
    /// The key of the entry whose value comes next (maps).
    key: Option<String>,
    close_variant: bool,
}

impl<'a> Obj<'a> {
    fn new(out: &'a mut String, len: Option<usize>, close_variant: bool) -> Self {
        out.push('{');
        let start = out.len();
        Obj {
            out,
            start,
            entries: Vec::with_capacity(len.unwrap_or(8)),
            key: None,
            close_variant,
        }
    }

    fn entry<T: serde::Serialize + ?Sized>(
        &mut self,
        key: std::borrow::Cow<'static, str>,
        value: &T,
    ) -> std::result::Result<(), CanonError> {
        if !self.entries.is_empty() {
            self.out.push(',');
        }
        let at = self.out.len();
        write_string(self.out, &key);
        self.out.push(':');
        value.serialize(Canon {
            out: &mut *self.out,
        })?;
        self.entries.push((key, at, self.out.len()));
        Ok(())
    }

    fn finish(mut self) {
        let in_order = self
            .entries
            .windows(2)
            .all(|w| utf16_cmp(&w[0].0, &w[1].0) == std::cmp::Ordering::Less);
        if !in_order {
            // RFC 8785 §3.2.3 (a later duplicate key wins, as in a map).
            // Every event is out of order (its `kind` tag comes first): its
            // entries are copied aside once, into a buffer this thread
            // keeps, and back in order.
            self.entries
                .sort_unstable_by(|a, b| utf16_cmp(&a.0, &b.0).then(a.1.cmp(&b.1)));
            let mut reorder = |body: &mut String| {
                body.clear();
                body.push_str(&self.out[self.start..]);
                let base = self.start;
                self.out.truncate(base);
                let mut first = true;
                for (i, (key, from, to)) in self.entries.iter().enumerate() {
                    if self.entries.get(i + 1).is_some_and(|next| next.0 == *key) {
                        continue;
                    }
                    if !first {
                        self.out.push(',');
                    }
                    first = false;
                    self.out.push_str(&body[from - base..to - base]);
                }
            };
            thread_local! {
                static BODY: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
            }
            BODY.with(|b| match b.try_borrow_mut() {
                Ok(mut body) => {
                    reorder(&mut body);
                    if body.capacity() > 64 << 10 {
                        *body = String::new();
                    }
                }
                Err(_) => reorder(&mut String::new()),
            });
        }
        self.out.push('}');
        if self.close_variant {
            self.out.push('}');
        }
    }
}

fn utf16_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    if a.is_ascii() && b.is_ascii() {
        return a.cmp(b);
    }
    a.encode_utf16().cmp(b.encode_utf16())
}

/// A map key: a string, or what serde_json turns into one.
struct Key;

macro_rules! key_int {
    ($($f:ident: $t:ty),*) => {$(
        fn $f(self, v: $t) -> std::result::Result<String, CanonError> {
            Ok(v.to_string())
        }
    )*};
}

macro_rules! key_refused {
    ($($f:ident: $t:ty),*) => {$(
        fn $f(self, _: $t) -> std::result::Result<String, CanonError> {
            Err(key_error())
        }
    )*};
}

fn key_error() -> CanonError {
    CanonError("a map key must be a string".into())
}

impl serde::Serializer for Key {
    type Ok = String;
    type Error = CanonError;
    type SerializeSeq = serde::ser::Impossible<String, CanonError>;
    type SerializeTuple = serde::ser::Impossible<String, CanonError>;
    type SerializeTupleStruct = serde::ser::Impossible<String, CanonError>;
    type SerializeTupleVariant = serde::ser::Impossible<String, CanonError>;
    type SerializeMap = serde::ser::Impossible<String, CanonError>;
    type SerializeStruct = serde::ser::Impossible<String, CanonError>;
    type SerializeStructVariant = serde::ser::Impossible<String, CanonError>;

    key_int!(serialize_i8: i8, serialize_i16: i16, serialize_i32: i32, serialize_i64: i64,
        serialize_u8: u8, serialize_u16: u16, serialize_u32: u32, serialize_u64: u64,
        serialize_bool: bool, serialize_char: char);
    key_refused!(serialize_f32: f32, serialize_f64: f64, serialize_bytes: &[u8]);

    fn serialize_str(self, v: &str) -> std::result::Result<String, CanonError> {
        Ok(v.to_string())
    }
    fn serialize_none(self) -> std::result::Result<String, CanonError> {
        Err(key_error())
    }
    fn serialize_some<T: serde::Serialize + ?Sized>(
        self,
        _: &T,
    ) -> std::result::Result<String, CanonError> {
        Err(key_error())
    }
    fn serialize_unit(self) -> std::result::Result<String, CanonError> {
        Err(key_error())
    }
    fn serialize_unit_struct(self, _: &'static str) -> std::result::Result<String, CanonError> {
        Err(key_error())
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> std::result::Result<String, CanonError> {
        Ok(variant.to_string())
    }
    fn serialize_newtype_struct<T: serde::Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> std::result::Result<String, CanonError> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: serde::Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> std::result::Result<String, CanonError> {
        Err(key_error())
    }
    fn serialize_seq(
        self,
        _: Option<usize>,
    ) -> std::result::Result<Self::SerializeSeq, CanonError> {
        Err(key_error())
    }
    fn serialize_tuple(self, _: usize) -> std::result::Result<Self::SerializeTuple, CanonError> {
        Err(key_error())
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> std::result::Result<Self::SerializeTupleStruct, CanonError> {
        Err(key_error())
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> std::result::Result<Self::SerializeTupleVariant, CanonError> {
        Err(key_error())
    }
    fn serialize_map(
        self,
        _: Option<usize>,
    ) -> std::result::Result<Self::SerializeMap, CanonError> {
        Err(key_error())
    }
    fn serialize_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> std::result::Result<Self::SerializeStruct, CanonError> {
        Err(key_error())
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> std::result::Result<Self::SerializeStructVariant, CanonError> {
        Err(key_error())
    }
}

type Done = std::result::Result<(), CanonError>;

impl<'a> serde::Serializer for Canon<'a> {
    type Ok = ();
    type Error = CanonError;
    type SerializeSeq = Seq<'a>;
    type SerializeTuple = Seq<'a>;
    type SerializeTupleStruct = Seq<'a>;
    type SerializeTupleVariant = Seq<'a>;
    type SerializeMap = Obj<'a>;
    type SerializeStruct = Obj<'a>;
    type SerializeStructVariant = Obj<'a>;

    fn serialize_bool(self, v: bool) -> Done {
        self.out.push_str(if v { "true" } else { "false" });
        Ok(())
    }
    fn serialize_i8(self, v: i8) -> Done {
        self.serialize_i64(v.into())
    }
    fn serialize_i16(self, v: i16) -> Done {
        self.serialize_i64(v.into())
    }
    fn serialize_i32(self, v: i32) -> Done {
        self.serialize_i64(v.into())
    }
    fn serialize_i64(self, v: i64) -> Done {
        write_i64(self.out, v);
        Ok(())
    }
    fn serialize_u8(self, v: u8) -> Done {
        self.serialize_u64(v.into())
    }
    fn serialize_u16(self, v: u16) -> Done {
        self.serialize_u64(v.into())
    }
    fn serialize_u32(self, v: u32) -> Done {
        self.serialize_u64(v.into())
    }
    fn serialize_u64(self, v: u64) -> Done {
        write_u64(self.out, v);
        Ok(())
    }
    fn serialize_f32(self, v: f32) -> Done {
        self.serialize_f64(v.into())
    }
    fn serialize_f64(self, v: f64) -> Done {
        write_f64(self.out, v);
        Ok(())
    }
    fn serialize_char(self, v: char) -> Done {
        write_string(self.out, v.encode_utf8(&mut [0; 4]));
        Ok(())
    }
    fn serialize_str(self, v: &str) -> Done {
        write_string(self.out, v);
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> Done {
        use serde::ser::SerializeSeq;
        let mut seq = self.serialize_seq(Some(v.len()))?;
        for b in v {
            seq.serialize_element(b)?;
        }
        seq.end()
    }
    fn serialize_none(self) -> Done {
        self.out.push_str("null");
        Ok(())
    }
    fn serialize_some<T: serde::Serialize + ?Sized>(self, value: &T) -> Done {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Done {
        self.serialize_none()
    }
    fn serialize_unit_struct(self, _: &'static str) -> Done {
        self.serialize_none()
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Done {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: serde::Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Done {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: serde::Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Done {
        let mut obj = Obj::new(self.out, Some(1), false);
        obj.entry(variant.into(), value)?;
        obj.finish();
        Ok(())
    }
    fn serialize_seq(self, _: Option<usize>) -> std::result::Result<Seq<'a>, CanonError> {
        self.out.push('[');
        Ok(Seq {
            out: self.out,
            first: true,
            close_variant: false,
        })
    }
    fn serialize_tuple(self, len: usize) -> std::result::Result<Seq<'a>, CanonError> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        len: usize,
    ) -> std::result::Result<Seq<'a>, CanonError> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> std::result::Result<Seq<'a>, CanonError> {
        self.out.push('{');
        write_string(self.out, variant);
        self.out.push_str(":[");
        Ok(Seq {
            out: self.out,
            first: true,
            close_variant: true,
        })
    }
    fn serialize_map(self, len: Option<usize>) -> std::result::Result<Obj<'a>, CanonError> {
        Ok(Obj::new(self.out, len, false))
    }
    fn serialize_struct(
        self,
        _: &'static str,
        len: usize,
    ) -> std::result::Result<Obj<'a>, CanonError> {
        Ok(Obj::new(self.out, Some(len), false))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> std::result::Result<Obj<'a>, CanonError> {
        self.out.push('{');
        write_string(self.out, variant);
        self.out.push(':');
        Ok(Obj::new(self.out, Some(len), true))
    }
}

impl Seq<'_> {
    fn element<T: serde::Serialize + ?Sized>(&mut self, value: &T) -> Done {
        if !self.first {
            self.out.push(',');
        }
        self.first = false;
        value.serialize(Canon {
            out: &mut *self.out,
        })
    }
    fn close(self) -> Done {
        self.out.push(']');
        if self.close_variant {
            self.out.push('}');
        }
        Ok(())
    }
}

impl serde::ser::SerializeSeq for Seq<'_> {
    type Ok = ();
    type Error = CanonError;
    fn serialize_element<T: serde::Serialize + ?Sized>(&mut self, value: &T) -> Done {
        self.element(value)
    }
    fn end(self) -> Done {
        self.close()
    }
}

impl serde::ser::SerializeTuple for Seq<'_> {
    type Ok = ();
    type Error = CanonError;
    fn serialize_element<T: serde::Serialize + ?Sized>(&mut self, value: &T) -> Done {
        self.element(value)
    }
    fn end(self) -> Done {
        self.close()
    }
}

impl serde::ser::SerializeTupleStruct for Seq<'_> {
    type Ok = ();
    type Error = CanonError;
    fn serialize_field<T: serde::Serialize + ?Sized>(&mut self, value: &T) -> Done {
        self.element(value)
    }
    fn end(self) -> Done {
        self.close()
    }
}

impl serde::ser::SerializeTupleVariant for Seq<'_> {
    type Ok = ();
    type Error = CanonError;
    fn serialize_field<T: serde::Serialize + ?Sized>(&mut self, value: &T) -> Done {
        self.element(value)
    }
    fn end(self) -> Done {
        self.close()
    }
}

impl serde::ser::SerializeMap for Obj<'_> {
    type Ok = ();
    type Error = CanonError;
    fn serialize_key<T: serde::Serialize + ?Sized>(&mut self, key: &T) -> Done {
        self.key = Some(key.serialize(Key)?);
        Ok(())
    }
    fn serialize_value<T: serde::Serialize + ?Sized>(&mut self, value: &T) -> Done {
        let key = self
            .key
            .take()
            .ok_or_else(|| CanonError("a map value without its key".into()))?;
        self.entry(key.into(), value)
    }
    fn end(self) -> Done {
        self.finish();
        Ok(())
    }
}

impl serde::ser::SerializeStruct for Obj<'_> {
    type Ok = ();
    type Error = CanonError;
    fn serialize_field<T: serde::Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Done {
        self.entry(key.into(), value)
    }
    fn end(self) -> Done {
        self.finish();
        Ok(())
    }
}

impl serde::ser::SerializeStructVariant for Obj<'_> {
    type Ok = ();
    type Error = CanonError;
    fn serialize_field<T: serde::Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Done {
        self.entry(key.into(), value)
    }
    fn end(self) -> Done {
        self.finish();
        Ok(())
    }
}

/// A JSON string literal with the minimal escapes (RFC 8785 §3.2.2.2, the
/// same as `JSON.stringify`'s).
fn write_string(out: &mut String, s: &str) {
    crate::value::write_json_string(out, s);
}

#[cfg(test)]
#[path = "canon_tests.rs"]
mod tests;
