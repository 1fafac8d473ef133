//! Steps shipped through OCI registries, the way the WebAssembly tools
//! ship components (`wkg oci push/pull`, Spin, wasmCloud).
//!
//! - [`reference`]: a step's address, `oci://HOST[:PORT]/REPO:TAG[@sha256:DIGEST]`.
//! - [`layout`]: the wasm OCI artifact (config + one `application/wasm`
//!   layer; a bundle's manifest as an annotation) and signature manifests
//!   under the tag `sha256-<hex>.sig`.
//! - [`credential`]: the operator's credentials, each bound to its registry.
//! - [`tls`]: the roots registry connections trust.
//! - [`client`]: push, pull, resolve, signatures (`oci-client`).
//! - [`cache`]: pulled components by digest under `<state>/cache/oci`.
//! - [`fetch`]: a reference (and its lock pin) → a verified cached file.
//! - [`ship`]: publish, pull into a file or bundle, sign in a registry.
//!
//! - [`admission`]: the run's [`crate::sandbox::Admission`]: `oci://` names
//!   fetched, every component's signature verified, both judged by the
//!   run's authority before anything is compiled.
//!
//! Nothing here decides whether a run may use a registry or a signer: the
//! run's authority does (`policy::Authority`, `Request::Registry` and
//! `Request::Signed`).

#![deny(missing_docs)]

pub mod admission;
pub mod cache;
pub mod client;
pub mod credential;
pub mod fetch;
pub mod layout;
pub mod reference;
pub mod ship;
pub mod tls;

pub use admission::Admitter;
pub use cache::{Cache, Entry};
pub use client::{Access, Client, Pulled};
pub use credential::{Credentials, RegistryCredential};
pub use fetch::{Fetched, Fetcher, Pin};
pub use reference::{is_reference, Reference, ReferenceError};

impl RegistryError {
    /// No connection to the registry of `reference`. A plain-http registry
    /// answering lobster's https (the default) gets the fix named: the
    /// operator lists it in the policy's `insecure_registries`.
    pub fn unreachable(reference: String, detail: String) -> RegistryError {
        let plain_http = [
            "InvalidContentType",
            "wrong version number",
            "http request to an https",
        ]
        .iter()
        .any(|m| detail.contains(m));
        let detail = if plain_http {
            format!("{detail} (it does not speak https: a plain-http registry on a trusted network must be listed in the policy's insecure_registries)")
        } else {
            detail
        };
        RegistryError::Unreachable { reference, detail }
    }
}

/// Everything that can go wrong with a registry; each message names the
/// reference and, where there is one, the fix.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// A reference that does not parse.
    #[error(transparent)]
    Reference(#[from] ReferenceError),
    /// The operator's set-up (CA file, credentials) cannot be used.
    #[error("{0}")]
    Config(String),
    /// No connection.
    #[error("cannot reach the registry of {reference}: {detail}")]
    Unreachable {
        /// The reference.
        reference: String,
        /// The cause.
        detail: String,
    },
    /// The registry refused the credentials (or wants some).
    #[error("the registry of {reference} refused access: {detail} (credentials come from LOBSTER_REGISTRY_AUTH=host=user:token or docker's config.json)")]
    Unauthorized {
        /// The reference.
        reference: String,
        /// What it said.
        detail: String,
    },
    /// The registry wants credentials sent to another origin.
    #[error("registry {registry} asks for its credentials at {realm}, which is not {registry} itself; lobster sends a registry's credentials only to that registry")]
    ForeignRealm {
        /// The registry.
        registry: String,
        /// The token realm it named.
        realm: String,
    },
    /// Nothing under that name.
    #[error("{0} is not in its registry")]
    NotFound(String),
    /// Bytes that do not match their digest.
    #[error("{reference}: the {what} does not match its digest (expected {expected}, got {got}): the registry's copy was altered")]
    Digest {
        /// The reference.
        reference: String,
        /// `manifest` or `component`.
        what: String,
        /// What it should be.
        expected: String,
        /// What it is.
        got: String,
    },
    /// Something that is not a step artifact.
    #[error("{reference}: {detail}")]
    BadArtifact {
        /// The reference.
        reference: String,
        /// What is wrong.
        detail: String,
    },
    /// A tag-only reference that nothing pins.
    #[error("{0} names no digest and lobster.lock does not pin it")]
    Unpinned(String),
    /// A reference whose digest is not the one the lock pins.
    #[error("{reference} names {named}, but lobster.lock pins {pinned}")]
    PinConflict {
        /// The reference.
        reference: String,
        /// Its digest.
        named: String,
        /// The lock's.
        pinned: String,
    },
    /// The local cache could not be read or written.
    #[error("the registry cache {path}: {detail}")]
    Cache {
        /// The file.
        path: String,
        /// The cause.
        detail: String,
    },
    /// Past [`client::TIMEOUT`].
    #[error("{0}: the registry did not answer in time")]
    Timeout(String),
    /// The run was cancelled meanwhile.
    #[error("{0}: cancelled")]
    Cancelled(String),
}

impl RegistryError {
    pub(crate) fn bad(r: &Reference, detail: String) -> RegistryError {
        RegistryError::BadArtifact {
            reference: r.to_string(),
            detail,
        }
    }

    pub(crate) fn from_oci(
        r: &Reference,
        e: oci_client::errors::OciDistributionError,
    ) -> RegistryError {
        use oci_client::errors::OciDistributionError as E;
        let reference = r.to_string();
        match &e {
            E::UnauthorizedError { .. } | E::AuthenticationFailure(_) => {
                RegistryError::Unauthorized {
                    reference,
                    detail: client::chain(&e),
                }
            }
            E::ImageManifestNotFoundError(_) => RegistryError::NotFound(reference),
            E::ServerError { code: 404, .. } => RegistryError::NotFound(reference),
            E::ServerError {
                code: 401 | 403, ..
            } => RegistryError::Unauthorized {
                reference,
                detail: client::chain(&e),
            },
            E::RegistryError { envelope, .. }
                if envelope.errors.iter().any(|x| {
                    matches!(
                        x.code,
                        oci_client::errors::OciErrorCode::Unauthorized
                            | oci_client::errors::OciErrorCode::Denied
                    )
                }) =>
            {
                RegistryError::Unauthorized {
                    reference,
                    detail: client::chain(&e),
                }
            }
            E::RegistryError { envelope, .. }
                if envelope.errors.iter().any(|x| {
                    matches!(
                        x.code,
                        oci_client::errors::OciErrorCode::ManifestUnknown
                            | oci_client::errors::OciErrorCode::NameUnknown
                            | oci_client::errors::OciErrorCode::BlobUnknown
                    )
                }) =>
            {
                RegistryError::NotFound(reference)
            }
            E::RequestError(_) => RegistryError::unreachable(reference, client::chain(&e)),
            E::DigestError(_) => RegistryError::Digest {
                reference,
                what: "component".into(),
                expected: "the digest its manifest names".into(),
                got: client::chain(&e),
            },
            _ => RegistryError::BadArtifact {
                reference,
                detail: client::chain(&e),
            },
        }
    }
}
