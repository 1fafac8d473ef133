//! Key pairs in minisign's formats. `lobster keys new NAME` writes
//! `NAME.key` (the secret key, unencrypted so CI can sign without a
//! prompt; mode 0600, never overwritten) and `NAME.pub`:
//!
//! ```text
//! untrusted comment: minisign public key 1A2B3C4D5E6F7081 (lobster signer NAME)
//! RWSBcG9+…                                   <- the key line a policy lists
//! ```
//!
//! The key id is minisign's: 8 random bytes, printed as the upper-case hex
//! of their little-endian value without leading zeros (minisign's
//! `%" PRIX64 "`), so an id can be 15 digits or fewer.

use super::SigningError;
use std::path::{Path, PathBuf};

/// A key id as minisign prints it (upper-case hex, no leading zeros).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyId(pub [u8; 8]);

impl KeyId {
    /// The id of minisign's `keynum` bytes.
    pub fn from_keynum(keynum: &[u8]) -> KeyId {
        let mut id = [0u8; 8];
        id.copy_from_slice(&keynum[..8.min(keynum.len())]);
        KeyId(id)
    }
}

impl std::fmt::Display for KeyId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:X}", u64::from_le_bytes(self.0))
    }
}

/// A public key: what verifies a signature.
#[derive(Clone)]
pub struct PublicKey {
    pub(crate) inner: minisign::PublicKey,
    line: String,
    /// The signer's name from a `.pub` file's comment, when read from one.
    pub name: Option<String>,
}

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PublicKey({})", self.id())
    }
}

impl Eq for PublicKey {}

impl PartialEq for PublicKey {
    fn eq(&self, other: &Self) -> bool {
        self.line == other.line
    }
}

impl PublicKey {
    /// The key line (base64, as on a `.pub` file's second line); `what`
    /// names where it came from in errors.
    pub fn from_line(line: &str, what: &str) -> Result<PublicKey, SigningError> {
        let line = line.trim();
        let inner =
            minisign::PublicKey::from_base64(line).map_err(|e| SigningError::Malformed {
                what: what.to_string(),
                kind: "public key",
                detail: e.to_string(),
            })?;
        Ok(PublicKey {
            inner,
            line: line.to_string(),
            name: None,
        })
    }

    /// The text of a `.pub` file (comment line, key line).
    pub fn from_pub_text(text: &str, what: &str) -> Result<PublicKey, SigningError> {
        let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
        let first = lines.next().unwrap_or_default();
        let (comment, line) = match first.strip_prefix("untrusted comment:") {
            Some(comment) => (Some(comment), lines.next().unwrap_or_default()),
            None => (None, first),
        };
        let mut key = PublicKey::from_line(line, what)?;
        key.name = comment.and_then(name_in_comment);
        Ok(key)
    }

    /// Read a `.pub` file.
    pub fn read(path: &Path) -> Result<PublicKey, SigningError> {
        let text = std::fs::read_to_string(path).map_err(|source| SigningError::Io {
            path: path.display().to_string(),
            source,
        })?;
        PublicKey::from_pub_text(&text, &path.display().to_string())
    }

    /// The key id.
    pub fn id(&self) -> KeyId {
        KeyId::from_keynum(self.inner.keynum())
    }

    /// The key line (what a policy's `[signers] keys` lists).
    pub fn line(&self) -> &str {
        &self.line
    }

    /// The `.pub` file's text for a key called `name`.
    pub fn pub_text(&self, name: &str) -> String {
        format!(
            "untrusted comment: minisign public key {} (lobster signer {name})\n{}\n",
            self.id(),
            self.line
        )
    }
}

/// The name in a comment written by [`PublicKey::pub_text`] or
/// [`SecretKey::key_text`]: `… (lobster signer NAME)`.
fn name_in_comment(comment: &str) -> Option<String> {
    let rest = comment.split("(lobster signer ").nth(1)?;
    let end = rest.find([')', ';']).unwrap_or(rest.len());
    let name = rest[..end].trim();
    valid_name(name).then(|| name.to_string())
}

/// Whether `name` can name `NAME.key` and `NAME.pub`.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// A secret key: what signs. Its `Debug` shows only the id.
pub struct SecretKey {
    pub(crate) inner: minisign::SecretKey,
    pub(crate) public: PublicKey,
    /// The signer's name (from the key file's comment, else its file stem).
    pub name: String,
}

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SecretKey({} {})", self.name, self.public.id())
    }
}

impl SecretKey {
    /// A new random key pair for signer `name`.
    pub fn generate(name: &str) -> Result<SecretKey, SigningError> {
        if !valid_name(name) {
            return Err(SigningError::BadName(name.to_string()));
        }
        let pair = minisign::KeyPair::generate_unencrypted_keypair()
            .map_err(|e| SigningError::Sign(e.to_string()))?;
        let line = pair.pk.to_base64();
        Ok(SecretKey {
            inner: pair.sk,
            public: PublicKey {
                inner: pair.pk,
                line,
                name: Some(name.to_string()),
            },
            name: name.to_string(),
        })
    }

    /// The public half.
    pub fn public(&self) -> &PublicKey {
        &self.public
    }

    /// The `.key` file's text (minisign's unencrypted secret key box).
    pub fn key_text(&self) -> Result<String, SigningError> {
        let comment = format!(
            "minisign secret key {} (lobster signer {}; unencrypted: keep it 0600 or in a CI secret)",
            self.public.id(),
            self.name
        );
        self.inner
            .to_box(Some(&comment))
            .map(|b| b.into_string())
            .map_err(|e| SigningError::Sign(e.to_string()))
    }

    /// Parse a `.key` file's text; `what` names it in errors. An encrypted
    /// key (minisign -G without -W) is refused: signing must not prompt.
    pub fn from_key_text(text: &str, what: &str) -> Result<SecretKey, SigningError> {
        let bad = |detail: String| SigningError::Malformed {
            what: what.to_string(),
            kind: "secret key",
            detail,
        };
        let boxed = minisign::SecretKeyBox::from_string(text).map_err(|e| bad(e.to_string()))?;
        let inner = boxed.into_unencrypted_secret_key().map_err(|e| {
            bad(format!(
                "{e} (lobster signs with unencrypted keys: `lobster keys new NAME`, or `minisign -G -W`)"
            ))
        })?;
        let pk = minisign::PublicKey::from_secret_key(&inner).map_err(|e| bad(e.to_string()))?;
        let comment = text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("untrusted comment:"))
            .and_then(name_in_comment);
        let name = comment.unwrap_or_else(|| {
            Path::new(what)
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "key".into())
        });
        let line = pk.to_base64();
        Ok(SecretKey {
            inner,
            public: PublicKey {
                inner: pk,
                line,
                name: Some(name.clone()),
            },
            name,
        })
    }

    /// Read a `.key` file.
    pub fn read(path: &Path) -> Result<SecretKey, SigningError> {
        let text = std::fs::read_to_string(path).map_err(|source| SigningError::Io {
            path: path.display().to_string(),
            source,
        })?;
        SecretKey::from_key_text(&text, &path.display().to_string())
    }
}

/// Write a new key pair `dir/NAME.key` (0600, created exclusively) and
/// `dir/NAME.pub`; returns both paths and the key.
pub fn write_new_pair(
    dir: &Path,
    name: &str,
) -> Result<(PathBuf, PathBuf, SecretKey), SigningError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let key = SecretKey::generate(name)?;
    let key_path = dir.join(format!("{name}.key"));
    let pub_path = dir.join(format!("{name}.pub"));
    for p in [&key_path, &pub_path] {
        if p.exists() {
            return Err(SigningError::Exists(p.display().to_string()));
        }
    }
    let io = |path: &Path| {
        let path = path.display().to_string();
        move |source| SigningError::Io { path, source }
    };
    let text = key.key_text()?;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&key_path)
        .map_err(io(&key_path))?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(io(&key_path))?;
    crate::state::write_atomic(&pub_path, key.public.pub_text(name).as_bytes())
        .map_err(io(&pub_path))?;
    Ok((key_path, pub_path, key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_ids_print_as_minisign_prints_them() {
        // minisign's comment for keynum 99 45 9C 18 05 8B 35 0F is
        // `F358B05189C4599`: little-endian, no leading zero.
        let id = KeyId([0x99, 0x45, 0x9C, 0x18, 0x05, 0x8B, 0x35, 0x0F]);
        assert_eq!(id.to_string(), "F358B05189C4599");
        assert_eq!(KeyId([0xFF; 8]).to_string(), "FFFFFFFFFFFFFFFF");
        assert_eq!(KeyId([0; 8]).to_string(), "0");
    }

    #[test]
    fn key_files_round_trip_with_name_and_id() {
        let key = SecretKey::generate("release").unwrap();
        let text = key.key_text().unwrap();
        let again = SecretKey::from_key_text(&text, "x.key").unwrap();
        assert_eq!(again.name, "release");
        assert_eq!(again.public().id(), key.public().id());
        let pub_text = key.public().pub_text("release");
        let public = PublicKey::from_pub_text(&pub_text, "x.pub").unwrap();
        assert_eq!(public.name.as_deref(), Some("release"));
        assert_eq!(public, *key.public());
        // Upper-case hex without leading zeros, as minisign prints it.
        let id = public.id().to_string();
        assert!((1..=16).contains(&id.len()), "{id}");
        assert!(!id.starts_with('0') || id == "0", "{id}");
        assert!(
            id.chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_lowercase()),
            "{id}"
        );
        assert!(format!("{key:?}").contains(&public.id().to_string()));
        assert!(!format!("{key:?}").contains(public.line()));
    }

    #[test]
    fn bad_keys_and_names_are_named() {
        let e = PublicKey::from_line("not a key", "policy [signers] keys[0]").unwrap_err();
        assert!(e.to_string().contains("policy [signers] keys[0]"), "{e}");
        assert!(SecretKey::generate("../x").is_err());
        assert!(SecretKey::from_key_text("untrusted comment: x\nAAAA\n", "k.key").is_err());
    }

    #[test]
    fn new_pairs_are_private_and_never_overwritten() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let (key_path, pub_path, _) = write_new_pair(tmp.path(), "ci").unwrap();
        let mode = std::fs::metadata(&key_path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert!(PublicKey::read(&pub_path).is_ok());
        let e = write_new_pair(tmp.path(), "ci").unwrap_err();
        assert!(e.to_string().contains("refusing to overwrite"), "{e}");
    }
}
