//! Talking to a registry: push and pull a step artifact and its signature,
//! and resolve a tag, through `oci-client` on a private current-thread
//! tokio runtime (on a thread of its own, so it may be called from any
//! thread, a server's blocking pool included).
//!
//! Credentials: the reference's registry gets the operator's credential for
//! exactly that registry's origin ([`super::Credentials::for_origin`]),
//! never another's. When the registry answers with a Bearer challenge, the token
//! request — which carries the credential — is made here, and only to a
//! realm on the registry's own host and scheme (`oci-client` would send it
//! to whatever realm the registry names); other registries get the token as
//! a Bearer credential. Every operation is bounded by [`TIMEOUT`] (and each
//! connect and read by their own timeouts): fetching a step is loading it,
//! like compiling it, and has its own bound; a run's deadline still ends
//! the run (the CLI's watchdog ends the process).

use super::credential::Credentials;
use super::layout::{self, sha256_digest, Encoded, StepManifest};
use super::reference::{signature_tag, Reference};
use super::RegistryError;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::secrets::RegistryAuth;
use oci_client::RegistryOperation;
use std::path::PathBuf;
use std::time::Duration;

/// The longest a push or pull may take.
pub const TIMEOUT: Duration = Duration::from_secs(120);
/// The largest component accepted from a registry.
pub const MAX_COMPONENT_BYTES: u64 = 256 << 20;
/// The largest manifest or signature accepted.
const MAX_SMALL_BYTES: usize = 4 << 20;

/// How registries are reached; every field is the operator's.
#[derive(Debug, Clone, Default)]
pub struct Access {
    /// `host[:port]`s spoken to over plain `http://` (the policy's
    /// `insecure_registries`); every other registry is `https://`.
    pub insecure: Vec<String>,
    /// A PEM bundle of extra CA certificates (the policy's `registry_ca_file`).
    pub ca_file: Option<PathBuf>,
    /// The operator's credentials.
    pub credentials: Credentials,
}

impl Access {
    fn is_insecure(&self, registry: &str) -> bool {
        self.insecure
            .iter()
            .any(|h| h.eq_ignore_ascii_case(registry))
    }
}

/// A pulled step: its manifest (digest checked), the component (sha256
/// checked against the layer), and the signature stored beside it, if any.
#[derive(Debug, Clone)]
pub struct Pulled {
    /// `sha256:` of the manifest bytes.
    pub manifest_digest: String,
    /// The manifest's bytes.
    pub manifest_bytes: Vec<u8>,
    /// The parsed manifest.
    pub manifest: StepManifest,
    /// The component's bytes.
    pub component: Vec<u8>,
    /// The `.minisig` text under the signature tag, if there is one.
    pub signature: Option<String>,
}

/// A registry client for one operation or a few.
pub struct Client {
    access: Access,
}

impl Client {
    /// A client reaching registries as `access` says.
    pub fn new(access: Access) -> Client {
        Client { access }
    }

    /// Push `encoded` (with `component` as its layer) to `r`'s tag; returns
    /// the manifest digest.
    pub fn push(
        &self,
        r: &Reference,
        encoded: &Encoded,
        component: &[u8],
    ) -> Result<String, RegistryError> {
        self.run(r, RegistryOperation::Push, |c, oci, _auth| async move {
            c.push_blob(&oci, encoded.config.0.clone(), &encoded.config.1)
                .await?;
            c.push_blob(&oci, component.to_vec(), &encoded.layer_digest)
                .await?;
            c.push_manifest_raw(
                &oci,
                encoded.manifest.clone(),
                layout::MANIFEST_MEDIA_TYPE.parse().expect("media type"),
            )
            .await?;
            Ok(())
        })?;
        Ok(encoded.manifest_digest.clone())
    }

    /// The manifest digest `r` names now (its digest if it has one, else
    /// what its tag points to), with the manifest's bytes.
    pub fn manifest(&self, r: &Reference) -> Result<(String, Vec<u8>), RegistryError> {
        let bytes = self.run(r, RegistryOperation::Pull, |c, oci, auth| async move {
            let (bytes, _) = c
                .pull_manifest_raw(&oci, &auth, &[layout::MANIFEST_MEDIA_TYPE])
                .await?;
            Ok(bytes.to_vec())
        })?;
        if bytes.len() > MAX_SMALL_BYTES {
            return Err(RegistryError::bad(
                r,
                format!("its manifest is larger than {MAX_SMALL_BYTES} bytes"),
            ));
        }
        let digest = sha256_digest(&bytes);
        if let Some(want) = &r.digest {
            if *want != digest {
                return Err(RegistryError::Digest {
                    reference: r.to_string(),
                    what: "manifest".into(),
                    expected: want.clone(),
                    got: digest,
                });
            }
        }
        Ok((digest, bytes))
    }

    /// Pull the step `r` names: manifest (checked against `r`'s digest),
    /// component (checked against the layer digest and size), signature.
    pub fn pull(&self, r: &Reference) -> Result<Pulled, RegistryError> {
        let (manifest_digest, manifest_bytes) = self.manifest(r)?;
        let manifest = layout::parse_step(&manifest_bytes).map_err(|e| RegistryError::bad(r, e))?;
        let size = u64::try_from(manifest.layer.size).unwrap_or(u64::MAX);
        if size > MAX_COMPONENT_BYTES {
            return Err(RegistryError::bad(
                r,
                format!(
                    "its component is {size} bytes, more than the {MAX_COMPONENT_BYTES} accepted"
                ),
            ));
        }
        let pinned = r.at(&manifest_digest);
        let layer = manifest.layer.clone();
        let component = self.run(
            &pinned,
            RegistryOperation::Pull,
            |c, oci, _auth| async move {
                let mut out = Capped::new(size as usize);
                c.pull_blob(&oci, &layer, &mut out).await?;
                Ok(out.into_inner())
            },
        )?;
        let got = sha256_digest(&component);
        if got != manifest.layer.digest || component.len() as u64 != size {
            return Err(RegistryError::Digest {
                reference: r.to_string(),
                what: "component".into(),
                expected: manifest.layer.digest.clone(),
                got,
            });
        }
        let signature = self.pull_signature(r, &manifest_digest)?;
        Ok(Pulled {
            manifest_digest,
            manifest_bytes,
            manifest,
            component,
            signature,
        })
    }

    /// The `.minisig` text stored for manifest `digest` in `r`'s
    /// repository (`None`: unsigned).
    pub fn pull_signature(
        &self,
        r: &Reference,
        digest: &str,
    ) -> Result<Option<String>, RegistryError> {
        let sig_ref = r.with_tag(&signature_tag(digest));
        let found = self.run(
            &sig_ref,
            RegistryOperation::Pull,
            |c, oci, auth| async move {
                match c
                    .pull_manifest_raw(&oci, &auth, &[layout::MANIFEST_MEDIA_TYPE])
                    .await
                {
                    Ok((bytes, _)) => Ok(Some(bytes.to_vec())),
                    Err(e) if is_not_found(&e) => Ok(None),
                    Err(e) => Err(e),
                }
            },
        )?;
        let Some(bytes) = found else { return Ok(None) };
        let layer = layout::parse_signature(&bytes).map_err(|e| RegistryError::bad(&sig_ref, e))?;
        if layer.size < 0 || layer.size as usize > MAX_SMALL_BYTES {
            return Err(RegistryError::bad(
                &sig_ref,
                "its signature layer is too large".to_string(),
            ));
        }
        let text = self.run(
            &sig_ref,
            RegistryOperation::Pull,
            |c, oci, _auth| async move {
                let mut out = Capped::new(layer.size as usize);
                c.pull_blob(&oci, &layer, &mut out).await?;
                Ok(out.into_inner())
            },
        )?;
        String::from_utf8(text)
            .map(Some)
            .map_err(|_| RegistryError::bad(&sig_ref, "its signature is not text".to_string()))
    }

    /// Store `sig_text` (by key `key_id`) as the signature of manifest
    /// `digest` in `r`'s repository.
    pub fn push_signature(
        &self,
        r: &Reference,
        digest: &str,
        sig_text: &str,
        key_id: &str,
    ) -> Result<(), RegistryError> {
        let sig_ref = r.with_tag(&signature_tag(digest));
        let (manifest, layer_digest) = layout::encode_signature(sig_text, key_id);
        self.run(
            &sig_ref,
            RegistryOperation::Push,
            |c, oci, _auth| async move {
                c.push_blob(
                    &oci,
                    layout::EMPTY_CONFIG.to_vec(),
                    &sha256_digest(layout::EMPTY_CONFIG),
                )
                .await?;
                c.push_blob(&oci, sig_text.as_bytes().to_vec(), &layer_digest)
                    .await?;
                c.push_manifest_raw(
                    &oci,
                    manifest,
                    layout::MANIFEST_MEDIA_TYPE.parse().expect("media type"),
                )
                .await?;
                Ok(())
            },
        )
    }

    /// Run `op` with an `oci-client` for `r`'s registry, authenticated for
    /// `operation`, on a runtime of its own, bounded by [`TIMEOUT`] and the
    /// cancel handle.
    fn run<T, F, Fut>(
        &self,
        r: &Reference,
        operation: RegistryOperation,
        op: F,
    ) -> Result<T, RegistryError>
    where
        T: Send,
        F: FnOnce(oci_client::Client, oci_client::Reference, RegistryAuth) -> Fut + Send,
        Fut: std::future::Future<Output = Result<T, oci_client::errors::OciDistributionError>>,
    {
        super::tls::install_provider();
        let roots =
            super::tls::roots(self.access.ca_file.as_deref()).map_err(RegistryError::Config)?;
        let insecure: Vec<String> = self.access.insecure.clone();
        let config = ClientConfig {
            protocol: ClientProtocol::HttpsExcept(insecure),
            tls_certs_only: roots.clone(),
            connect_timeout: Some(Duration::from_secs(10)),
            read_timeout: Some(Duration::from_secs(30)),
            user_agent: concat!("lobster/", env!("CARGO_PKG_VERSION")),
            ..ClientConfig::default()
        };
        let oci = r.to_oci();
        std::thread::scope(|s| {
            s.spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| {
                        RegistryError::Config(format!("cannot start the registry client: {e}"))
                    })?;
                rt.block_on(async {
                    let work = async {
                        let client = oci_client::Client::try_from(config)
                            .map_err(|e| RegistryError::from_oci(r, e))?;
                        let auth = self.auth_for(r, operation, &roots).await?;
                        // Fetches (and keeps in the client) the token a
                        // registry wants, anonymous ones included.
                        client
                            .auth(&oci, &auth, operation)
                            .await
                            .map_err(|e| RegistryError::from_oci(r, e))?;
                        op(client, oci, auth)
                            .await
                            .map_err(|e| RegistryError::from_oci(r, e))
                    };
                    tokio::time::timeout(TIMEOUT, work)
                        .await
                        .unwrap_or_else(|_| Err(RegistryError::Timeout(r.to_string())))
                })
            })
            .join()
            .unwrap_or_else(|_| Err(RegistryError::Config("the registry client panicked".into())))
        })
    }

    /// The credential to present to `r`'s registry for `operation`.
    async fn auth_for(
        &self,
        r: &Reference,
        operation: RegistryOperation,
        roots: &[oci_client::client::Certificate],
    ) -> Result<RegistryAuth, RegistryError> {
        let origin = super::credential::registry_origin(&r.registry, &self.access.insecure);
        let Some((user, secret)) = self.access.credentials.for_origin(&origin) else {
            return Ok(RegistryAuth::Anonymous);
        };
        let scheme = if self.access.is_insecure(&r.registry) {
            "http"
        } else {
            "https"
        };
        let http = reqwest::Client::builder()
            .tls_certs_only(super::tls::reqwest_roots(roots).map_err(RegistryError::Config)?)
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(30))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| RegistryError::Config(e.to_string()))?;
        let probe = http
            .get(format!("{scheme}://{}/v2/", r.registry))
            .send()
            .await
            .map_err(|e| RegistryError::unreachable(r.to_string(), chain(&e)))?;
        let challenge = probe
            .headers()
            .get(reqwest::header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let Some(bearer) = challenge.as_deref().and_then(parse_bearer) else {
            // No challenge, or Basic: the credential goes to this registry only.
            return Ok(RegistryAuth::Basic(user.to_string(), secret.to_string()));
        };
        let realm =
            reqwest::Url::parse(&bearer.realm).map_err(|_| RegistryError::ForeignRealm {
                registry: r.registry.clone(),
                realm: bearer.realm.clone(),
            })?;
        if !same_origin(&realm, scheme, &r.registry) {
            return Err(RegistryError::ForeignRealm {
                registry: r.registry.clone(),
                realm: bearer.realm.clone(),
            });
        }
        let scope = match operation {
            RegistryOperation::Pull => format!("repository:{}:pull", r.repository),
            RegistryOperation::Push => format!("repository:{}:pull,push", r.repository),
        };
        let mut query = vec![("scope", scope)];
        if let Some(service) = bearer.service {
            query.push(("service", service));
        }
        let url = reqwest::Url::parse_with_params(realm.as_str(), &query)
            .map_err(|e| RegistryError::Config(e.to_string()))?;
        let answer = http
            .get(url)
            .basic_auth(user, Some(secret))
            .send()
            .await
            .map_err(|e| RegistryError::unreachable(r.to_string(), chain(&e)))?;
        if !answer.status().is_success() {
            return Err(RegistryError::Unauthorized {
                reference: r.to_string(),
                detail: format!("its token service answered {}", answer.status()),
            });
        }
        #[derive(serde::Deserialize)]
        struct Token {
            token: Option<String>,
            access_token: Option<String>,
        }
        let body = answer
            .bytes()
            .await
            .map_err(|e| RegistryError::unreachable(r.to_string(), chain(&e)))?;
        let token: Token = serde_json::from_slice(&body[..body.len().min(MAX_SMALL_BYTES)])
            .map_err(|_| {
                RegistryError::bad(r, "its token service did not answer a token".to_string())
            })?;
        token
            .token
            .or(token.access_token)
            .map(RegistryAuth::Bearer)
            .ok_or_else(|| {
                RegistryError::bad(r, "its token service did not answer a token".to_string())
            })
    }
}

/// A `Bearer realm="…",service="…"` challenge.
#[derive(Debug, PartialEq, Eq)]
struct Bearer {
    realm: String,
    service: Option<String>,
}

fn parse_bearer(header: &str) -> Option<Bearer> {
    let rest = header.trim();
    let rest = rest
        .get(..7)
        .filter(|p| p.eq_ignore_ascii_case("bearer "))
        .map(|_| &rest[7..])?;
    let mut realm = None;
    let mut service = None;
    let mut s = rest.trim();
    while !s.is_empty() {
        let (key, after) = s.split_once('=')?;
        let key = key.trim().to_ascii_lowercase();
        let after = after.trim_start();
        let (value, next) = if let Some(quoted) = after.strip_prefix('"') {
            let end = quoted.find('"')?;
            (&quoted[..end], &quoted[end + 1..])
        } else {
            let end = after.find(',').unwrap_or(after.len());
            (&after[..end], &after[end..])
        };
        match key.as_str() {
            "realm" => realm = Some(value.to_string()),
            "service" => service = Some(value.to_string()),
            _ => {}
        }
        s = next.trim_start().trim_start_matches(',').trim_start();
    }
    Some(Bearer {
        realm: realm?,
        service,
    })
}

/// Whether `url` is on `registry` (`host[:port]`) with `scheme`.
fn same_origin(url: &reqwest::Url, scheme: &str, registry: &str) -> bool {
    let default = if scheme == "https" { 443 } else { 80 };
    let (host, port) = match registry.rsplit_once(':') {
        Some((h, p)) => (h, p.parse().unwrap_or(0)),
        None => (registry, default),
    };
    url.scheme() == scheme
        && url.host_str().is_some_and(|h| h.eq_ignore_ascii_case(host))
        && url.port_or_known_default() == Some(port)
}

fn is_not_found(e: &oci_client::errors::OciDistributionError) -> bool {
    use oci_client::errors::OciDistributionError as E;
    match e {
        E::ImageManifestNotFoundError(_) => true,
        E::RegistryError { envelope, .. } => envelope.errors.iter().any(|x| {
            matches!(
                x.code,
                oci_client::errors::OciErrorCode::ManifestUnknown
                    | oci_client::errors::OciErrorCode::NotFound
            )
        }),
        E::ServerError { code, .. } => *code == 404,
        _ => e.to_string().contains("404"),
    }
}

/// An error and its causes, on one line.
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

/// A writer that refuses more than `cap` bytes.
struct Capped {
    buf: Vec<u8>,
    cap: usize,
}

impl Capped {
    fn new(cap: usize) -> Capped {
        Capped {
            buf: Vec::with_capacity(cap.min(64 << 20)),
            cap,
        }
    }

    fn into_inner(self) -> Vec<u8> {
        self.buf
    }
}

impl tokio::io::AsyncWrite for Capped {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        data: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        if self.buf.len() + data.len() > self.cap {
            return std::task::Poll::Ready(Err(std::io::Error::other(format!(
                "the registry sent more than the {} bytes its manifest announced",
                self.cap
            ))));
        }
        self.buf.extend_from_slice(data);
        std::task::Poll::Ready(Ok(data.len()))
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_challenges_parse() {
        assert_eq!(
            parse_bearer(
                r#"Bearer realm="https://ghcr.io/token",service="ghcr.io",scope="repository:a:pull""#
            ),
            Some(Bearer {
                realm: "https://ghcr.io/token".into(),
                service: Some("ghcr.io".into())
            })
        );
        assert_eq!(parse_bearer(r#"Basic realm="Registry Realm""#), None);
        assert_eq!(parse_bearer("Bearer service=x"), None);
    }

    #[test]
    fn a_realm_must_be_the_registry_itself() {
        let u = |s: &str| reqwest::Url::parse(s).unwrap();
        assert!(same_origin(&u("https://ghcr.io/token"), "https", "ghcr.io"));
        assert!(same_origin(
            &u("https://ghcr.io:443/token"),
            "https",
            "ghcr.io"
        ));
        assert!(same_origin(
            &u("http://127.0.0.1:5000/auth"),
            "http",
            "127.0.0.1:5000"
        ));
        assert!(!same_origin(
            &u("https://auth.evil.example/token"),
            "https",
            "ghcr.io"
        ));
        assert!(!same_origin(&u("http://ghcr.io/token"), "https", "ghcr.io"));
        assert!(!same_origin(
            &u("https://ghcr.io:8443/token"),
            "https",
            "ghcr.io"
        ));
    }
}
