//! Key names: the reference's `keyToPath`, tenant ids, and the names
//! Lobster keeps its own records under, which no pipeline or step may use
//! ([`checked_key`], [`UserState`]).

use super::StateStore;
use crate::error::{Error, Result};
use crate::value::Item;

/// Whether the stored name `name` is a paused run's resume state (kept in
/// `lobster_runs`, with its claim, by the PostgreSQL store).
pub(crate) fn is_run_key(name: &str) -> bool {
    name.starts_with("pipeline_resume_") || name.starts_with("workflow_resume_")
}

/// Whether `name` can name a `lobster serve` tenant: `[a-z0-9_-]{1,64}`.
pub fn is_tenant_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

/// The tenant id for `name`: itself when it is `[a-z0-9][a-z0-9_-]{0,63}`,
/// else `~` and its bytes in hex (never equal to a plain name).
pub fn tenant_id(name: &str) -> String {
    let plain = is_tenant_name(name) && name.as_bytes()[0].is_ascii_alphanumeric();
    if plain {
        name.to_string()
    } else {
        let hex: String = name.bytes().map(|b| format!("{b:02x}")).collect();
        format!("~{hex}")
    }
}

/// The reference's `keyToPath`: lower-case; each run of characters outside
/// `[a-z0-9._-]` becomes `_`; runs of `_` collapse; one leading and one
/// trailing `_` are removed; then `.json` is appended. Keys are therefore
/// case-insensitive (`My/Key` and `my_key` are the same file).
pub fn key_to_file_name(key: &str) -> Result<String> {
    let mut safe = String::with_capacity(key.len());
    for ch in key.to_lowercase().chars() {
        let keep = ch.is_ascii_lowercase() || ch.is_ascii_digit() || matches!(ch, '.' | '_' | '-');
        let c = if keep { ch } else { '_' };
        if c == '_' && safe.ends_with('_') {
            continue;
        }
        safe.push(c);
    }
    let safe = safe.strip_prefix('_').unwrap_or(&safe);
    let safe = safe.strip_suffix('_').unwrap_or(safe);
    if safe.is_empty() {
        return Err(Error::runtime("state key is empty/invalid"));
    }
    Ok(format!("{safe}.json"))
}

/// The name families Lobster keeps its own records under, in the same
/// namespace as `state.get`/`state.set`/`diff.last` keys: paused runs' resume
/// states, their interrupted records, `approvalId` aliases, gates taken by
/// a decision (`gate_taken_`), the gateway's
/// run records, pending gates, taken gates, spent links, inline workflows,
/// approver sessions and node heartbeats (`serve_`), cached model answers of
/// a `lobster serve` tenant (`llm_cache_`) and spent human-approval requests.
const RESERVED_KEY_PREFIXES: [&str; 8] = [
    "pipeline_resume",
    "gate_taken_",
    "workflow_resume",
    "interrupted_",
    "approval_",
    "serve_",
    "llm_cache_",
    "human-approval-",
];

/// Who writes (and reads) keys through a [`UserState`]: the two kinds of
/// writer a run has besides Lobster itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Writer {
    /// A pipeline or workflow: `state.get`, `state.set`, `diff.last`,
    /// `llm.invoke --state-key` / `LOBSTER_RUN_STATE_KEY`.
    Pipeline,
    /// A WebAssembly step's `state-get`/`state-set` (its keys are
    /// `step_<48 hex>`, derived from the run's scope, the step and its key).
    Step,
}

/// Whether the stored name `name` (see [`key_to_file_name`]) is a wasm
/// step's own state: `step_` and 48 hex digits.
fn is_step_key(name: &str) -> bool {
    name.strip_prefix("step_")
        .and_then(|r| r.strip_suffix(".json"))
        .is_some_and(|h| h.len() == 48 && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The stored name of `key` if `writer` may use it: [`key_to_file_name`]'s
/// rules, none of the names Lobster keeps its own records under, and a wasm
/// step's state for steps only (so a pipeline cannot forge it, nor a step
/// reach anything else). The one check every writer other than Lobster
/// passes, whatever the spelling (`Serve/Run:x` is `serve_run_x`).
pub fn checked_key(writer: Writer, key: &str) -> Result<String> {
    let name = key_to_file_name(key)?;
    if let Some(prefix) = RESERVED_KEY_PREFIXES.iter().find(|p| name.starts_with(*p)) {
        return Err(Error::runtime(format!(
            "state key {key:?} is reserved: names starting with {prefix:?} (after lower-casing and \
             replacing other characters with '_') hold Lobster's own records; choose another key"
        )));
    }
    match (writer, is_step_key(&name)) {
        (Writer::Pipeline, true) => Err(Error::runtime(format!(
            "state key {key:?} is reserved: step_ and 48 hex digits is a WebAssembly step's own state; choose another key"
        ))),
        (Writer::Step, false) => Err(Error::runtime(format!(
            "state key {key:?} is not a step's state key"
        ))),
        _ => Ok(name),
    }
}

/// A key a pipeline may read or write ([`checked_key`] for
/// [`Writer::Pipeline`]). Without this, a run could overwrite another paused
/// run's resume state or a gateway's run records and pending gates (the
/// reference shares one directory for both and refuses nothing).
pub fn user_state_key(key: &str) -> Result<String> {
    checked_key(Writer::Pipeline, key)
}

/// The store as a pipeline or a step sees it: every key is checked by
/// [`checked_key`] before anything is read or written.
#[derive(Debug, Clone, Copy)]
pub struct UserState<'a> {
    store: &'a StateStore,
    writer: Writer,
}

impl StateStore {
    /// This store for `writer`: only the keys it may use.
    pub fn user(&self, writer: Writer) -> UserState<'_> {
        UserState {
            store: self,
            writer,
        }
    }
}

impl UserState<'_> {
    /// [`StateStore::get`] of a checked key.
    pub fn get(&self, key: &str) -> Result<Option<Item>> {
        checked_key(self.writer, key)?;
        self.store.get(key)
    }

    /// [`StateStore::get_text`] of a checked key.
    pub fn get_text(&self, key: &str) -> Result<Option<String>> {
        checked_key(self.writer, key)?;
        self.store.get_text(key)
    }

    /// [`StateStore::set`] of a checked key.
    pub fn set(&self, key: &str, value: &Item) -> Result<()> {
        checked_key(self.writer, key)?;
        self.store.set(key, value)
    }

    /// [`StateStore::set_compact`] of a checked key.
    pub fn set_compact(&self, key: &str, value: &Item, max_bytes: usize) -> Result<usize> {
        checked_key(self.writer, key)?;
        self.store.set_compact(key, value, max_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_keys_cannot_reach_lobsters_own_records() {
        for key in [
            "pipeline_resume_0b7c",
            "Workflow Resume x",
            "interrupted_pipeline_resume_1",
            "APPROVAL_ab12cd34",
            "serve_run_00ff",
            "serve/pending/x",
        ] {
            let err = user_state_key(key).unwrap_err().to_string();
            assert!(err.contains("is reserved"), "{key}: {err}");
        }
        for key in [
            "Serve/Run:x",
            " serve run x ",
            "SERVE_PENDING_x",
            "llm_cache_0",
            "Human-Approval-1",
        ] {
            assert!(user_state_key(key).is_err(), "{key}");
        }
        let step = format!("step_{}", "a".repeat(48));
        assert!(user_state_key(&step).is_err());
        assert!(user_state_key(&step.to_uppercase()).is_err());
        assert_eq!(
            checked_key(Writer::Step, &step).unwrap(),
            format!("{step}.json")
        );
        assert!(checked_key(Writer::Step, "mine").is_err());
        assert!(checked_key(Writer::Step, "serve_run_x").is_err());
        assert_eq!(user_state_key("step_1").unwrap(), "step_1.json");
        // The handle checks before touching the store.
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::new(dir.path());
        let user = store.user(Writer::Pipeline);
        assert!(user.set("Serve Run 00ff", &serde_json::json!(1)).is_err());
        assert!(!store.path_for("serve_run_00ff").unwrap().exists());
        user.set("mine", &serde_json::json!(2)).unwrap();
        assert_eq!(user.get("MINE").unwrap(), Some(serde_json::json!(2)));
        assert_eq!(user_state_key("my/Key").unwrap(), "my_key.json");
        assert_eq!(user_state_key("servers").unwrap(), "servers.json");
        assert_eq!(user_state_key("approvals").unwrap(), "approvals.json");
    }

    #[test]
    fn key_normalisation_matches_reference() {
        assert_eq!(key_to_file_name("_Demo KEY_").unwrap(), "demo_key.json");
        assert_eq!(key_to_file_name("-Demo KEY-").unwrap(), "-demo_key-.json");
        assert_eq!(key_to_file_name(".Demo KEY.").unwrap(), ".demo_key..json");
        assert_eq!(
            key_to_file_name("My/Key").unwrap(),
            key_to_file_name("my_key").unwrap()
        );
        assert_eq!(
            key_to_file_name("../../etc/passwd").unwrap(),
            ".._.._etc_passwd.json"
        );
        assert!(key_to_file_name("///").is_err());
        assert!(key_to_file_name("").is_err());
    }
}
