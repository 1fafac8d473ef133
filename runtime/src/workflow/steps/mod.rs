//! The kinds of step actions, one file each.

pub mod compose;
pub mod for_each;
pub mod parallel;
pub mod pipeline;
pub mod shell;

use crate::value::{to_js_json, Item};
use serde_json::{json, Map};

/// The result of a gate-only step: its `stdin`, as `stdout` (strings) and
/// `json` (parsed strings, other values as they are).
pub fn synthesize(id: &str, stdin: Option<Item>) -> Item {
    let mut r = Map::new();
    r.insert("id".into(), json!(id));
    match stdin {
        None | Some(Item::Null) => {}
        Some(Item::String(s)) => {
            if let Ok(j) = serde_json::from_str::<Item>(s.trim()) {
                r.insert("json".into(), j);
            }
            r.insert("stdout".into(), Item::String(s));
        }
        Some(other) => {
            r.insert("stdout".into(), Item::String(to_js_json(&other)));
            r.insert("json".into(), other);
        }
    }
    Item::Object(r)
}
