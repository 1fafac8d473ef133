//! The field readers of the runs API's bodies: each refusal names its
//! field.

use serde::de::{Deserializer, Error as _};
use serde::Deserialize;
use serde_json::{Map, Value};

fn text<'de, D: Deserializer<'de>>(d: D, key: &str) -> Result<Option<String>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        Value::String(s) if !s.trim().is_empty() => Ok(Some(s)),
        _ => Err(D::Error::custom(format!(
            "{key} must be a non-empty string"
        ))),
    }
}

pub(super) fn pipeline<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    text(d, "pipeline")
}

pub(super) fn workflow<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    text(d, "workflow")
}

pub(super) fn workflow_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    text(d, "workflowText")
}

pub(super) fn args<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Map<String, Value>>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        Value::Object(m) => Ok(Some(m)),
        _ => Err(D::Error::custom("args must be an object")),
    }
}

/// A count as the tool contract reads it: any finite number, negative as 0,
/// fractions cut.
fn count<'de, D: Deserializer<'de>>(d: D, key: &str) -> Result<Option<u64>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        v => match v.as_f64() {
            Some(f) if f.is_finite() => Ok(Some(f.max(0.0) as u64)),
            _ => Err(D::Error::custom(format!("{key} must be a number"))),
        },
    }
}

pub(super) fn timeout_ms<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    count(d, "timeoutMs")
}

pub(super) fn max_stdout_bytes<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    count(d, "maxStdoutBytes")
}

pub(super) fn wait<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        v => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| D::Error::custom("wait must be a number of milliseconds")),
    }
}

pub(super) fn present<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    serde::de::IgnoredAny::deserialize(d).map(|_| true)
}
