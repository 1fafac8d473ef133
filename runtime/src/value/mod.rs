//! JSON items and the JavaScript semantics the reference's commands use on them.
//!
//! Items are `serde_json::Value` with insertion-ordered objects. The reference is
//! written in JavaScript, so printing (`JSON.stringify`), coercion (`String(x)`,
//! `Number(x)`) and loose comparison (`==`, `<`) follow ECMAScript here.

mod coerce;
mod lazy;
mod path;
mod print;
pub mod raw;

pub use coerce::{js_less_than, js_loose_eq, js_to_number, js_to_string, string_to_number};
pub use lazy::{Field, FieldPath, Lazy, RawItem};
pub use path::get_path;
pub(crate) use print::write_json_string;
pub use print::{items_to_js_json, to_js_json, to_js_json_pretty, write_js_json};

/// One item flowing through a pipeline.
pub type Item = serde_json::Value;
