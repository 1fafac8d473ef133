//! Approvals by the human rather than by the calling agent
//! (`lobster mcp --approvals human`).
//!
//! A front door that can reach the human directly (an MCP client with
//! elicitation) asks them with [`Pending`]'s prompt and preview and hands the
//! client a *sealed request*: `{stateKey, nonce, exp}` with a MAC under the
//! state directory's token key. When the answer comes back with it,
//! [`open`] checks the MAC, the expiry, that it belongs to the paused run
//! being resumed, and spends the nonce (a file created with `O_EXCL` in the
//! state directory), so one human answer resumes at most once.

use crate::error::{Error, Result};
use crate::resume::{approval_id, token, ResumeTarget};
use crate::state::StateStore;
use crate::value::{to_js_json, Item};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde_json::json;
use std::fs::OpenOptions;
use std::io::ErrorKind;
use std::os::unix::fs::OpenOptionsExt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long a human-approval request stays answerable.
pub const REQUEST_TTL: Duration = Duration::from_secs(600);

const MAC_CONTEXT: &str = "human approval request";

/// A paused run waiting for a decision, as a human should see it.
#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    pub state_key: String,
    /// `approval_request` or `input_request`.
    pub halt_type: String,
    pub prompt: String,
    /// The gated items (pipelines) as JSON text, cut at 4000 characters.
    pub preview: Option<String>,
    pub approval_id: Option<String>,
}

/// Read the paused run `target` points at, without claiming it.
pub fn pending(store: &StateStore, target: &ResumeTarget) -> Result<Pending> {
    let state_key = match target {
        ResumeTarget::Token(t) => token::decode(store, t)?.state_key,
        ResumeTarget::ApprovalId(raw) => approval_id::lookup(store, raw)?.1,
    };
    let state = store.get(&state_key)?.ok_or_else(|| {
        Error::runtime("Resume state not found")
            .with_hint("the run was already resumed or cancelled, or its state was removed")
    })?;
    let text = |k: &str| state.get(k).and_then(Item::as_str).map(String::from);
    let preview = state
        .get("items")
        .and_then(Item::as_array)
        .filter(|a| !a.is_empty())
        .map(|a| {
            let mut s = to_js_json(&Item::Array(a.clone()));
            if s.chars().count() > 4000 {
                s = s.chars().take(4000).collect::<String>() + " …";
            }
            s
        });
    Ok(Pending {
        halt_type: text("haltType").unwrap_or_else(|| "approval_request".into()),
        prompt: text("prompt").unwrap_or_default(),
        approval_id: text("approvalId"),
        preview,
        state_key,
    })
}

/// Seal a human-approval request for the paused run `state_key`.
pub fn seal(store: &StateStore, state_key: &str) -> Result<String> {
    let exp = now_secs() + REQUEST_TTL.as_secs();
    let body = json!({
        "v": 1,
        "stateKey": state_key,
        "nonce": crate::state::random_hex(16),
        "exp": exp,
    });
    let body_text = to_js_json(&body);
    let tag = token::mac(store, MAC_CONTEXT, body_text.as_bytes())?;
    Ok(format!("{}.{tag}", URL_SAFE_NO_PAD.encode(body_text)))
}

/// Check a sealed request for the paused run `state_key` and spend it.
pub fn open(store: &StateStore, sealed: &str, state_key: &str) -> Result<()> {
    let invalid = || Error::parse("invalid or tampered approval request state");
    let (body_b64, tag) = sealed.split_once('.').ok_or_else(invalid)?;
    let body_bytes = URL_SAFE_NO_PAD.decode(body_b64).map_err(|_| invalid())?;
    let expected = token::mac(store, MAC_CONTEXT, &body_bytes)?;
    if !token::mac_eq(&expected, tag) {
        return Err(invalid());
    }
    let body: Item = serde_json::from_slice(&body_bytes).map_err(|_| invalid())?;
    if body.get("stateKey").and_then(Item::as_str) != Some(state_key) {
        return Err(Error::parse(
            "the approval request state belongs to another paused run",
        ));
    }
    let exp = body.get("exp").and_then(Item::as_u64).ok_or_else(invalid)?;
    if now_secs() > exp {
        return Err(Error::parse(
            "the approval request expired; call lobster_resume again to ask the human again",
        ));
    }
    let nonce = body
        .get("nonce")
        .and_then(Item::as_str)
        .ok_or_else(invalid)?;
    if nonce.len() != 32 || !nonce.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(invalid());
    }
    let spent_name = format!("human-approval-{nonce}.spent");
    if let Some(pg) = store.pg()? {
        return match pg.kv_insert_new(&spent_name, String::new())? {
            true => Ok(()),
            false => Err(Error::parse("this approval request was already answered")),
        };
    }
    store.ensure_dir()?;
    let spent = store.dir().join(spent_name);
    match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&spent)
    {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {
            Err(Error::parse("this approval request was already answered"))
        }
        Err(e) => Err(Error::runtime(format!(
            "cannot record the approval answer: {e}"
        ))),
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_requests_are_bound_single_use_and_tamper_proof() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::new(dir.path());
        let sealed = seal(&store, "pipeline_resume_a").unwrap();
        assert_eq!(
            open(&store, &sealed, "pipeline_resume_b")
                .unwrap_err()
                .to_string(),
            "the approval request state belongs to another paused run"
        );
        let (body, tag) = sealed.split_once('.').unwrap();
        let mut forged = tag.to_string();
        forged.replace_range(0..1, if tag.starts_with('0') { "1" } else { "0" });
        assert_eq!(
            open(&store, &format!("{body}.{forged}"), "pipeline_resume_a")
                .unwrap_err()
                .to_string(),
            "invalid or tampered approval request state"
        );
        open(&store, &sealed, "pipeline_resume_a").unwrap();
        assert_eq!(
            open(&store, &sealed, "pipeline_resume_a")
                .unwrap_err()
                .to_string(),
            "this approval request was already answered"
        );
    }

    #[test]
    fn expired_requests_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::new(dir.path());
        let body = to_js_json(&json!({"v":1,"stateKey":"k","nonce":"0".repeat(32),"exp":1}));
        let tag = token::mac(&store, MAC_CONTEXT, body.as_bytes()).unwrap();
        let sealed = format!("{}.{tag}", URL_SAFE_NO_PAD.encode(&body));
        assert!(open(&store, &sealed, "k")
            .unwrap_err()
            .to_string()
            .starts_with("the approval request expired"));
    }
}
