//! Signing bytes and verifying `.minisig` text against a set of keys.
//!
//! A signature written by [`sign`] is minisign's prehashed ed25519
//! signature with a signed ("trusted") comment
//! `timestamp:<unix>\tfile:<name>\tsigner:<NAME>`, so whoever verifies it
//! learns the signer's name from text the key signed.

use super::key::{KeyId, PublicKey, SecretKey};
use super::SigningError;
use std::collections::HashMap;
use std::io::Cursor;
use std::sync::{Mutex, OnceLock};

/// A parsed signature (the text of a `.minisig` file).
#[derive(Clone)]
pub struct Signature {
    boxed: minisign::SignatureBox,
    text: String,
}

impl std::fmt::Debug for Signature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Signature(key {})", self.key_id())
    }
}

impl Signature {
    /// Parse `.minisig` text; `what` names where it came from in errors.
    pub fn parse(text: &str, what: &str) -> Result<Signature, SigningError> {
        let boxed =
            minisign::SignatureBox::from_string(text).map_err(|e| SigningError::Malformed {
                what: what.to_string(),
                kind: "signature",
                detail: e.to_string(),
            })?;
        Ok(Signature {
            boxed,
            text: text.to_string(),
        })
    }

    /// The id of the key that made it.
    pub fn key_id(&self) -> KeyId {
        KeyId::from_keynum(self.boxed.keynum())
    }

    /// The signed comment.
    pub fn trusted_comment(&self) -> String {
        self.boxed.trusted_comment().unwrap_or_default()
    }

    /// The `signer:` field of the signed comment.
    pub fn signer_name(&self) -> Option<String> {
        field(&self.trusted_comment(), "signer")
    }

    /// The `.minisig` text.
    pub fn text(&self) -> &str {
        &self.text
    }
}

fn field(comment: &str, key: &str) -> Option<String> {
    comment
        .split('\t')
        .find_map(|part| part.strip_prefix(key)?.strip_prefix(':'))
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// Sign `bytes` (shown as `file` in the signed comment) with `key`.
pub fn sign(key: &SecretKey, bytes: &[u8], file: &str) -> Result<Signature, SigningError> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let file: String = file.chars().filter(|c| !c.is_control()).take(200).collect();
    let trusted = format!("timestamp:{now}\tfile:{file}\tsigner:{}", key.name);
    let untrusted = format!(
        "signature from lobster signer {} ({})",
        key.name,
        key.public.id()
    );
    let boxed = minisign::sign(
        Some(&key.public.inner),
        &key.inner,
        Cursor::new(bytes),
        Some(&trusted),
        Some(&untrusted),
    )
    .map_err(|e| SigningError::Sign(e.to_string()))?;
    let text = boxed.to_string();
    Ok(Signature { boxed, text })
}

/// Who signed: the key id, and the name the signed comment gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signer {
    /// The signer's name (`signer:` in the signed comment), if any.
    pub name: Option<String>,
    /// The key id.
    pub id: KeyId,
}

impl std::fmt::Display for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.name {
            Some(name) => write!(f, "{name} (key {})", self.id),
            None => write!(f, "key {}", self.id),
        }
    }
}

/// What a signature says about some bytes, given the trusted keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Made by a trusted key over exactly these bytes.
    Trusted(Signer),
    /// Made by a key that is not trusted (not checked further; the name is
    /// what the signature claims).
    UnknownKey(Signer),
    /// Claims a trusted key but does not verify: the bytes (or the signed
    /// comment) are not what was signed.
    Invalid {
        /// The trusted key it names.
        signer: Signer,
        /// Why it failed.
        reason: String,
    },
}

type Memo = Mutex<HashMap<(String, String, String), Result<(), String>>>;

fn memo() -> &'static Memo {
    static MEMO: OnceLock<Memo> = OnceLock::new();
    MEMO.get_or_init(Default::default)
}

/// Verify `sig` over the bytes whose blake3 is `digest` against `keys`.
/// `bytes` is called only when this (digest, signature, key) was not
/// verified before in this process: a long-running process checks a
/// component it already checked without reading it again.
pub fn verify_digest(
    digest: &str,
    bytes: impl FnOnce() -> std::io::Result<Vec<u8>>,
    sig: &Signature,
    keys: &[PublicKey],
) -> Verdict {
    let id = sig.key_id();
    let Some(key) = keys.iter().find(|k| k.id() == id) else {
        return Verdict::UnknownKey(Signer {
            name: sig.signer_name(),
            id,
        });
    };
    let signer = Signer {
        name: sig.signer_name().or_else(|| key.name.clone()),
        id,
    };
    let memo_key = (digest.to_string(), sig.text.clone(), key.line().to_string());
    let known = memo().lock().ok().and_then(|m| m.get(&memo_key).cloned());
    let outcome = match known {
        Some(outcome) => outcome,
        None => {
            let outcome = match bytes() {
                Ok(b) if blake3::hash(&b).to_hex().as_str() == digest => check(&b, sig, key),
                Ok(_) => Err("the bytes changed while they were checked".to_string()),
                Err(e) => Err(format!("cannot read the signed bytes: {e}")),
            };
            if let Ok(mut m) = memo().lock() {
                if m.len() > 4096 {
                    m.clear();
                }
                m.insert(memo_key, outcome.clone());
            }
            outcome
        }
    };
    match outcome {
        Ok(()) => Verdict::Trusted(signer),
        Err(reason) => Verdict::Invalid { signer, reason },
    }
}

/// Verify `sig` over `bytes` against `keys`.
pub fn verify(bytes: &[u8], sig: &Signature, keys: &[PublicKey]) -> Verdict {
    let digest = blake3::hash(bytes).to_hex().to_string();
    verify_digest(&digest, || Ok(bytes.to_vec()), sig, keys)
}

fn check(bytes: &[u8], sig: &Signature, key: &PublicKey) -> Result<(), String> {
    minisign::verify(
        &key.inner,
        &sig.boxed,
        Cursor::new(bytes),
        true,
        false,
        false,
    )
    .map_err(|e| {
        let e = e.to_string();
        if e.contains("Comment") {
            "its signed comment was altered".to_string()
        } else {
            "it was made over other bytes (the component changed after it was signed)".to_string()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trusted_unknown_and_invalid() {
        let key = SecretKey::generate("alice").unwrap();
        let other = SecretKey::generate("mallory").unwrap();
        let sig = sign(&key, b"component bytes", "step.wasm").unwrap();
        let again = Signature::parse(sig.text(), "step.wasm.minisig").unwrap();
        assert_eq!(again.signer_name().as_deref(), Some("alice"));
        assert!(again.trusted_comment().contains("file:step.wasm"));
        let trusted = [key.public().clone()];
        assert_eq!(
            verify(b"component bytes", &again, &trusted),
            Verdict::Trusted(Signer {
                name: Some("alice".into()),
                id: key.public().id()
            })
        );
        match verify(b"other bytes", &again, &trusted) {
            Verdict::Invalid { reason, .. } => assert!(reason.contains("other bytes"), "{reason}"),
            v => panic!("{v:?}"),
        }
        assert!(matches!(
            verify(b"component bytes", &again, &[other.public().clone()]),
            Verdict::UnknownKey(_)
        ));
        // A signed comment edited after signing is caught.
        let edited = sig.text().replace("signer:alice", "signer:bob");
        let edited = Signature::parse(&edited, "x").unwrap();
        assert!(matches!(
            verify(b"component bytes", &edited, &trusted),
            Verdict::Invalid { .. }
        ));
        assert!(Signature::parse("garbage", "x.minisig")
            .unwrap_err()
            .to_string()
            .contains("x.minisig"));
    }
}
