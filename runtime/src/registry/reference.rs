//! `oci://HOST[:PORT]/REPO[:TAG][@sha256:DIGEST]`: where a step lives in a
//! registry. The tag is a name someone can move; the digest (of the OCI
//! manifest) is what a workflow, a lock file or an approval is bound to.

/// The scheme that marks a registry reference in stage names and `uses:`.
pub const SCHEME: &str = "oci://";

/// A parsed registry reference.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Reference {
    /// `host[:port]`, lower case.
    pub registry: String,
    /// The repository path (`team/greet`).
    pub repository: String,
    /// The tag, if named.
    pub tag: Option<String>,
    /// The manifest digest (`sha256:<64 hex>`), if named.
    pub digest: Option<String>,
}

/// Why a reference cannot be used; the message names the text and the form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid registry reference {text:?}: {reason} (expected oci://HOST[:PORT]/REPO:TAG[@sha256:DIGEST])")]
pub struct ReferenceError {
    /// The text as given.
    pub text: String,
    /// What is wrong with it.
    pub reason: String,
}

/// Whether `name` is a registry reference (starts with `oci://`).
pub fn is_reference(name: &str) -> bool {
    name.starts_with(SCHEME)
}

/// Whether `d` is `sha256:` and 64 lower-case hex digits.
pub fn is_sha256_digest(d: &str) -> bool {
    d.strip_prefix("sha256:").is_some_and(|h| {
        h.len() == 64
            && h.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

impl Reference {
    /// Parse `text`; the `oci://` prefix is required when `scheme_required`
    /// (stage names, `uses:`), optional on the command line.
    pub fn parse(text: &str, scheme_required: bool) -> Result<Reference, ReferenceError> {
        let bad = |reason: &str| ReferenceError {
            text: text.to_string(),
            reason: reason.to_string(),
        };
        let rest = match text.strip_prefix(SCHEME) {
            Some(r) => r,
            None if scheme_required => return Err(bad("it must start with oci://")),
            None if text.contains("://") => {
                return Err(bad("only oci:// references name registries"))
            }
            None => text,
        };
        let (registry, path) = rest
            .split_once('/')
            .ok_or_else(|| bad("it names no repository after the registry"))?;
        let registry = registry.to_ascii_lowercase();
        let (host, port) = match registry.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (registry.as_str(), None),
        };
        if host.is_empty()
            || !host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
        {
            return Err(bad("the registry host must be a name or an IPv4 address"));
        }
        if let Some(p) = port {
            if p.parse::<u16>().map_or(true, |n| n == 0) {
                return Err(bad("the registry port must be a number from 1 to 65535"));
            }
        }
        let (path, digest) = match path.split_once('@') {
            Some((p, d)) => {
                if !is_sha256_digest(d) {
                    return Err(bad(
                        "the digest must be sha256: and 64 lower-case hex digits",
                    ));
                }
                (p, Some(d.to_string()))
            }
            None => (path, None),
        };
        // The tag follows the last ':' after the last '/'.
        let last = path.rfind('/').map_or(0, |i| i + 1);
        let (repository, tag) = match path[last..].rfind(':') {
            Some(i) => (&path[..last + i], Some(path[last + i + 1..].to_string())),
            None => (path, None),
        };
        if repository.is_empty()
            || repository.split('/').any(|c| {
                c.is_empty()
                    || !c.bytes().all(|b| {
                        b.is_ascii_lowercase()
                            || b.is_ascii_digit()
                            || matches!(b, b'.' | b'_' | b'-')
                    })
                    || !c.as_bytes()[0].is_ascii_alphanumeric()
            })
        {
            return Err(bad(
                "the repository must be lower-case path components of letters, digits, '.', '_' or '-'",
            ));
        }
        if let Some(t) = &tag {
            let ok = !t.is_empty()
                && t.len() <= 128
                && (t.as_bytes()[0].is_ascii_alphanumeric() || t.as_bytes()[0] == b'_')
                && t.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
            if !ok {
                return Err(bad(
                    "the tag must be letters, digits, '.', '_' or '-' (at most 128)",
                ));
            }
        }
        if tag.is_none() && digest.is_none() {
            return Err(bad("it names neither a tag nor a digest"));
        }
        Ok(Reference {
            registry,
            repository: repository.to_string(),
            tag,
            digest,
        })
    }

    /// The reference without its digest (`oci://host/repo:tag`): the key a
    /// lock file pins.
    pub fn unpinned(&self) -> String {
        let mut s = format!("{SCHEME}{}/{}", self.registry, self.repository);
        if let Some(t) = &self.tag {
            s.push(':');
            s.push_str(t);
        }
        s
    }

    /// The same reference at manifest `digest`.
    pub fn at(&self, digest: &str) -> Reference {
        Reference {
            digest: Some(digest.to_string()),
            ..self.clone()
        }
    }

    /// The same repository under another tag (and no digest).
    pub fn with_tag(&self, tag: &str) -> Reference {
        Reference {
            tag: Some(tag.to_string()),
            digest: None,
            ..self.clone()
        }
    }

    /// The reference as `oci-client` reads it (no scheme; the digest wins).
    pub(crate) fn to_oci(&self) -> oci_client::Reference {
        match (&self.tag, &self.digest) {
            (Some(tag), Some(d)) => oci_client::Reference::with_tag_and_digest(
                self.registry.clone(),
                self.repository.clone(),
                tag.clone(),
                d.clone(),
            ),
            (None, Some(d)) => oci_client::Reference::with_digest(
                self.registry.clone(),
                self.repository.clone(),
                d.clone(),
            ),
            (Some(tag), None) => oci_client::Reference::with_tag(
                self.registry.clone(),
                self.repository.clone(),
                tag.clone(),
            ),
            (None, None) => oci_client::Reference::with_tag(
                self.registry.clone(),
                self.repository.clone(),
                "latest".into(),
            ),
        }
    }
}

impl std::fmt::Display for Reference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.unpinned())?;
        if let Some(d) = &self.digest {
            write!(f, "@{d}")?;
        }
        Ok(())
    }
}

/// The tag a signature of manifest `digest` is stored under (the cosign
/// convention, for registries without the referrers API).
pub fn signature_tag(digest: &str) -> String {
    format!("{}.sig", digest.replacen(':', "-", 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_registry_repo_tag_and_digest() {
        let d = format!("sha256:{}", "a".repeat(64));
        let r =
            Reference::parse(&format!("oci://127.0.0.1:5000/team/greet:0.1@{d}"), true).unwrap();
        assert_eq!(r.registry, "127.0.0.1:5000");
        assert_eq!(r.repository, "team/greet");
        assert_eq!(r.tag.as_deref(), Some("0.1"));
        assert_eq!(r.digest.as_deref(), Some(d.as_str()));
        assert_eq!(r.unpinned(), "oci://127.0.0.1:5000/team/greet:0.1");
        assert_eq!(
            r.to_string(),
            format!("oci://127.0.0.1:5000/team/greet:0.1@{d}")
        );
        let r = Reference::parse("ghcr.io/acme/step:1", false).unwrap();
        assert_eq!(
            (r.registry.as_str(), r.tag.as_deref()),
            ("ghcr.io", Some("1"))
        );
        assert_eq!(signature_tag(&d), format!("sha256-{}.sig", "a".repeat(64)));
    }

    #[test]
    fn refuses_what_is_not_a_reference() {
        for bad in [
            "ghcr.io/acme/step:1",
            "oci://ghcr.io",
            "oci://ghcr.io/acme/step",
            "oci://ghcr.io/Acme/step:1",
            "oci://ghcr.io/acme/step:1@sha256:abc",
            "oci://ghcr.io:99999/a:1",
            "oci://user@evil/a:1",
            "oci://ghcr.io/a/../b:1",
            "oci://ghcr.io/a:bad tag",
        ] {
            let e = Reference::parse(bad, true).unwrap_err();
            assert!(e.to_string().contains("expected oci://"), "{bad}: {e}");
        }
        assert!(Reference::parse("https://ghcr.io/a:1", false).is_err());
    }
}
