//! Resume tokens: `base64url(JSON{protocolVersion, v, kind, stateKey, tag})`.
//!
//! The token only *points* at a resume state; it never carries executable
//! content. `tag` is a keyed blake3 MAC of kind and state key, with a 32-byte
//! key kept in the state directory (`.token-key`, 0600, created once). A
//! forged, truncated or edited token fails to decode (`Invalid token`, a parse
//! error) and nothing runs.

use crate::error::{Error, Result};
use crate::state::StateStore;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde_json::{json, Value};
use std::fs::{self, OpenOptions};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::OpenOptionsExt;

/// What a token resumes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    /// An inline pipeline.
    Pipeline,
    /// A workflow file.
    Workflow,
}

impl TokenKind {
    fn wire(self) -> &'static str {
        match self {
            TokenKind::Pipeline => "pipeline-resume",
            TokenKind::Workflow => "workflow-file",
        }
    }

    /// The kind a state key implies (`pipeline_resume_…` is a pipeline).
    pub fn of_state_key(key: &str) -> TokenKind {
        if key.starts_with("pipeline_resume_") {
            TokenKind::Pipeline
        } else {
            TokenKind::Workflow
        }
    }
}

/// A decoded, verified token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRef {
    pub kind: TokenKind,
    pub state_key: String,
}

const KEY_FILE: &str = ".token-key";
const TAG_CONTEXT: &[u8] = b"lobster resume token v1\0";

/// Issue a token for `state_key`, creating the MAC key on first use.
pub fn issue(store: &StateStore, kind: TokenKind, state_key: &str) -> Result<String> {
    let key =
        load_key(store, true)?.ok_or_else(|| Error::runtime("cannot create the token key"))?;
    Ok(encode(kind, state_key, &tag(&key, kind, state_key)))
}

/// The one spelling of a token: unpadded base64url of the compact JSON
/// with its keys in this order.
fn encode(kind: TokenKind, state_key: &str, tag: &str) -> String {
    let payload = json!({
        "protocolVersion": 1,
        "v": 1,
        "kind": kind.wire(),
        "stateKey": state_key,
        "tag": tag,
    });
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(&payload).expect("a JSON value serialises"))
}

/// Decode and verify a token against this state directory's key. A token
/// has one spelling, the one [`issue`] wrote: padding, spaces, other JSON
/// key orders or whitespace are `Invalid token` (the reference decoded
/// leniently), so no door can take one gate under two names.
pub fn decode(store: &StateStore, token: &str) -> Result<TokenRef> {
    let invalid = || {
        Error::parse("Invalid token")
            .with_hint("the token is damaged, was edited, or was issued for another state directory (LOBSTER_STATE_DIR)")
    };
    let bytes = URL_SAFE_NO_PAD.decode(token).map_err(|_| invalid())?;
    let payload: Value = serde_json::from_slice(&bytes).map_err(|_| invalid())?;
    if payload.get("protocolVersion") != Some(&json!(1)) {
        return Err(Error::parse("Unsupported protocol version"));
    }
    if payload.get("v") != Some(&json!(1)) {
        return Err(Error::parse("Unsupported token version"));
    }
    let kind = match payload.get("kind").and_then(Value::as_str) {
        Some("pipeline-resume") => TokenKind::Pipeline,
        Some("workflow-file") => TokenKind::Workflow,
        _ => return Err(invalid()),
    };
    let state_key = payload
        .get("stateKey")
        .and_then(Value::as_str)
        .ok_or_else(invalid)?;
    let given = payload
        .get("tag")
        .and_then(Value::as_str)
        .ok_or_else(invalid)?;
    let key = load_key(store, false)?.ok_or_else(invalid)?;
    if !constant_time_eq(given.as_bytes(), tag(&key, kind, state_key).as_bytes()) {
        return Err(invalid());
    }
    if encode(kind, state_key, given) != token {
        return Err(invalid());
    }
    Ok(TokenRef {
        kind,
        state_key: state_key.to_string(),
    })
}

fn tag(key: &[u8; 32], kind: TokenKind, state_key: &str) -> String {
    let mut hasher = blake3::Hasher::new_keyed(key);
    hasher.update(TAG_CONTEXT);
    hasher.update(kind.wire().as_bytes());
    hasher.update(b"\0");
    hasher.update(state_key.as_bytes());
    hasher.finalize().to_hex()[..32].to_string()
}

/// A keyed blake3 MAC (hex) of `data` under this state directory's token
/// key, in its own domain `context` (so it never verifies as a token tag).
/// Used to sign state a front door hands to a client and gets back (e.g. a
/// human-approval request), creating the key on first use.
pub fn mac(store: &StateStore, context: &str, data: &[u8]) -> Result<String> {
    let key =
        load_key(store, true)?.ok_or_else(|| Error::runtime("cannot create the token key"))?;
    let mut hasher = blake3::Hasher::new_keyed(&key);
    hasher.update(b"lobster mac v1\0");
    hasher.update(context.as_bytes());
    hasher.update(b"\0");
    hasher.update(data);
    Ok(hasher.finalize().to_hex().to_string())
}

/// Compare two MACs without leaking where they differ.
pub fn mac_eq(a: &str, b: &str) -> bool {
    constant_time_eq(a.as_bytes(), b.as_bytes())
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Read the MAC key; with `create`, make one if missing. Two processes racing
/// to create it agree: the key is published with a hard link that never
/// overwrites, and the loser reads the winner's key.
/// PostgreSQL token keys read so far, by (database, tenant). A key row is
/// inserted once and never changed, so each process reads it once instead
/// of on every pause and resume (a round trip each).
fn known_pg_keys() -> &'static std::sync::Mutex<KnownKeys> {
    static KEYS: std::sync::OnceLock<std::sync::Mutex<KnownKeys>> = std::sync::OnceLock::new();
    KEYS.get_or_init(Default::default)
}

/// Token keys by (database as shown, tenant).
type KnownKeys = std::collections::HashMap<(String, String), [u8; 32]>;

fn load_key(store: &StateStore, create: bool) -> Result<Option<[u8; 32]>> {
    if let Some(pg) = store.pg()? {
        let id = (pg.db.shown().to_string(), pg.tenant.clone());
        let known = known_pg_keys().lock().unwrap_or_else(|p| p.into_inner());
        if let Some(key) = known.get(&id) {
            return Ok(Some(*key));
        }
        drop(known);
        // One row per tenant, inserted only if absent: racing nodes agree.
        if let Some(text) = pg.kv_get(KEY_FILE)? {
            let key = parse_key(&text)?;
            known_pg_keys()
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(id, key);
            return Ok(Some(key));
        }
        if !create {
            return Ok(None);
        }
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).map_err(|e| Error::runtime(format!("no OS randomness: {e}")))?;
        let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
        pg.kv_insert_new(KEY_FILE, hex)?;
        return load_key(store, false);
    }
    let path = store.dir().join(KEY_FILE);
    match fs::read_to_string(&path) {
        Ok(text) => return parse_key(&text).map(Some),
        Err(e) if e.kind() == ErrorKind::NotFound && create => {}
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(Error::runtime(format!(
                "cannot read {}: {e}",
                path.display()
            )))
        }
    }
    store.ensure_dir()?;
    let mut key = [0u8; 32];
    getrandom::fill(&mut key).map_err(|e| Error::runtime(format!("no OS randomness: {e}")))?;
    let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
    let tmp = store
        .dir()
        .join(format!(".token-key.{}.tmp", crate::state::random_hex(6)));
    let publish = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(hex.as_bytes())?;
        f.sync_all()?;
        fs::hard_link(&tmp, &path)
    })();
    let _ = fs::remove_file(&tmp);
    match publish {
        Ok(()) => Ok(Some(key)),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => load_key(store, false),
        Err(e) => Err(Error::runtime(format!(
            "cannot create {}: {e}",
            path.display()
        ))),
    }
}

fn parse_key(text: &str) -> Result<[u8; 32]> {
    let text = text.trim();
    let mut key = [0u8; 32];
    if text.len() != 64 {
        return Err(Error::runtime(
            "the token key file (.token-key) in the state directory is corrupt",
        ));
    }
    for (i, chunk) in text.as_bytes().chunks(2).enumerate() {
        let s = std::str::from_utf8(chunk).unwrap_or("zz");
        key[i] = u8::from_str_radix(s, 16).map_err(|_| {
            Error::runtime("the token key file (.token-key) in the state directory is corrupt")
        })?;
    }
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_tamper_detection() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::new(dir.path());
        let t = issue(&store, TokenKind::Pipeline, "pipeline_resume_abc").unwrap();
        let r = decode(&store, &t).unwrap();
        assert_eq!(
            r,
            TokenRef {
                kind: TokenKind::Pipeline,
                state_key: "pipeline_resume_abc".into()
            }
        );

        // Edited state key with the old tag.
        let mut payload: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(&t).unwrap()).unwrap();
        payload["stateKey"] = json!("pipeline_resume_other");
        let forged = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&payload).unwrap());
        assert_eq!(
            decode(&store, &forged).unwrap_err().to_string(),
            "Invalid token"
        );
        // Truncated.
        assert_eq!(
            decode(&store, &t[..t.len() - 4]).unwrap_err().to_string(),
            "Invalid token"
        );
        // Garbage.
        assert_eq!(decode(&store, "!!!").unwrap_err().kind(), "parse_error");
        // Another state directory's key.
        let other = tempfile::tempdir().unwrap();
        let other_store = StateStore::new(other.path());
        issue(&other_store, TokenKind::Pipeline, "x").unwrap();
        assert_eq!(
            decode(&other_store, &t).unwrap_err().to_string(),
            "Invalid token"
        );
    }

    #[test]
    fn a_token_has_one_spelling() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::new(dir.path());
        let t = issue(&store, TokenKind::Workflow, "workflow_resume_abc").unwrap();
        assert!(decode(&store, &t).is_ok());
        let payload: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(&t).unwrap()).unwrap();
        let obj = payload.as_object().unwrap();
        // The same fields, keys reversed; the same JSON with spaces.
        let mut reordered = String::from("{");
        for (i, (k, v)) in obj.iter().rev().enumerate() {
            if i > 0 {
                reordered.push(',');
            }
            reordered.push_str(&format!("{}:{}", json!(k), v));
        }
        reordered.push('}');
        let spaced = serde_json::to_string_pretty(&payload).unwrap();
        let standard =
            base64::engine::general_purpose::URL_SAFE.encode(URL_SAFE_NO_PAD.decode(&t).unwrap());
        let variants = [
            format!("{t}="),
            format!("{t}=="),
            standard.clone(),
            format!(" {t}"),
            format!("{t} "),
            format!("{t}\n"),
            URL_SAFE_NO_PAD.encode(reordered.as_bytes()),
            URL_SAFE_NO_PAD.encode(spaced.as_bytes()),
        ];
        for v in variants.iter().filter(|v| **v != t) {
            assert_eq!(
                decode(&store, v).map_err(|e| e.to_string()),
                Err("Invalid token".to_string()),
                "{v:?}"
            );
        }
    }

    #[test]
    fn version_checks() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::new(dir.path());
        let enc = |v: Value| URL_SAFE_NO_PAD.encode(serde_json::to_vec(&v).unwrap());
        assert_eq!(
            decode(&store, &enc(json!({"protocolVersion": 2, "v": 1})))
                .unwrap_err()
                .to_string(),
            "Unsupported protocol version"
        );
        assert_eq!(
            decode(&store, &enc(json!({"protocolVersion": 1, "v": 9})))
                .unwrap_err()
                .to_string(),
            "Unsupported token version"
        );
        // The reference's legacy inline workflow token is refused outright.
        let legacy = enc(
            json!({"protocolVersion":1,"v":1,"kind":"workflow-file","filePath":"/x.lobster","resumeAtIndex":2,"steps":{},"args":{}}),
        );
        assert_eq!(
            decode(&store, &legacy).unwrap_err().to_string(),
            "Invalid token"
        );
    }
}
