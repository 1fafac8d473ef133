//! `lobster keys new NAME [--dir DIR]`: a signing key pair (see
//! `crate::signing`).

use super::output::finish_text;
use super::trust_args;
use crate::error::Error;
use std::path::PathBuf;

/// `lobster help keys`.
pub const KEYS_HELP: &str = "lobster keys — signing keys for steps

Usage:
  lobster keys new NAME [--dir DIR]

Writes DIR/NAME.key (the secret key, mode 0600, unencrypted so CI can sign
without a prompt: keep it out of version control, e.g. in a CI secret) and
DIR/NAME.pub (the public key; its comment names the signer NAME). Both are
minisign's formats: `minisign -V -p NAME.pub -m FILE` verifies what
`lobster step sign --key NAME.key FILE` signs. Existing files are never
overwritten. Prints the key id and the policy lines that trust the key:

  [signers]
  keys = [\"<the second line of NAME.pub>\"]
  require_signed = true
";

/// Run `lobster keys …`; returns the exit code.
pub fn keys(argv: &[String]) -> i32 {
    let result = trust_args::parse("keys", argv, &["--dir"]).and_then(|args| {
        if args.help || args.words.is_empty() {
            return Ok(KEYS_HELP.to_string());
        }
        match args.words.as_slice() {
            [new, name] if new == "new" => {
                let dir = PathBuf::from(args.dir.as_deref().unwrap_or("."));
                let (key, public, secret) = crate::signing::key::write_new_pair(&dir, name)
                    .map_err(|e| Error::parse(e.to_string()))?;
                let id = secret.public().id();
                Ok(format!(
                    "wrote {} (secret, mode 0600: keep it out of version control) and {}\nsigner {name}, key id {id}\ntrust it in a policy:\n\n[signers]\nkeys = [\"{}\"]\nrequire_signed = true\n",
                    key.display(),
                    public.display(),
                    secret.public().line()
                ))
            }
            [new] if new == "new" => Err(Error::parse(
                "lobster keys new needs the key's NAME (the signer it names)",
            )
            .with_hint("lobster keys new NAME [--dir DIR], e.g. `lobster keys new release`")),
            _ => Err(Error::parse(format!(
                "lobster keys: expected `new NAME`, got {:?}",
                args.words.join(" ")
            ))
            .with_hint("`lobster help keys`")),
        }
    });
    finish_text(result)
}
