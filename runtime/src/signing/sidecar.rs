//! Where a signature travels with its component: beside a file as
//! `FILE.minisig` (minisign's own convention, so `minisign -V -m FILE`
//! finds it), which for a bundle is `step.wasm.minisig` inside the bundle,
//! and for a pulled component the same beside its cached file. (In a
//! registry it is a manifest under the tag `sha256-<hex>.sig`; see
//! `crate::registry`.)

use super::signature::Signature;
use super::SigningError;
use std::path::{Path, PathBuf};

/// The suffix of a signature file.
pub const SUFFIX: &str = ".minisig";

/// The signature file of `file`.
pub fn path_of(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(SUFFIX);
    PathBuf::from(name)
}

/// The signature beside `file`: `None` when there is none; an error when
/// one is there but unreadable or malformed.
pub fn read(file: &Path) -> Result<Option<Signature>, SigningError> {
    let path = path_of(file);
    match std::fs::read_to_string(&path) {
        Ok(text) => Signature::parse(&text, &path.display().to_string()).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(SigningError::Io {
            path: path.display().to_string(),
            source,
        }),
    }
}

/// Write `sig` beside `file` (atomically); returns the signature's path.
pub fn write(file: &Path, sig: &Signature) -> Result<PathBuf, SigningError> {
    let path = path_of(file);
    crate::state::write_atomic(&path, sig.text().as_bytes()).map_err(|source| {
        SigningError::Io {
            path: path.display().to_string(),
            source,
        }
    })?;
    Ok(path)
}

/// How the signature beside `file` (of blake3 `digest`) reads under the
/// policy's `signers`, in one line for a person or a report: unsigned,
/// unreadable, signed by a trusted signer, by a key the policy does not
/// list, or invalid.
pub fn describe(
    file: &Path,
    digest: &str,
    signers: &crate::kernel::policy::SignersPolicy,
) -> String {
    use super::Verdict;
    let sig = match read(file) {
        Ok(Some(s)) => s,
        Ok(None) => return "unsigned".into(),
        Err(e) => return format!("unreadable ({e})"),
    };
    let keys = super::trusted_keys(signers);
    match super::signature::verify_digest(digest, || std::fs::read(file), &sig, &keys) {
        Verdict::Trusted(s) => format!("signed by {s}, a trusted signer"),
        Verdict::UnknownKey(s) if keys.is_empty() => {
            format!("signed by {s} (not checked: the policy lists no [signers] keys)")
        }
        Verdict::UnknownKey(s) => {
            format!("signed by {s}, which is not among the policy's [signers] keys")
        }
        Verdict::Invalid { signer, reason } => format!("INVALID signature by {signer}: {reason}"),
    }
}
