//! Items that may still be JSON text: an `exec --json` array element
//! travels as its validated bytes (see [`super::raw`]) through stages that
//! read only a field of it (`where`, `sort --key`, `head`), and is parsed
//! in full only when a stage needs the whole item. Parsing then gives
//! exactly what parsing it at once would have.

use super::raw::{self, Shape};
use super::Item;
use serde_json::Value;
use std::cell::Cell;
use std::rc::Rc;

/// An item, parsed or not yet.
#[derive(Debug)]
pub enum Lazy {
    /// An ordinary item.
    Parsed(Item),
    /// Validated JSON text of one item.
    Raw(RawItem),
}

/// The validated text of one item: a slice of a batch shared with its
/// neighbours, or its own copy (see [`Lazy::settle`]).
#[derive(Debug)]
pub struct RawItem {
    bytes: RawBytes,
    /// Where it started in the stream (only for a message that cannot occur
    /// for validated text).
    offset: usize,
    /// What the scan learnt about it.
    shape: Shape,
}

#[derive(Debug)]
enum RawBytes {
    Shared {
        batch: Rc<Vec<u8>>,
        start: usize,
        end: usize,
    },
    Owned(Box<[u8]>),
}

impl RawItem {
    /// Item `batch[start..end]`, which [`raw::scan_element`] accepted
    /// (with its `shape`); `offset` is its position in the stream.
    pub fn shared(
        batch: Rc<Vec<u8>>,
        start: usize,
        end: usize,
        offset: usize,
        shape: Shape,
    ) -> RawItem {
        RawItem {
            bytes: RawBytes::Shared { batch, start, end },
            offset,
            shape,
        }
    }

    /// The item's JSON text.
    pub fn bytes(&self) -> &[u8] {
        match &self.bytes {
            RawBytes::Shared { batch, start, end } => &batch[*start..*end],
            RawBytes::Owned(bytes) => bytes,
        }
    }

    /// Follow `path` through objects, parsing only the value reached
    /// (see [`Field`]).
    pub fn field(&self, path: &FieldPath) -> Field {
        let bytes = self.bytes();
        let found = match &path.first {
            Some(first) if self.shape.flat => (first.find(bytes, self.shape.unique), 1),
            _ => raw::object_path(bytes, path.segments.iter().map(String::as_str)),
        };
        match found {
            (None, _) => Field::Missing,
            (Some(bytes), used) => match raw::leaf(bytes) {
                Ok(value) => Field::Value { value, used },
                // Validated text always parses; treat the impossible as absent.
                Err(_) => Field::Missing,
            },
        }
    }
}

/// A dotted path's segments, prepared for [`RawItem::field`].
#[derive(Debug)]
pub struct FieldPath {
    segments: Vec<String>,
    /// The first segment, for flat objects.
    first: Option<FlatKey>,
}

/// A key looked up in flat objects ([`raw::flat_get`]).
#[derive(Debug)]
struct FlatKey {
    /// The key with its quotes.
    quoted: Vec<u8>,
    /// Whether [`raw::flat_at`] may be tried ([`raw::plain_key`]).
    plain: bool,
    /// Where the key was last found: items of a stream usually share a
    /// layout.
    hint: Cell<usize>,
}

impl FlatKey {
    /// The value of the key in flat `bytes`; `unique`: it occurs at most once.
    fn find<'a>(&self, bytes: &'a [u8], unique: bool) -> Option<&'a [u8]> {
        if !unique {
            return raw::flat_get(bytes, &self.quoted, false).map(|(value, _)| value);
        }
        if self.plain {
            if let Some(value) = raw::flat_at(bytes, self.hint.get(), &self.quoted) {
                return Some(value);
            }
        }
        let (value, at) = raw::flat_get(bytes, &self.quoted, true)?;
        self.hint.set(at);
        Some(value)
    }
}

impl FieldPath {
    /// The path made of `segments`.
    pub fn new<'p>(segments: impl IntoIterator<Item = &'p str>) -> FieldPath {
        let segments: Vec<String> = segments.into_iter().map(str::to_owned).collect();
        let first = segments.first().map(|key| FlatKey {
            quoted: format!("\"{key}\"").into_bytes(),
            plain: raw::plain_key(key),
            hint: Cell::new(0),
        });
        FieldPath { segments, first }
    }
}

/// Where [`RawItem::field`] ended.
#[derive(Debug, PartialEq)]
pub enum Field {
    /// A key on the way is missing (`undefined`).
    Missing,
    /// The value after the first `used` segments; when that is fewer than
    /// all, the value is not an object and the caller applies its own
    /// rules (arrays, strings, `null`) for the remaining segments.
    Value { value: Value, used: usize },
}

impl From<Item> for Lazy {
    fn from(item: Item) -> Lazy {
        Lazy::Parsed(item)
    }
}

impl Lazy {
    /// The whole item.
    pub fn into_item(self) -> Result<Item, String> {
        match self {
            Lazy::Parsed(item) => Ok(item),
            Lazy::Raw(raw) => serde_json::from_slice(raw.bytes())
                .map_err(|e| format!("{e} (item at position {})", raw.offset)),
        }
    }

    /// Give a shared item its own copy of its text, so that keeping it does
    /// not keep the whole batch it came in.
    pub fn settle(&mut self) {
        if let Lazy::Raw(RawItem {
            bytes: bytes @ RawBytes::Shared { .. },
            ..
        }) = self
        {
            let RawBytes::Shared { batch, start, end } = bytes else {
                return;
            };
            *bytes = RawBytes::Owned(batch[*start..*end].into());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn raw(text: &str) -> Lazy {
        let bytes = Rc::new(format!("[{text}]").into_bytes());
        let end = bytes.len() - 1;
        let shape = raw::check_element(&bytes[1..end]).unwrap_or_default();
        Lazy::Raw(RawItem::shared(bytes, 1, end, 1, shape))
    }

    #[test]
    fn raw_items_parse_to_what_serde_json_gives() {
        let text = r#"{"b": 1, "a": [1.5, "x"], "b": 2}"#;
        let want: Item = serde_json::from_str(text).unwrap();
        let mut item = raw(text);
        item.settle();
        if let Lazy::Raw(raw) = &item {
            assert_eq!(raw.bytes(), text.as_bytes());
        }
        assert_eq!(item.into_item().unwrap(), want);
        assert_eq!(raw(" 7 ").into_item().unwrap(), json!(7));
    }

    #[test]
    fn fields_are_read_through_objects_only() {
        let Lazy::Raw(item) = raw(r#"{"a": {"b": [10, 20]}, "s": "x"}"#) else {
            unreachable!()
        };
        let field = |path: &str| item.field(&FieldPath::new(path.split('.')));
        assert_eq!(
            field("s"),
            Field::Value {
                value: json!("x"),
                used: 1
            }
        );
        assert_eq!(
            field("a.b.1"),
            Field::Value {
                value: json!([10, 20]),
                used: 2
            }
        );
        assert_eq!(field("a.zz.1"), Field::Missing);
        assert_eq!(
            field("s.length"),
            Field::Value {
                value: json!("x"),
                used: 1
            }
        );
        // A flat item is read by a search for the quoted key.
        let Lazy::Raw(flat) = raw(r#"{"s": "k", "k": 2, "k": 3}"#) else {
            unreachable!()
        };
        assert_eq!(
            flat.shape,
            Shape {
                flat: true,
                unique: false
            }
        );
        assert_eq!(
            flat.field(&FieldPath::new(["k"])),
            Field::Value {
                value: json!(3),
                used: 1
            }
        );
        assert_eq!(
            flat.field(&FieldPath::new(["k", "x"])),
            Field::Value {
                value: json!(3),
                used: 1
            }
        );
        assert_eq!(
            flat.field(&FieldPath::new(["s"])),
            Field::Value {
                value: json!("k"),
                used: 1
            }
        );
        assert_eq!(flat.field(&FieldPath::new(["z"])), Field::Missing);
        // Unique keys in one layout: the place found last is tried first.
        let path = FieldPath::new(["k"]);
        for text in [
            r#"{"s": "k", "k": 2}"#,
            r#"{"s": "x", "k": 5}"#,
            r#"{"s": "xy", "k": 6}"#,
            r#"{"k": 7}"#,
        ] {
            let Lazy::Raw(item) = raw(text) else {
                unreachable!()
            };
            assert!(item.shape.unique);
            let want: Item = serde_json::from_str(text).unwrap();
            assert_eq!(
                item.field(&path),
                Field::Value {
                    value: want["k"].clone(),
                    used: 1
                }
            );
        }
    }
}
