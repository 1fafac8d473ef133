//! The JSON shapes every door shows alike, as the doors' tests expect
//! them. Shared by the cli and serve test crates (included with `#[path]`),
//! so both doors are held to one list.

use serde_json::Value;

/// The keys of a JSON object, in their printed order (panics on a non-object).
pub fn keys(v: &Value) -> Vec<&str> {
    v.as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"))
        .keys()
        .map(String::as_str)
        .collect()
}

/// A listed run's keys in order (`app::runs::RunRow`), with a door's own
/// keys `extra` after `endedAt`.
pub fn run_row_keys<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut k = vec!["runId", "name", "door", "status", "startedAt", "endedAt"];
    k.extend_from_slice(extra);
    k.extend(["gate", "events", "head"]);
    k
}
