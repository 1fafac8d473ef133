//! TLS for brokered `https://` calls: rustls (the `ring` provider, TLS 1.2
//! and 1.3), always verifying the server's certificate and host name.
//!
//! Trust roots are closed and reproducible: the Mozilla roots compiled into
//! `webpki-roots` (never the machine's store, which differs between hosts),
//! plus the PEM bundle the operator names in the policy (`[gateway] ca_file`)
//! for gateways and model endpoints behind a private CA. There is no switch
//! that turns verification off: a dev endpoint with a self-signed
//! certificate is trusted by adding its CA to `ca_file`.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use std::path::Path;
use std::sync::{Arc, OnceLock};

/// Why a TLS client configuration could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TlsConfigError {
    /// The operator's CA file is unreadable or holds no usable certificate.
    #[error("cannot use the policy's [gateway] ca_file {path}: {reason} (it must be a PEM file of CA certificates)")]
    CaFile {
        /// The file.
        path: String,
        /// What went wrong.
        reason: String,
    },
}

/// The client configuration: the built-in roots, plus the certificates of
/// `ca_file` when given.
pub fn client_config(ca_file: Option<&Path>) -> Result<Arc<ClientConfig>, TlsConfigError> {
    static BUILT_IN: OnceLock<Arc<ClientConfig>> = OnceLock::new();
    let Some(path) = ca_file else {
        return Ok(BUILT_IN.get_or_init(|| build(built_in_roots())).clone());
    };
    let fail = |reason: String| TlsConfigError::CaFile {
        path: path.display().to_string(),
        reason,
    };
    let mut roots = built_in_roots();
    let certs = CertificateDer::pem_file_iter(path).map_err(|e| fail(e.to_string()))?;
    let mut added = 0;
    for cert in certs {
        let cert = cert.map_err(|e| fail(e.to_string()))?;
        roots
            .add(cert)
            .map_err(|e| fail(format!("a certificate is not a usable CA: {e}")))?;
        added += 1;
    }
    if added == 0 {
        return Err(fail("no CERTIFICATE block found".into()));
    }
    Ok(build(roots))
}

fn built_in_roots() -> RootCertStore {
    RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    }
}

fn build(roots: RootCertStore) -> Arc<ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("the ring provider supports the default protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    Arc::new(config)
}

/// The name the certificate must be valid for (an IP address or a DNS
/// name; SNI is sent for DNS names).
pub fn server_name(host: &str) -> Option<ServerName<'static>> {
    ServerName::try_from(host).ok().map(|n| n.to_owned())
}

/// A handshake or record error in words, with the fix where there is one.
pub fn explain(url: &str, e: &rustls::Error) -> String {
    use rustls::{CertificateError, Error};
    let why = match e {
        Error::InvalidCertificate(CertificateError::UnknownIssuer)
        | Error::InvalidCertificate(CertificateError::BadSignature) => {
            "its certificate is not signed by a trusted CA; if the endpoint uses a private or self-signed CA, the operator adds that CA's PEM to the policy's [gateway] ca_file".to_string()
        }
        Error::InvalidCertificate(CertificateError::NotValidForName)
        | Error::InvalidCertificate(CertificateError::NotValidForNameContext { .. }) => {
            "its certificate is not valid for this host name; use the name the certificate was issued for".to_string()
        }
        Error::InvalidCertificate(CertificateError::Expired)
        | Error::InvalidCertificate(CertificateError::ExpiredContext { .. }) => {
            "its certificate has expired".to_string()
        }
        Error::InvalidMessage(_) => {
            "the server did not answer in TLS (is it plain http on this port? then use an http:// URL)".to_string()
        }
        other => other.to_string(),
    };
    format!("TLS with {url} failed: {why}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_roots_load_and_a_bad_ca_file_is_named() {
        assert!(client_config(None).is_ok());
        let dir = std::env::temp_dir().join(format!("lobster-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = dir.join("missing.pem");
        let e = client_config(Some(&missing)).unwrap_err().to_string();
        assert!(
            e.contains("missing.pem") && e.contains("[gateway] ca_file"),
            "{e}"
        );
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "not a pem\n").unwrap();
        let e = client_config(Some(&empty)).unwrap_err().to_string();
        assert!(e.contains("no CERTIFICATE block"), "{e}");
        std::fs::remove_dir_all(&dir).ok();
        assert!(server_name("127.0.0.1").is_some());
        assert!(server_name("::1").is_some());
        assert!(server_name("api.example.com").is_some());
    }
}
