//! The roots registry connections trust: the Mozilla roots of
//! `webpki-root-certs` (compiled in, the same set `webpki-roots` gives the
//! broker), plus the PEM bundle the policy's `registry_ca_file` names —
//! never the machine's certificate store, so a run trusts the same CAs on
//! every host and only the operator can add one. Verification is always
//! on; `http://` is used only for the policy's `insecure_registries`.

use std::path::Path;

/// The certificates to trust, or why the CA file cannot be used.
pub fn roots(ca_file: Option<&Path>) -> Result<Vec<oci_client::client::Certificate>, String> {
    use oci_client::client::{Certificate, CertificateEncoding};
    let mut out: Vec<Certificate> = webpki_root_certs::TLS_SERVER_ROOT_CERTS
        .iter()
        .map(|c| Certificate {
            encoding: CertificateEncoding::Der,
            data: c.as_ref().to_vec(),
        })
        .collect();
    if let Some(path) = ca_file {
        let pem = std::fs::read(path)
            .map_err(|e| format!("cannot read the registry CA file {}: {e}", path.display()))?;
        // Parsed here so a bad file is named before any connection.
        let parsed = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| {
            format!(
                "the registry CA file {} is not a PEM bundle: {e}",
                path.display()
            )
        })?;
        if parsed.is_empty() {
            return Err(format!(
                "the registry CA file {} holds no certificate",
                path.display()
            ));
        }
        out.push(Certificate {
            encoding: CertificateEncoding::Pem,
            data: pem,
        });
    }
    Ok(out)
}

/// The same roots for a `reqwest` client (the token request).
pub fn reqwest_roots(
    roots: &[oci_client::client::Certificate],
) -> Result<Vec<reqwest::Certificate>, String> {
    use oci_client::client::CertificateEncoding;
    let mut out = Vec::with_capacity(roots.len());
    for c in roots {
        match c.encoding {
            CertificateEncoding::Der => {
                out.push(reqwest::Certificate::from_der(&c.data).map_err(|e| e.to_string())?)
            }
            CertificateEncoding::Pem => out
                .extend(reqwest::Certificate::from_pem_bundle(&c.data).map_err(|e| e.to_string())?),
        }
    }
    Ok(out)
}

/// Make ring the process's rustls provider (reqwest is built without one).
pub fn install_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_roots_and_a_bad_ca_file_is_named() {
        let r = roots(None).unwrap();
        assert!(r.len() > 100);
        assert!(reqwest_roots(&r).is_ok());
        let tmp = tempfile::tempdir().unwrap();
        let bad = tmp.path().join("ca.pem");
        std::fs::write(&bad, "not pem").unwrap();
        let e = roots(Some(&bad)).unwrap_err();
        assert!(e.contains("ca.pem"), "{e}");
        let e = roots(Some(&tmp.path().join("missing.pem"))).unwrap_err();
        assert!(e.contains("missing.pem"), "{e}");
    }
}
