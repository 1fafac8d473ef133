//! Approvers: the humans who may decide a tenant's gates, each with a
//! credential of their own (`[[tenant.approver]]`: `name` and `token_sha256`
//! or an argon2 `password_hash`), separate from the tenant's agent token.
//!
//! An approver signs in on the approval page and gets a session cookie: a
//! short-lived (the link's lifetime at most), `HttpOnly`, `SameSite=Strict`
//! value signed with a key derived from the server's link key (so every
//! node of a shared store accepts it), naming the tenant, the approver and a
//! fingerprint of the credential it was issued for (changing the credential
//! in `serve.toml` ends the sessions). The approver's name on the session is
//! the decision's identity; nothing in a request body names it.

use crate::error::{Error, Result};
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use std::time::Duration;

/// An approver's credential.
#[derive(Clone, PartialEq, Eq)]
pub enum Credential {
    /// sha256 of a bearer-style token.
    TokenSha256([u8; 32]),
    /// A PHC string (`$argon2id$v=19$m=…,t=…,p=…$salt$hash`).
    PasswordHash(String),
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Credential::TokenSha256(_) => "TokenSha256(…)",
            Credential::PasswordHash(_) => "PasswordHash(…)",
        })
    }
}

impl Credential {
    /// Whether `secret` is this credential (tokens compared in constant time).
    pub fn verify(&self, secret: &str) -> bool {
        match self {
            Credential::TokenSha256(h) => {
                super::auth::ct_eq(h, &super::auth::sha256(secret.as_bytes()))
            }
            Credential::PasswordHash(phc) => match PasswordHash::new(phc) {
                Ok(parsed) => Argon2::default()
                    .verify_password(secret.as_bytes(), &parsed)
                    .is_ok(),
                Err(_) => false,
            },
        }
    }

    /// A short digest of the credential (not of the secret): sessions carry
    /// it, so a credential changed in `serve.toml` ends them.
    fn fingerprint(&self) -> String {
        let mut h = blake3::Hasher::new();
        match self {
            Credential::TokenSha256(d) => h.update(b"t").update(d),
            Credential::PasswordHash(p) => h.update(b"p").update(p.as_bytes()),
        };
        h.finalize().to_hex()[..16].to_string()
    }

    /// Check a `password_hash` from the config: an argon2 PHC string.
    pub fn password(phc: &str) -> std::result::Result<Credential, String> {
        let parsed = PasswordHash::new(phc.trim()).map_err(|e| e.to_string())?;
        if !parsed.algorithm.as_str().starts_with("argon2") {
            return Err(format!(
                "{} is not an argon2 hash",
                parsed.algorithm.as_str()
            ));
        }
        Ok(Credential::PasswordHash(phc.trim().to_string()))
    }
}

/// One configured approver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approver {
    /// The name recorded as the decision's identity.
    pub name: String,
    /// What they sign in with.
    pub credential: Credential,
}

/// Whether `name` may name an approver: 1 to 64 of `[A-Za-z0-9._@-]`.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'@' | b'-'))
}

/// The approver `name` if `secret` is their credential. Every approver's
/// credential is not checked (a password check is deliberately slow); an
/// unknown name costs one password check anyway, so timing does not tell
/// which names exist.
pub fn sign_in<'a>(approvers: &'a [Approver], name: &str, secret: &str) -> Option<&'a Approver> {
    match approvers.iter().find(|a| a.name == name) {
        Some(a) => a.credential.verify(secret).then_some(a),
        None => {
            let _ = DUMMY.verify(secret);
            None
        }
    }
}

static DUMMY: std::sync::LazyLock<Credential> = std::sync::LazyLock::new(|| {
    Credential::PasswordHash(hash_password("lobster dummy password").unwrap_or_default())
});

/// An argon2id PHC string for `password` (default parameters, random salt):
/// what `lobster serve hash-password` prints for `password_hash`.
pub fn hash_password(password: &str) -> Result<String> {
    let mut salt = [0u8; 16];
    getrandom::fill(&mut salt)
        .map_err(|e| Error::runtime(format!("no randomness for a salt: {e}")))?;
    let salt = SaltString::encode_b64(&salt)
        .map_err(|e| Error::runtime(format!("cannot encode the salt: {e}")))?;
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| Error::runtime(format!("cannot hash the password: {e}")))
}

/// The session cookie's name.
pub const COOKIE: &str = "lobster_approver";

/// A signed-in approver, as a verified session says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// The tenant whose approver signed in.
    pub tenant: String,
    /// The approver's name.
    pub name: String,
    /// Unix seconds.
    pub expires: u64,
}

/// Signs and checks session cookies (a key derived from the link key).
#[derive(Clone)]
pub struct SessionKey([u8; 32]);

impl SessionKey {
    /// The session key of the server whose link key is `link_key`.
    pub fn derive(link_key: &[u8; 32]) -> SessionKey {
        let mut h = blake3::Hasher::new_derive_key("lobster serve approver session key v1");
        h.update(link_key);
        SessionKey(*h.finalize().as_bytes())
    }

    fn tag(&self, payload: &str) -> String {
        blake3::keyed_hash(&self.0, payload.as_bytes())
            .to_hex()
            .to_string()
    }

    /// A session for `approver` of `tenant`, valid for `ttl`.
    pub fn issue(&self, tenant: &str, approver: &Approver, ttl: Duration) -> String {
        let exp = super::link::now_secs() + ttl.as_secs();
        let payload = format!(
            "{tenant}\n{}\n{exp}\n{}\n{}",
            approver.name,
            approver.credential.fingerprint(),
            crate::state::random_hex(8)
        );
        format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(&payload),
            self.tag(&payload)
        )
    }

    /// The session `cookie` carries, if its signature holds, it has not
    /// expired, it is a session of `tenant`, and its approver is still
    /// among `approvers` with the same credential.
    pub fn verify(&self, cookie: &str, tenant: &str, approvers: &[Approver]) -> Option<Session> {
        let (b64, tag) = cookie.split_once('.')?;
        let payload = String::from_utf8(URL_SAFE_NO_PAD.decode(b64).ok()?).ok()?;
        let want = blake3::Hash::from_hex(self.tag(&payload)).ok()?;
        // blake3::Hash compares in constant time.
        if want != blake3::Hash::from_hex(tag).ok()? {
            return None;
        }
        let parts: Vec<&str> = payload.split('\n').collect();
        let [of, name, exp, fingerprint, _nonce] = parts[..] else {
            return None;
        };
        if of != tenant {
            return None;
        }
        let expires: u64 = exp.parse().ok()?;
        if super::link::now_secs() > expires {
            return None;
        }
        let approver = approvers.iter().find(|a| a.name == name)?;
        if approver.credential.fingerprint() != fingerprint {
            return None;
        }
        Some(Session {
            tenant: tenant.to_string(),
            name: name.to_string(),
            expires,
        })
    }
}

/// The value of cookie `name` in a `Cookie:` header.
pub fn cookie_value<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    header.split(';').find_map(|part| {
        let (k, v) = part.trim().split_once('=')?;
        (k == name).then_some(v.trim())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn approvers() -> Vec<Approver> {
        vec![
            Approver {
                name: "alice".into(),
                credential: Credential::TokenSha256(super::super::auth::sha256(b"alice-token")),
            },
            Approver {
                name: "bob".into(),
                credential: Credential::password(&hash_password("correct horse").unwrap()).unwrap(),
            },
        ]
    }

    #[test]
    fn approvers_sign_in_with_their_own_credential() {
        let a = approvers();
        assert_eq!(sign_in(&a, "alice", "alice-token").unwrap().name, "alice");
        assert!(sign_in(&a, "alice", "alice-tokeN").is_none());
        assert_eq!(sign_in(&a, "bob", "correct horse").unwrap().name, "bob");
        assert!(sign_in(&a, "bob", "alice-token").is_none());
        assert!(sign_in(&a, "carol", "correct horse").is_none());
        assert!(Credential::password("$2b$12$abcdefghijklmnopqrstuu").is_err());
        assert!(Credential::password("nope").is_err());
        assert!(!format!("{:?}", a[1].credential).contains("argon2"));
        assert!(valid_name("ops.alice@example-1") && !valid_name("a b") && !valid_name(""));
    }

    #[test]
    fn sessions_are_signed_bound_and_expire() {
        let a = approvers();
        let key = SessionKey::derive(&[7u8; 32]);
        let cookie = key.issue("acme", &a[0], Duration::from_secs(60));
        let s = key.verify(&cookie, "acme", &a).unwrap();
        assert_eq!((s.tenant.as_str(), s.name.as_str()), ("acme", "alice"));
        // Another server's key, a tampered payload, another tenant.
        assert!(SessionKey::derive(&[8u8; 32])
            .verify(&cookie, "acme", &a)
            .is_none());
        let (b64, tag) = cookie.split_once('.').unwrap();
        let forged = URL_SAFE_NO_PAD.encode(
            String::from_utf8(URL_SAFE_NO_PAD.decode(b64).unwrap())
                .unwrap()
                .replace("alice", "bob"),
        );
        assert!(key.verify(&format!("{forged}.{tag}"), "acme", &a).is_none());
        assert!(key.verify(&cookie, "beta", &a).is_none());
        assert!(key.verify(&cookie, "acme", &[]).is_none());
        // A changed credential ends the session.
        let mut changed = a.clone();
        changed[0].credential = Credential::TokenSha256([0; 32]);
        assert!(key.verify(&cookie, "acme", &changed).is_none());
        // Expired.
        let old = key.issue("acme", &a[0], Duration::ZERO);
        std::thread::sleep(Duration::from_millis(1100));
        assert!(key.verify(&old, "acme", &a).is_none());
        assert_eq!(
            cookie_value("a=1; lobster_approver=xyz.abc ;b=2", COOKIE),
            Some("xyz.abc")
        );
    }
}
