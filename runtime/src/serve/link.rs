//! Approval links: `/a/{link}`, a credential for one human decision on one
//! gate, separate from the tenant's token.
//!
//! A link is `base64url(tenant.runId.approvalId.expiry.nonce).tag`, where
//! `tag` is blake3 keyed with the server's link key (32 random bytes kept in
//! the store under [`KEY`], made on first start) over the payload. A link
//! that does not verify is unknown (404); one past its expiry, or whose
//! nonce is recorded as spent in the tenant's store, is gone (410).

use crate::error::{Error, Result};
use crate::state::{random_hex, StateStore};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde_json::json;
use std::time::{SystemTime, UNIX_EPOCH};

/// The store key of the link key (in the server's root store).
pub const KEY: &str = "serve_link_key";

/// What a verified link grants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub tenant: String,
    pub run_id: String,
    pub approval_id: String,
    /// Unix seconds.
    pub expires: u64,
    pub nonce: String,
}

/// Why a link cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkError {
    /// Not a link this server made (404).
    Unknown,
    /// Past its expiry (410).
    Expired,
    /// Already used (410).
    Spent,
}

/// The signing key: read from the store, or made and stored on first use.
#[derive(Clone)]
pub struct LinkKey([u8; 32]);

impl LinkKey {
    /// Load (or create) the key in `store`. Nodes starting together on one
    /// database agree on one key: it is created only if absent, then read.
    pub fn load_or_create(store: &StateStore) -> Result<LinkKey> {
        let hex = random_hex(32);
        store.create_new(KEY, &json!({"key": hex}))?;
        if let Some(v) = store.get(KEY)? {
            let hex = v.get("key").and_then(|k| k.as_str()).unwrap_or_default();
            return parse_key(hex).map(LinkKey).ok_or_else(|| {
                Error::runtime(format!(
                    "the approval link key in the state store ({KEY}) is damaged; remove it to make a new one (outstanding links stop working)"
                ))
            });
        }
        Err(Error::runtime(format!(
            "the approval link key ({KEY}) vanished from the state store while it was read"
        )))
    }

    /// The key's bytes (other keys are derived from it: approver sessions).
    pub(crate) fn bytes(&self) -> &[u8; 32] {
        &self.0
    }

    fn tag(&self, payload: &str) -> String {
        self.keyed(b"lobster serve approval link v1\0", payload)
    }

    /// blake3 keyed with the link key over `domain` then `payload` (hex):
    /// each kind of link has its own `domain`, so no link passes for
    /// another kind.
    pub fn keyed(&self, domain: &[u8], payload: &str) -> String {
        let mut h = blake3::Hasher::new_keyed(&self.0);
        h.update(domain);
        h.update(payload.as_bytes());
        h.finalize().to_hex().to_string()
    }

    /// A new link for the gate `approval_id` of run `run_id`.
    pub fn issue(&self, tenant: &str, run_id: &str, approval_id: &str, ttl_secs: u64) -> String {
        let exp = now_secs() + ttl_secs;
        let payload = format!("{tenant}.{run_id}.{approval_id}.{exp}.{}", random_hex(16));
        format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(&payload),
            self.tag(&payload)
        )
    }

    /// Verify `link` (signature, then expiry; spending is [`spend`]'s job).
    pub fn verify(&self, link: &str) -> std::result::Result<Link, LinkError> {
        let (b64, tag) = link.split_once('.').ok_or(LinkError::Unknown)?;
        let bytes = URL_SAFE_NO_PAD
            .decode(b64)
            .map_err(|_| LinkError::Unknown)?;
        let payload = String::from_utf8(bytes).map_err(|_| LinkError::Unknown)?;
        let expected =
            blake3::Hash::from_hex(self.tag(&payload)).map_err(|_| LinkError::Unknown)?;
        let given = blake3::Hash::from_hex(tag).map_err(|_| LinkError::Unknown)?;
        // blake3::Hash compares in constant time.
        if expected != given {
            return Err(LinkError::Unknown);
        }
        let parts: Vec<&str> = payload.split('.').collect();
        let [tenant, run_id, approval_id, exp, nonce] = parts[..] else {
            return Err(LinkError::Unknown);
        };
        let expires: u64 = exp.parse().map_err(|_| LinkError::Unknown)?;
        if now_secs() > expires {
            return Err(LinkError::Expired);
        }
        Ok(Link {
            tenant: tenant.into(),
            run_id: run_id.into(),
            approval_id: approval_id.into(),
            expires,
            nonce: nonce.into(),
        })
    }
}

/// The store key recording that the link with `nonce` was used.
fn spent_key(nonce: &str) -> String {
    format!("serve_link_spent_{nonce}")
}

/// Whether the link was used already.
pub fn is_spent(store: &StateStore, link: &Link) -> Result<bool> {
    Ok(store.get(&spent_key(&link.nonce))?.is_some())
}

/// Record the link as used; `false` when it was used already. Exactly one
/// of many simultaneous uses, on any node of the store, gets `true`
/// ([`StateStore::create_new`]).
pub fn spend(store: &StateStore, link: &Link, decision: &str) -> Result<bool> {
    store.create_new(
        &spent_key(&link.nonce),
        &json!({"runId": link.run_id, "decision": decision, "at": crate::resume::approval_id::now_iso()}),
    )
}

fn parse_key(hex: &str) -> Option<[u8; 32]> {
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// Seconds since the Unix epoch.
pub fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_verify_expire_and_refuse_tampering() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::new(dir.path());
        let key = LinkKey::load_or_create(&store).unwrap();
        let again = LinkKey::load_or_create(&store).unwrap();
        let link = key.issue("acme", "r1", "0a1b2c3d", 60);
        let got = again.verify(&link).unwrap();
        assert_eq!((got.tenant.as_str(), got.run_id.as_str()), ("acme", "r1"));
        let (b64, tag) = link.split_once('.').unwrap();
        let forged = URL_SAFE_NO_PAD.encode("other.r1.0a1b2c3d.99999999999.00");
        assert_eq!(
            key.verify(&format!("{forged}.{tag}")),
            Err(LinkError::Unknown)
        );
        assert_eq!(key.verify(b64), Err(LinkError::Unknown));
        let payload = format!("acme.r1.x.{}.n", now_secs() - 1);
        let old = format!("{}.{}", URL_SAFE_NO_PAD.encode(&payload), key.tag(&payload));
        assert_eq!(key.verify(&old), Err(LinkError::Expired));
        assert!(!is_spent(&store, &got).unwrap());
        assert!(spend(&store, &got, "approve").unwrap());
        assert!(is_spent(&store, &got).unwrap());
        assert!(!spend(&store, &got, "deny").unwrap());
    }
}
