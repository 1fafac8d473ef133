//! Registry credentials, from the operator only: `LOBSTER_REGISTRY_AUTH`
//! (`host[:port]=user:token` entries, separated by commas or white space)
//! in the process environment, then the `auths` of docker's `config.json`
//! (`$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`), keyed by
//! host. Nothing a workflow, a step or a tenant agent writes is read here.
//!
//! Each credential's secret is a [`BoundSecret`] (S1's origin rule, in
//! `kernel::credential`): bound to the origin of the registry it was
//! configured for — `https://host:port`, or `http://` for the policy's
//! `insecure_registries` — and handed out only for that origin, so a
//! workflow naming another registry never makes Lobster send it there. (A credential
//! helper — docker's `credsStore`/`credHelpers` — is a host program; it is
//! not run: put the token in `LOBSTER_REGISTRY_AUTH` instead.)

use crate::kernel::credential::{BoundSecret, Origin, Scheme, Secret};
use base64::Engine;
use std::path::PathBuf;

/// One registry credential: a user name and a secret bound to the
/// registry's origin ([`BoundSecret`]: handed out for that origin only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryCredential {
    /// The user name (not secret; it travels with the secret).
    pub user: String,
    /// The password or token, bound to the registry's origin.
    pub secret: BoundSecret,
}

/// The origin a registry (`host[:port]`) is spoken to at: `http` for the
/// policy's `insecure_registries`, else `https`; the port defaults by scheme.
pub fn registry_origin(registry: &str, insecure: &[String]) -> Origin {
    let scheme = if insecure.iter().any(|h| h.eq_ignore_ascii_case(registry)) {
        Scheme::Http
    } else {
        Scheme::Https
    };
    let (host, port) = match registry.rsplit_once(':') {
        Some((h, p)) => match p.parse::<u16>() {
            Ok(n) => (h, n),
            Err(_) => (registry, scheme.default_port()),
        },
        None => (registry, scheme.default_port()),
    };
    Origin::new(scheme, host, port)
}

/// Why the operator's credentials cannot be read. Messages name the entry
/// by position and source, never its secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}: {reason}")]
pub struct CredentialError {
    /// `LOBSTER_REGISTRY_AUTH` or the config file.
    pub source_name: String,
    /// What is wrong and how to fix it.
    pub reason: String,
}

/// Every registry credential the operator configured.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Credentials {
    entries: Vec<RegistryCredential>,
}

/// The environment variable with `host=user:token` entries.
pub const AUTH_ENV: &str = "LOBSTER_REGISTRY_AUTH";

impl Credentials {
    /// No credentials (anonymous access).
    pub fn none() -> Credentials {
        Credentials::default()
    }

    /// The operator's credentials: `LOBSTER_REGISTRY_AUTH` first, then the
    /// docker config file; `env` reads the process environment, `insecure`
    /// is the policy's `insecure_registries` (whose origins are `http`).
    pub fn from_operator(
        env: impl Fn(&str) -> Option<String>,
        insecure: &[String],
    ) -> Result<Credentials, CredentialError> {
        let mut creds = Credentials::default();
        if let Some(text) = env(AUTH_ENV).filter(|v| !v.trim().is_empty()) {
            creds.entries.extend(parse_env(&text, insecure)?);
        }
        let config = match env("DOCKER_CONFIG").filter(|v| !v.is_empty()) {
            Some(dir) => Some(PathBuf::from(dir).join("config.json")),
            None => env("HOME").map(|h| PathBuf::from(h).join(".docker").join("config.json")),
        };
        if let Some(path) = config.filter(|p| p.is_file()) {
            let text = std::fs::read_to_string(&path).map_err(|e| CredentialError {
                source_name: path.display().to_string(),
                reason: e.to_string(),
            })?;
            creds.entries.extend(parse_docker_config(
                &text,
                &path.display().to_string(),
                insecure,
            )?);
        }
        Ok(creds)
    }

    /// `(user, secret)` for the registry at `origin`: the first credential
    /// configured for exactly that origin.
    pub fn for_origin(&self, origin: &Origin) -> Option<(&str, &str)> {
        self.entries
            .iter()
            .find_map(|e| Some((e.user.as_str(), e.secret.for_origin(origin)?)))
    }

    /// Every credential (for `doctor`: origins and sources, never values).
    pub fn entries(&self) -> &[RegistryCredential] {
        &self.entries
    }
}

fn credential(
    host: &str,
    user: &str,
    secret: &str,
    source: &str,
    insecure: &[String],
) -> Option<RegistryCredential> {
    Some(RegistryCredential {
        user: user.to_string(),
        secret: BoundSecret::new(
            registry_origin(host, insecure),
            Secret::new(secret)?,
            source,
        ),
    })
}

/// `host[:port]=user:token` entries separated by commas or white space.
pub fn parse_env(
    text: &str,
    insecure: &[String],
) -> Result<Vec<RegistryCredential>, CredentialError> {
    let mut out = Vec::new();
    for (i, entry) in text
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|e| !e.is_empty())
        .enumerate()
    {
        let bad = |what: &str| CredentialError {
            source_name: AUTH_ENV.to_string(),
            reason: format!(
                "entry {} {what} (expected host[:port]=user:token, entries separated by commas)",
                i + 1
            ),
        };
        let (host, cred) = entry.split_once('=').ok_or_else(|| bad("has no '='"))?;
        let (user, token) = cred
            .split_once(':')
            .ok_or_else(|| bad("has no ':' between user and token"))?;
        if host.is_empty() || host.contains('/') || user.is_empty() || token.is_empty() {
            return Err(bad(
                "has an empty host, user or token, or a path after the host",
            ));
        }
        out.extend(credential(host, user, token, AUTH_ENV, insecure));
    }
    Ok(out)
}

/// The `auths` of a docker `config.json`: `{"auths": {"host": {"auth":
/// base64("user:pass")}}}` (or `username`/`password`). Keys may be URLs
/// (`https://index.docker.io/v1/`): the host is what counts.
pub fn parse_docker_config(
    text: &str,
    source: &str,
    insecure: &[String],
) -> Result<Vec<RegistryCredential>, CredentialError> {
    #[derive(serde::Deserialize)]
    struct Config {
        #[serde(default)]
        auths: std::collections::BTreeMap<String, Entry>,
    }
    #[derive(serde::Deserialize)]
    struct Entry {
        auth: Option<String>,
        username: Option<String>,
        password: Option<String>,
    }
    let bad = |reason: String| CredentialError {
        source_name: source.to_string(),
        reason,
    };
    let config: Config =
        serde_json::from_str(text).map_err(|e| bad(format!("not a docker config file: {e}")))?;
    let mut out = Vec::new();
    for (key, entry) in config.auths {
        let host = key
            .split_once("://")
            .map_or(key.as_str(), |(_, rest)| rest)
            .split('/')
            .next()
            .unwrap_or_default();
        let host = match host {
            "index.docker.io" | "registry-1.docker.io" => "docker.io",
            h => h,
        };
        let (user, pass) = match (entry.auth, entry.username, entry.password) {
            (Some(auth), _, _) if !auth.is_empty() => {
                let decoded = base64::engine::general_purpose::STANDARD
                    .decode(auth.trim())
                    .ok()
                    .and_then(|b| String::from_utf8(b).ok())
                    .ok_or_else(|| {
                        bad(format!("auths.{key:?}.auth is not base64 of user:password"))
                    })?;
                let (u, p) = decoded.split_once(':').ok_or_else(|| {
                    bad(format!("auths.{key:?}.auth is not base64 of user:password"))
                })?;
                (u.to_string(), p.to_string())
            }
            (_, Some(u), Some(p)) => (u, p),
            // An entry without a secret (a credential helper holds it).
            _ => continue,
        };
        out.extend(credential(host, &user, &pass, source, insecure));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(r: &str) -> Origin {
        registry_origin(r, &[])
    }

    #[test]
    fn a_secret_goes_only_to_its_own_origin() {
        let e = parse_env("Registry.Example:5000=me:tok", &[]).unwrap();
        let creds = Credentials { entries: e };
        assert_eq!(
            creds.for_origin(&origin("registry.example:5000")),
            Some(("me", "tok"))
        );
        assert_eq!(creds.for_origin(&origin("registry.example")), None);
        assert_eq!(creds.for_origin(&origin("registry.example:5001")), None);
        assert_eq!(creds.for_origin(&origin("evil.example")), None);
        // The same host over plain http is another origin.
        let http = registry_origin("registry.example:5000", &["registry.example:5000".into()]);
        assert_eq!(creds.for_origin(&http), None);
        assert!(!format!("{creds:?}").contains("tok"));
        assert_eq!(origin("ghcr.io"), origin("ghcr.io:443"));
    }

    #[test]
    fn env_entries_parse_and_errors_never_quote_secrets() {
        let e = parse_env("a:5000=u:t:with:colons, ghcr.io=me:ghp_x", &[]).unwrap();
        let creds = Credentials { entries: e };
        assert_eq!(
            creds.for_origin(&origin("a:5000")),
            Some(("u", "t:with:colons"))
        );
        assert_eq!(creds.for_origin(&origin("ghcr.io")), Some(("me", "ghp_x")));
        let err = parse_env("ghcr.io=me:ok,broken-secret-value", &[]).unwrap_err();
        assert!(err.to_string().contains("entry 2"), "{err}");
        assert!(!err.to_string().contains("broken-secret-value"), "{err}");
    }

    #[test]
    fn docker_config_auths_by_host() {
        let text = r#"{"auths": {"https://index.docker.io/v1/": {"auth": "dTpw"},
            "127.0.0.1:5000": {"username": "a", "password": "b"}, "helper.io": {}}}"#;
        let insecure = vec!["127.0.0.1:5000".to_string()];
        let e = parse_docker_config(text, "config.json", &insecure).unwrap();
        assert_eq!(e.len(), 2);
        let creds = Credentials { entries: e };
        let local = registry_origin("127.0.0.1:5000", &insecure);
        assert_eq!(creds.for_origin(&local), Some(("a", "b")));
        assert_eq!(creds.for_origin(&origin("docker.io")), Some(("u", "p")));
        let creds = Credentials::from_operator(
            |k| (k == AUTH_ENV).then(|| "127.0.0.1:5000=env:first".to_string()),
            &insecure,
        )
        .unwrap();
        assert_eq!(creds.for_origin(&local), Some(("env", "first")));
        assert_eq!(creds.for_origin(&origin("other:5000")), None);
    }
}
