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
//! [`object_get`], [`flat_get`] and [`leaf`] read one field of validated
//! bytes without building the rest of the item.

mod read;
mod scan;

pub use read::{flat_at, flat_get, leaf, object_get, object_path, plain_key, NotObject};
pub use scan::{check_element, scan_element, Scan, Shape};
