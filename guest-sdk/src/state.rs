//! Small JSON values kept by the host between runs, scoped to this step and
//! the current workflow/run (`host.state-get` / `host.state-set`).

use crate::bindings::lobster::step::host;
use crate::Error;
use serde_json::Value;

/// The value stored under `key`, if any.
pub fn get(key: &str) -> Result<Option<Value>, Error> {
    match host::state_get(key) {
        None => Ok(None),
        Some(text) => Ok(Some(serde_json::from_str(&text)?)),
    }
}

/// Store `value` under `key`.
pub fn set(key: &str, value: &Value) -> Result<(), Error> {
    let text = serde_json::to_string(value)?;
    host::state_set(key, &text).map_err(Error::Failed)
}
