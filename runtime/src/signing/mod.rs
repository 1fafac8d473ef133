//! Step signatures in minisign's format (ed25519, prehashed with
//! blake2b-512), so that `minisign -V -p NAME.pub -m step.wasm` verifies
//! what `lobster step sign` wrote, with a tool nobody here wrote.
//!
//! - [`key`]: key pairs (`lobster keys new NAME` → `NAME.key`, mode 0600,
//!   unencrypted; `NAME.pub`, whose comment carries the signer's name), and
//!   the key lines a policy's `[signers] keys` lists.
//! - [`signature`]: signing bytes, reading `.minisig` text, verifying it
//!   against a set of keys ([`Verdict`]), with a per-process memo so a
//!   long-running process does not re-hash a component it already checked.
//! - [`sidecar`]: where a signature travels beside a file (`FILE.minisig`;
//!   in a bundle, `step.wasm.minisig`).
//!
//! Why minisign rather than a Sigstore bundle: Sigstore's keyless flow needs
//! Fulcio and Rekor on the internet; with a key it is a much larger format
//! for the same ed25519 check. Minisign's is four lines, verified by a
//! packaged tool (Debian `minisign`), and its signed "trusted comment"
//! carries the signer's name.

#![deny(missing_docs)]

pub mod key;
pub mod sidecar;
pub mod signature;

pub use key::{KeyId, PublicKey, SecretKey};
pub use signature::{sign, verify, Signature, Signer, Verdict};

/// The keys a policy's `[signers]` trusts (its lines were validated when the
/// policy was read, so none is dropped here in practice).
pub fn trusted_keys(signers: &crate::kernel::policy::SignersPolicy) -> Vec<PublicKey> {
    signers
        .keys
        .iter()
        .filter_map(|line| PublicKey::from_line(line, "[signers] keys").ok())
        .collect()
}

/// Why a key or a signature cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SigningError {
    /// Text that is not a minisign key or signature.
    #[error("{what} is not a minisign {kind}: {detail}")]
    Malformed {
        /// Where the text came from (a file, a policy entry).
        what: String,
        /// `public key`, `secret key` or `signature`.
        kind: &'static str,
        /// The parser's reason.
        detail: String,
    },
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A key name that cannot be a file name.
    #[error(
        "key name {0:?} must be letters, digits, '.', '_' or '-' (it names NAME.key and NAME.pub)"
    )]
    BadName(String),
    /// `keys new` would overwrite a key.
    #[error("{0} exists; refusing to overwrite a key (choose another NAME or remove it)")]
    Exists(String),
    /// The signing operation failed.
    #[error("cannot sign: {0}")]
    Sign(String),
}
