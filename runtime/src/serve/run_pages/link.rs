//! View links: `base64url(tenant.scope.expiry).tag`, keyed with the
//! server's link key over their own domain (see [`super`]).

use crate::serve::link::{now_secs, LinkError, LinkKey};
use crate::serve::state::AppState;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;

/// The view links' key domain.
const DOMAIN: &[u8] = b"lobster serve run page v1\0";

/// What a verified view link shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct View {
    pub tenant: String,
    /// The run, or `None` for the tenant's run list.
    pub run: Option<String>,
    /// Unix seconds.
    pub expires: u64,
}

/// A view link (the path's last segment) for `tenant`'s run `run` (or its
/// list), valid until `expires` (Unix seconds).
pub fn issue(key: &LinkKey, tenant: &str, run: Option<&str>, expires: u64) -> String {
    let payload = format!("{tenant}.{}.{expires}", run.unwrap_or("-"));
    format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(&payload),
        key.keyed(DOMAIN, &payload)
    )
}

/// Verify view link `raw`: its tag, then its expiry.
pub fn verify(key: &LinkKey, raw: &str) -> Result<View, LinkError> {
    let (b64, tag) = raw.split_once('.').ok_or(LinkError::Unknown)?;
    let payload = URL_SAFE_NO_PAD
        .decode(b64)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or(LinkError::Unknown)?;
    let expected =
        blake3::Hash::from_hex(key.keyed(DOMAIN, &payload)).map_err(|_| LinkError::Unknown)?;
    let given = blake3::Hash::from_hex(tag).map_err(|_| LinkError::Unknown)?;
    // blake3::Hash compares in constant time.
    if expected != given {
        return Err(LinkError::Unknown);
    }
    let mut parts = payload.rsplitn(3, '.');
    let (Some(exp), Some(scope), Some(tenant)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(LinkError::Unknown);
    };
    let expires: u64 = exp.parse().map_err(|_| LinkError::Unknown)?;
    if now_secs() > expires {
        return Err(LinkError::Expired);
    }
    Ok(View {
        tenant: tenant.to_string(),
        run: (scope != "-").then(|| scope.to_string()),
        expires,
    })
}

/// The full URL of a view link for `tenant`'s run `run` (or its list),
/// valid for `approval_link_ttl`.
pub fn url(app: &AppState, tenant: &str, run: Option<&str>) -> String {
    let expires = now_secs() + app.config.approval_link_ttl.as_secs();
    format!(
        "{}/r/{}",
        app.public_url,
        issue(&app.link_key, tenant, run, expires)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn view_links_verify_expire_and_are_not_approval_links() {
        let dir = tempfile::tempdir().unwrap();
        let key = LinkKey::load_or_create(&crate::state::StateStore::new(dir.path())).unwrap();
        let exp = now_secs() + 60;
        let run = issue(&key, "acme", Some("r1"), exp);
        assert_eq!(
            verify(&key, &run),
            Ok(View {
                tenant: "acme".into(),
                run: Some("r1".into()),
                expires: exp
            })
        );
        assert_eq!(
            verify(&key, &issue(&key, "acme", None, exp)).unwrap().run,
            None
        );
        // Another tenant's name under the same tag: unknown.
        let (_, tag) = run.split_once('.').unwrap();
        let forged = URL_SAFE_NO_PAD.encode(format!("beta.r1.{exp}"));
        assert_eq!(
            verify(&key, &format!("{forged}.{tag}")),
            Err(LinkError::Unknown)
        );
        assert_eq!(
            verify(&key, &issue(&key, "acme", Some("r1"), now_secs() - 1)),
            Err(LinkError::Expired)
        );
        // An approval link is not a view link, nor the reverse.
        let approval = key.issue("acme", "r1", "0a1b2c3d", 60);
        assert_eq!(verify(&key, &approval), Err(LinkError::Unknown));
        assert_eq!(key.verify(&run), Err(LinkError::Unknown));
    }
}
