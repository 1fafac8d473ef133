//! Credentials bound to the origin they were configured for.
//!
//! A token or API key is operator configuration: it comes with the URL the
//! operator configured it for (an environment variable pair read when
//! `lobster` starts, a policy's `[gateway]`/`[model]` table, a registry's
//! entry), and it may be sent only to that URL's origin — scheme, host and
//! port, compared exactly after normalising case and default ports. A URL
//! that came from anywhere else (a workflow's `env:`, a step's output, a
//! pipeline's `--url`, a redirect) gets no secret attached, whatever its
//! host: [`BoundSecret::for_origin`] is the one place that hands the secret
//! out, and it answers only for the configured origin.
//!
//! [`Secret`] never prints its value (`Debug` shows `Secret(***)`; there is
//! no `Display`), so a secret cannot reach a log line or an error message by
//! accident.
//!
//! Used by the broker (gateway and model endpoints) and by anything else that
//! attaches operator credentials to requests (registries).

use std::fmt;

/// `http` or `https`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scheme {
    /// Plain HTTP (default port 80).
    Http,
    /// HTTP over TLS (default port 443).
    Https,
}

impl Scheme {
    /// The port a URL of this scheme means when it names none.
    pub fn default_port(self) -> u16 {
        match self {
            Scheme::Http => 80,
            Scheme::Https => 443,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
}

/// An origin: scheme, host (lower case, IPv6 without brackets) and port.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Origin {
    scheme: Scheme,
    host: String,
    port: u16,
}

/// Why a text is not an origin.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OriginError {
    /// Not `http://` or `https://`.
    #[error("{0:?} is not an http(s) URL")]
    Scheme(String),
    /// No host, or a port that is not a number from 1 to 65535.
    #[error("{0:?} is not a valid URL (scheme://host[:port][/path])")]
    Invalid(String),
}

impl Origin {
    /// The origin of `scheme://host:port`.
    pub fn new(scheme: Scheme, host: &str, port: u16) -> Origin {
        Origin {
            scheme,
            host: normal_host(host),
            port,
        }
    }

    /// The origin of an absolute `http(s)://` URL (its path, query and
    /// fragment are ignored). User information (`user:pw@`) is refused: a
    /// URL that carries credentials of its own is not one an operator
    /// configures a secret for.
    pub fn parse(url: &str) -> Result<Origin, OriginError> {
        let text = url.trim();
        let invalid = || OriginError::Invalid(text.to_string());
        let (scheme, rest) = text.split_once("://").ok_or_else(invalid)?;
        let scheme = match scheme.to_ascii_lowercase().as_str() {
            "http" => Scheme::Http,
            "https" => Scheme::Https,
            _ => return Err(OriginError::Scheme(text.to_string())),
        };
        let authority = match rest.find(['/', '?', '#']) {
            Some(i) => &rest[..i],
            None => rest,
        };
        if authority.contains('@') {
            return Err(invalid());
        }
        let (host, port) = if let Some(after) = authority.strip_prefix('[') {
            let (h, tail) = after.split_once(']').ok_or_else(invalid)?;
            let port = match tail {
                "" => None,
                t => Some(t.strip_prefix(':').ok_or_else(invalid)?),
            };
            (h, port)
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            }
        };
        if host.is_empty() || host.contains(['[', ']', ' ']) {
            return Err(invalid());
        }
        let port = match port {
            None | Some("") => scheme.default_port(),
            Some(p) => match p.parse::<u16>() {
                Ok(n) if n > 0 && p.bytes().all(|b| b.is_ascii_digit()) => n,
                _ => return Err(invalid()),
            },
        };
        Ok(Origin::new(scheme, host, port))
    }

    /// `http` or `https`.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// The host, lower case, IPv6 without brackets.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The port (the scheme's default when the URL named none).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Whether the host is loopback by name: `localhost`, `127.0.0.1`, `::1`.
    pub fn is_loopback(&self) -> bool {
        matches!(self.host.as_str(), "localhost" | "127.0.0.1" | "::1")
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(
                f,
                "{}://[{}]:{}",
                self.scheme.as_str(),
                self.host,
                self.port
            )
        } else {
            write!(f, "{}://{}:{}", self.scheme.as_str(), self.host, self.port)
        }
    }
}

/// Lower case; one trailing dot is kept (`example.com.` is another name, so
/// it never matches `example.com`: the comparison fails closed).
fn normal_host(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase()
}

/// A secret value (token, API key, password). Its text is reachable only
/// through [`Secret::expose`]; `Debug` prints `Secret(***)`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// A secret from `text` (trimmed); `None` when it is empty.
    pub fn new(text: &str) -> Option<Secret> {
        let t = text.trim();
        (!t.is_empty()).then(|| Secret(t.to_string()))
    }

    /// The secret's text, to put in a request header.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// A secret and the one origin it may be sent to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoundSecret {
    origin: Origin,
    secret: Secret,
    source: String,
}

impl BoundSecret {
    /// `secret`, configured for `origin`, read from `source` (for messages:
    /// `OPENCLAW_TOKEN`, `policy [gateway] token_env GW_TOKEN`).
    pub fn new(origin: Origin, secret: Secret, source: impl Into<String>) -> BoundSecret {
        BoundSecret {
            origin,
            secret,
            source: source.into(),
        }
    }

    /// The origin the secret was configured for.
    pub fn origin(&self) -> &Origin {
        &self.origin
    }

    /// Where the secret was read from (never the secret itself).
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The secret, when `target` is the origin it was configured for;
    /// `None` for every other origin.
    pub fn for_origin(&self, target: &Origin) -> Option<&str> {
        (*target == self.origin).then(|| self.secret.expose())
    }

    /// [`BoundSecret::for_origin`] of `url`'s origin (`None` when `url` is
    /// not an http(s) URL).
    pub fn for_url(&self, url: &str) -> Option<&str> {
        self.for_origin(&Origin::parse(url).ok()?)
    }
}

/// Environment variables that hold credentials whatever the configuration
/// says: the reference's token and key variables. With the variables a
/// policy names (`token_env`, `key_env`), these are never handed to a step
/// under the untrusted policy, nor to a `lobster serve` tenant's run.
pub const WELL_KNOWN_SECRET_VARS: &[&str] = &[
    "OPENCLAW_TOKEN",
    "CLAWD_TOKEN",
    "LOBSTER_LLM_API_KEY",
    "LOBSTER_LLM_ADAPTER_TOKEN",
    "LOBSTER_PI_LLM_ADAPTER_TOKEN",
];

/// Every environment variable `policy` or the reference treats as holding a
/// credential: [`WELL_KNOWN_SECRET_VARS`], `[gateway] token_env` and each
/// `[model.*] key_env`.
pub fn secret_env_names(policy: &super::Policy) -> Vec<String> {
    let mut names: Vec<String> = WELL_KNOWN_SECRET_VARS
        .iter()
        .map(|s| s.to_string())
        .collect();
    names.extend(policy.gateway.token_env.iter().cloned());
    names.extend(policy.model.key_envs().map(str::to_string));
    names.sort();
    names.dedup();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_normalise_case_and_default_ports() {
        let a = Origin::parse("HTTPS://Gateway.Example/tools/invoke?x=1").unwrap();
        assert_eq!(a, Origin::parse("https://gateway.example:443").unwrap());
        assert_eq!(a.to_string(), "https://gateway.example:443");
        assert_eq!(
            Origin::parse("http://[::1]:8080/x").unwrap().to_string(),
            "http://[::1]:8080"
        );
        assert_eq!(Origin::parse("http://h").unwrap().port(), 80);
        assert!(Origin::parse("http://[::1]").unwrap().is_loopback());
        for bad in [
            "ftp://h",
            "h:80",
            "http://",
            "http://h:0",
            "http://h:99999",
            "http://h:+80",
            "http://user:pw@h",
            "http://[::1",
            "http://[::1]x",
        ] {
            assert!(Origin::parse(bad).is_err(), "{bad}");
        }
        assert!(matches!(
            Origin::parse("file:///etc"),
            Err(OriginError::Scheme(_))
        ));
    }

    #[test]
    fn a_secret_goes_only_to_its_origin() {
        let s = BoundSecret::new(
            Origin::parse("http://127.0.0.1:18789").unwrap(),
            Secret::new(" tok ").unwrap(),
            "OPENCLAW_TOKEN",
        );
        assert_eq!(
            s.for_url("http://127.0.0.1:18789/tools/invoke"),
            Some("tok")
        );
        assert_eq!(s.for_url("HTTP://127.0.0.1:18789"), Some("tok"));
        // Same host, another port; another scheme; another loopback name.
        for other in [
            "http://127.0.0.1:18790/tools/invoke",
            "https://127.0.0.1:18789/",
            "http://localhost:18789/",
            "http://127.0.0.1.:18789/",
            "http://evil.example/?http://127.0.0.1:18789",
            "not a url",
        ] {
            assert_eq!(s.for_url(other), None, "{other}");
        }
        assert!(!format!("{s:?}").contains("tok\""), "{s:?}");
        assert!(format!("{s:?}").contains("Secret(***)"));
        assert_eq!(s.source(), "OPENCLAW_TOKEN");
        assert!(Secret::new("  ").is_none());
    }
}
