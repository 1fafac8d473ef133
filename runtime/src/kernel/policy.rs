//! The operator policy file.
//!
//! ```toml
//! trust = "untrusted"          # or "trusted" (the default without a policy)
//! roots = ["data", "mail"]     # directories --allow-read/--allow-write may name (and their subdirectories)
//! env = ["LANG", "MAIL_*"]     # variables --allow-env may name (`*` at the end: prefix)
//! [max]
//! fuel = 1000000000
//! memory_bytes = 67108864
//! timeout_ms = 10000
//! output_bytes = 100000
//! [gateway]                    # where brokered tool calls go
//! url = "http://127.0.0.1:18789"
//! token_env = "GATEWAY_TOKEN"  # the variable holding its token (sent only to url's origin)
//! [model]
//! provider = "openai"          # the default provider of llm.invoke and steps
//! [model.openai]               # also [model.openclaw], [model.http], [model.pi]
//! url = "https://api.openai.com/v1"
//! key_env = "OPENAI_API_KEY"   # sent only to url's origin
//! model = "gpt-4o-mini"
//! stream = false
//! ```
//!
//! A trusted policy may also say `fuel = false` (top level): wasm steps are
//! then bounded by the epoch deadline only, without fuel accounting.
//!
//! Registries and signatures (see `registry/`, `signing/`):
//!
//! ```toml
//! registries = ["ghcr.io/acme", "127.0.0.1:5000"]  # the registries (host[:port][/repo prefix]) oci:// names may use
//! insecure_registries = ["127.0.0.1:5000"]         # spoken to over plain http (all others: https)
//! registry_ca_file = "registry-ca.pem"             # extra CAs for https registries (relative to this file)
//! [signers]
//! keys = ["RWQ…"]          # key lines of trusted `.pub` files
//! require_signed = true    # refuse unsigned and unknown-signer components before compiling them
//! ```
//!
//! A missing `roots` or `env` means "no restriction" under `trusted` and
//! "nothing" under `untrusted`. YAML files (`.yaml`/`.yml`) use the same keys.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// How far the operator trusts the pipelines a run is handed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Trust {
    /// The local default (as the reference): host processes may run.
    #[default]
    Trusted,
    /// Host processes are refused; only sandboxed steps and pure built-ins run.
    Untrusted,
}

/// Maximum limits a run may ask for; defaults above them are lowered.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Maxima {
    /// Fuel per wasm step.
    pub fuel: Option<u64>,
    /// Linear memory per wasm step, in bytes.
    pub memory_bytes: Option<u64>,
    /// Whole-run wall clock (`--timeout-ms`).
    pub timeout_ms: Option<u64>,
    /// Output cap (`--max-stdout-bytes`).
    pub output_bytes: Option<u64>,
    /// Brokered tool calls per run (`0`: none).
    pub tool_calls: Option<u64>,
    /// Brokered model calls per run (`0`: none).
    pub llm_calls: Option<u64>,
    /// Model tokens (as the provider reports usage) per run.
    pub llm_tokens: Option<u64>,
}

impl Maxima {
    /// Each limit by its key name (as in policy and `permissions:` files).
    pub fn entries(&self) -> [(&'static str, Option<u64>); 4] {
        [
            ("fuel", self.fuel),
            ("memory_bytes", self.memory_bytes),
            ("timeout_ms", self.timeout_ms),
            ("output_bytes", self.output_bytes),
        ]
    }

    /// Every limit set both here and in `caps` that is above its cap, as
    /// (key, value, cap).
    pub fn above(&self, caps: &Maxima) -> Vec<(&'static str, u64, u64)> {
        self.entries()
            .into_iter()
            .zip(caps.entries())
            .filter_map(|((key, value), (_, cap))| match (value, cap) {
                (Some(v), Some(c)) if v > c => Some((key, v, c)),
                _ => None,
            })
            .collect()
    }
}

/// `[gateway]`: the gateway brokered tool calls go to, set by the operator.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GatewayPolicy {
    /// Base URL (`http://127.0.0.1:18789`).
    pub url: Option<String>,
    /// Name of the environment variable that holds the gateway's token.
    pub token_env: Option<String>,
    /// A PEM bundle of extra CA certificates trusted for every brokered
    /// `https://` call (gateway and model endpoints), besides the built-in
    /// webpki roots; relative to the policy file's directory.
    pub ca_file: Option<String>,
}

/// One model provider's endpoint in `[model.<provider>]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderPolicy {
    /// Base URL (`https://api.openai.com/v1`; the gateway's for `openclaw`,
    /// where it defaults to `[gateway] url`).
    pub url: Option<String>,
    /// Name of the environment variable that holds the key (read when
    /// `lobster` starts; sent only to `url`'s origin).
    pub key_env: Option<String>,
    /// The model asked for when a call names none.
    pub model: Option<String>,
    /// Ask for streamed answers (`openai`).
    pub stream: Option<bool>,
}

/// `[model]`: where brokered model calls go, per provider, set by the
/// operator. A provider named here takes nothing from the environment's
/// `LOBSTER_LLM_*` variables.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPolicy {
    /// The provider used when a call names none (`openclaw`, `http`, `pi`
    /// or `openai`).
    pub provider: Option<String>,
    /// The gateway's `llm-task` tool.
    pub openclaw: Option<ProviderPolicy>,
    /// A generic LLM adapter.
    pub http: Option<ProviderPolicy>,
    /// The Pi adapter.
    pub pi: Option<ProviderPolicy>,
    /// An OpenAI-compatible endpoint.
    pub openai: Option<ProviderPolicy>,
}

/// The providers the broker knows, in the order `[model]` lists them.
pub const PROVIDERS: [&str; 4] = ["openclaw", "http", "pi", "openai"];

impl ModelPolicy {
    /// The table of provider `name`, if configured.
    pub fn provider(&self, name: &str) -> Option<&ProviderPolicy> {
        match name {
            "openclaw" => self.openclaw.as_ref(),
            "http" => self.http.as_ref(),
            "pi" => self.pi.as_ref(),
            "openai" => self.openai.as_ref(),
            _ => None,
        }
    }

    /// Every `key_env` named.
    pub fn key_envs(&self) -> impl Iterator<Item = &str> {
        PROVIDERS
            .iter()
            .filter_map(|p| self.provider(p)?.key_env.as_deref())
    }

    /// Whether any provider is configured.
    pub fn is_empty(&self) -> bool {
        self.provider.is_none() && PROVIDERS.iter().all(|p| self.provider(p).is_none())
    }
}

/// `[signers]`: whose signatures a run trusts, and whether it requires one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SignersPolicy {
    /// Key lines of trusted minisign public keys (a `.pub` file's second line).
    #[serde(default)]
    pub keys: Vec<String>,
    /// Refuse components without a signature by one of `keys`.
    #[serde(default)]
    pub require_signed: bool,
}

impl SignersPolicy {
    /// The minisign key id (16 upper-case hex digits) of each key, in order.
    pub fn key_ids(&self) -> Vec<String> {
        self.keys.iter().filter_map(|k| key_id(k)).collect()
    }
}

/// The key id of a minisign public key line (base64 of `Ed`, 8 bytes of key
/// id, 32 bytes of ed25519 key), or `None` when `line` is not one. The
/// signatures themselves are checked by `crate::signing`.
pub fn key_id(line: &str) -> Option<String> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(line.trim())
        .ok()?;
    if bytes.len() != 42 || &bytes[..2] != b"Ed" {
        return None;
    }
    let mut id = [0u8; 8];
    id.copy_from_slice(&bytes[2..10]);
    Some(format!("{:016X}", u64::from_le_bytes(id)))
}

/// An operator policy. `Policy::default()` is what runs without one: trusted,
/// unrestricted.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// Trusted or untrusted.
    #[serde(default)]
    pub trust: Trust,
    /// Allowed directory roots for grants (relative to the working directory).
    pub roots: Option<Vec<String>>,
    /// Allowed environment variable names (`PREFIX*` allowed).
    pub env: Option<Vec<String>>,
    /// Maximum limits.
    #[serde(default)]
    pub max: Maxima,
    /// Gateway tools brokered calls may name (`None`: any when trusted,
    /// none when untrusted). See [`super::broker`].
    pub tools: Option<Vec<String>>,
    /// Whether brokered model calls are allowed (`None`: yes when trusted,
    /// no when untrusted).
    pub llm: Option<bool>,
    /// The operator's gateway (its URL and the variable holding its token).
    #[serde(default)]
    pub gateway: GatewayPolicy,
    /// The operator's model endpoints (`[model]`, one table per provider).
    #[serde(default)]
    pub model: ModelPolicy,
    /// `fuel = false`: meter wasm steps by the epoch deadline only (no fuel
    /// accounting; an interpreter runs ~1.5x faster). Only a trusted policy
    /// may say so: without fuel a step's CPU is bounded by wall-clock time.
    #[serde(default = "fuel_default")]
    pub fuel: bool,
    /// The registries `oci://` stage names and `uses:` may name
    /// (`host[:port]`, optionally `/repository-prefix`); `None`: any when
    /// trusted, none when untrusted.
    pub registries: Option<Vec<String>>,
    /// Registries reached over plain `http://` (`host[:port]`).
    #[serde(default)]
    pub insecure_registries: Vec<String>,
    /// A PEM bundle of extra CAs for `https://` registries (relative to the
    /// policy file's directory).
    pub registry_ca_file: Option<String>,
    /// Trusted signers and whether a signature is required.
    #[serde(default)]
    pub signers: SignersPolicy,
    /// Where the policy was read from (not part of the file, nor of its
    /// digest).
    #[serde(skip)]
    pub source: Option<PathBuf>,
}

fn fuel_default() -> bool {
    true
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            trust: Trust::default(),
            roots: None,
            env: None,
            max: Maxima::default(),
            tools: None,
            llm: None,
            gateway: GatewayPolicy::default(),
            model: ModelPolicy::default(),
            fuel: true,
            registries: None,
            insecure_registries: Vec::new(),
            registry_ca_file: None,
            signers: SignersPolicy::default(),
            source: None,
        }
    }
}

impl Policy {
    /// blake3 (hex) of the policy's canonical JSON (RFC 8785; every field
    /// but where it was read from): what a run's journal names as the
    /// policy in force.
    ///
    /// Every run's journal names it, and a server runs many under the same
    /// few policies: the last few digests are kept with the policies they
    /// are of (compared whole, so a changed policy is digested again).
    pub fn digest(&self) -> String {
        type Memo = std::sync::Mutex<Vec<(Policy, String)>>;
        static MEMO: Memo = std::sync::Mutex::new(Vec::new());
        const KEPT: usize = 16;
        if let Ok(memo) = MEMO.lock() {
            if let Some((_, d)) = memo.iter().find(|(p, _)| p == self) {
                return d.clone();
            }
        }
        let text = crate::journal::canon::to_canonical_of(self).unwrap_or_else(|_| "null".into());
        let digest = blake3::hash(text.as_bytes()).to_hex().to_string();
        if let Ok(mut memo) = MEMO.lock() {
            if memo.len() >= KEPT {
                memo.remove(0);
            }
            memo.push((self.clone(), digest.clone()));
        }
        digest
    }

    /// Parse policy `text`; YAML when `path` ends in `.yaml`/`.yml`, else TOML.
    /// Errors name the file and, through the parser, the field.
    pub fn parse(text: &str, path: &Path) -> Result<Self> {
        let yaml = path.extension().is_some_and(|e| e == "yaml" || e == "yml");
        let parsed: std::result::Result<Policy, String> = if yaml {
            serde_yaml::from_str(text).map_err(|e| e.to_string())
        } else {
            toml::from_str(text).map_err(|e| e.to_string())
        };
        let mut policy = parsed.map_err(|e| {
            Error::parse(format!(
                "invalid policy file {}: {}",
                path.display(),
                e.trim_end()
            ))
        })?;
        for (field, value) in [
            ("max.fuel", policy.max.fuel),
            ("max.memory_bytes", policy.max.memory_bytes),
            ("max.timeout_ms", policy.max.timeout_ms),
            ("max.output_bytes", policy.max.output_bytes),
        ] {
            if value == Some(0) {
                return Err(Error::parse(format!(
                    "invalid policy file {}: {field} must be greater than 0",
                    path.display()
                )));
            }
        }
        for root in policy.roots.iter().flatten() {
            let p = Path::new(root);
            if p.is_absolute() || p.components().any(|c| c == std::path::Component::ParentDir) {
                return Err(Error::parse(format!(
                    "invalid policy file {}: roots entry {root:?} must be relative to the working directory, without `..`",
                    path.display()
                )));
            }
        }
        if !policy.fuel && policy.trust == Trust::Untrusted {
            return Err(Error::parse(format!(
                "invalid policy file {}: fuel = false needs trust = \"trusted\" (without fuel a step's CPU is bounded only by the deadline)",
                path.display()
            )));
        }
        check_endpoints(&policy).map_err(|msg| {
            Error::parse(format!("invalid policy file {}: {msg}", path.display()))
        })?;
        for (i, line) in policy.signers.keys.iter().enumerate() {
            if key_id(line).is_none() {
                return Err(Error::parse(format!(
                    "invalid policy file {}: [signers] keys[{i}] is not a minisign public key (list the second line of a .pub file written by `lobster keys new NAME`)",
                    path.display()
                )));
            }
        }
        for entry in policy
            .registries
            .iter()
            .flatten()
            .chain(&policy.insecure_registries)
        {
            let host = entry.split('/').next().unwrap_or_default();
            if host.is_empty() || entry.contains("://") || entry.ends_with('/') {
                return Err(Error::parse(format!(
                    "invalid policy file {}: registry {entry:?} must be host[:port] or host[:port]/repository-prefix, without a scheme",
                    path.display()
                )));
            }
        }
        if let Some(bad) = policy.insecure_registries.iter().find(|e| e.contains('/')) {
            return Err(Error::parse(format!(
                "invalid policy file {}: insecure_registries entry {bad:?} must be host[:port]",
                path.display()
            )));
        }
        policy.source = Some(path.to_path_buf());
        Ok(policy)
    }

    /// The `[gateway] ca_file` path, resolved against the policy file's
    /// directory when relative.
    pub fn ca_file(&self) -> Option<PathBuf> {
        let file = Path::new(self.gateway.ca_file.as_deref()?);
        Some(match self.source.as_deref().and_then(Path::parent) {
            Some(dir) if file.is_relative() => dir.join(file),
            _ => file.to_path_buf(),
        })
    }

    /// `registry_ca_file`, resolved against the policy file's directory.
    pub fn registry_ca_file(&self) -> Option<PathBuf> {
        let file = Path::new(self.registry_ca_file.as_deref()?);
        Some(match self.source.as_deref().and_then(Path::parent) {
            Some(dir) if file.is_relative() => dir.join(file),
            _ => file.to_path_buf(),
        })
    }

    /// Whether an `oci://` reference to `repository` in `registry` may be
    /// used: `registries` lists its registry (or a prefix of its
    /// repository); without a list, any when trusted and none when untrusted.
    pub fn allows_registry(&self, registry: &str, repository: &str) -> bool {
        let Some(list) = &self.registries else {
            return self.trust == Trust::Trusted;
        };
        list.iter().any(|entry| {
            let (host, prefix) = match entry.split_once('/') {
                Some((h, p)) => (h, Some(p)),
                None => (entry.as_str(), None),
            };
            host.eq_ignore_ascii_case(registry)
                && prefix
                    .is_none_or(|p| repository == p || repository.starts_with(&format!("{p}/")))
        })
    }

    /// Read the policy at `path`.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::parse(format!("cannot read policy file {}: {e}", path.display()))
        })?;
        Self::parse(&text, path)
    }

    /// `--policy FILE` if given, else `LOBSTER_POLICY`, else the default.
    /// Relative paths are taken relative to `cwd`.
    pub fn from_flag_or_env(flag: Option<&str>, cwd: &Path) -> Result<Self> {
        let env = std::env::var("LOBSTER_POLICY")
            .ok()
            .filter(|v| !v.is_empty());
        match flag.map(str::to_string).or(env) {
            Some(p) => Self::load(&cwd.join(p)),
            None => Ok(Policy::default()),
        }
    }

    /// Whether this is the untrusted policy.
    pub fn untrusted(&self) -> bool {
        self.trust == Trust::Untrusted
    }

    /// The allowed roots; `None` means unrestricted.
    pub fn allowed_roots(&self) -> Option<&[String]> {
        match (&self.roots, self.trust) {
            (Some(r), _) => Some(r),
            (None, Trust::Untrusted) => Some(&[]),
            (None, Trust::Trusted) => None,
        }
    }

    /// Whether `--allow-env name` is allowed.
    pub fn allows_env(&self, name: &str) -> bool {
        let list = match (&self.env, self.trust) {
            (Some(l), _) => l,
            (None, Trust::Untrusted) => return false,
            (None, Trust::Trusted) => return true,
        };
        list.iter().any(|p| match p.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => p == name,
        })
    }
}

/// `[gateway]` and `[model]`: URLs are http(s) URLs, a variable holding a
/// secret comes with the URL it is for, providers are known ones.
fn check_endpoints(policy: &Policy) -> std::result::Result<(), String> {
    use super::credential::Origin;
    let url_ok = |key: &str, url: &Option<String>| match url {
        Some(u) => Origin::parse(u)
            .map(|_| ())
            .map_err(|e| format!("{key}: {e}")),
        None => Ok(()),
    };
    let gw = &policy.gateway;
    url_ok("gateway.url", &gw.url)?;
    if gw.token_env.is_some() && gw.url.is_none() {
        return Err("gateway.token_env needs gateway.url (a token is sent only to the URL it is configured with)".into());
    }
    let m = &policy.model;
    if let Some(p) = &m.provider {
        if !PROVIDERS.contains(&p.as_str()) {
            return Err(format!(
                "model.provider {p:?} is not one of {}",
                PROVIDERS.join(", ")
            ));
        }
    }
    for name in PROVIDERS {
        let Some(p) = m.provider(name) else { continue };
        url_ok(&format!("model.{name}.url"), &p.url)?;
        let has_url = p.url.is_some() || (name == "openclaw" && gw.url.is_some());
        if p.key_env.is_some() && !has_url {
            return Err(format!(
                "model.{name}.key_env needs model.{name}.url (a key is sent only to the URL it is configured with)"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_is_of_the_policy_not_its_spelling_or_place() {
        let t = Policy::parse(
            "env = [\"A_*\"]\ntrust = \"untrusted\"\n[max]\nfuel = 5\n",
            Path::new("/a/p.toml"),
        )
        .unwrap();
        let y = Policy::parse(
            "trust: untrusted\nmax:\n  fuel: 5\nenv: [\"A_*\"]\n",
            Path::new("/b/p.yaml"),
        )
        .unwrap();
        assert_eq!(t.digest(), y.digest());
        assert_eq!(t.digest().len(), 64);
        let more = Policy::parse(
            "trust: untrusted\nmax:\n  fuel: 6\nenv: [\"A_*\"]\n",
            Path::new("/b/p.yaml"),
        )
        .unwrap();
        assert_ne!(t.digest(), more.digest());
        assert_ne!(Policy::default().digest(), t.digest());
    }

    #[test]
    fn toml_and_yaml_parse_the_same() {
        let t = Policy::parse(
            "trust = \"untrusted\"\nroots = [\"data\"]\nenv = [\"A_*\"]\n[max]\nfuel = 5\n",
            Path::new("p.toml"),
        )
        .unwrap();
        let y = Policy::parse(
            "trust: untrusted\nroots: [data]\nenv: [\"A_*\"]\nmax:\n  fuel: 5\n",
            Path::new("p.yaml"),
        )
        .unwrap();
        assert_eq!(t.trust, Trust::Untrusted);
        assert_eq!(t.max.fuel, Some(5));
        assert_eq!(t.roots, y.roots);
        assert_eq!(t.max, y.max);
        assert!(t.allows_env("A_B") && !t.allows_env("B"));
    }

    #[test]
    fn bad_files_name_the_file_and_field() {
        let e = Policy::parse("trust = \"maybe\"\n", Path::new("p.toml")).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let msg = e.to_string();
        assert!(msg.contains("p.toml") && msg.contains("trust"), "{msg}");
        let msg = Policy::parse("rots = []\n", Path::new("p.toml"))
            .unwrap_err()
            .to_string();
        assert!(msg.contains("rots"), "{msg}");
        let msg = Policy::parse("[max]\nfuel = 0\n", Path::new("p.toml"))
            .unwrap_err()
            .to_string();
        assert!(msg.contains("max.fuel"), "{msg}");
        let msg = Policy::parse("roots: [/etc]\n", Path::new("p.yml"))
            .unwrap_err()
            .to_string();
        assert!(msg.contains("/etc"), "{msg}");
    }

    #[test]
    fn defaults_depend_on_trust() {
        let trusted = Policy::default();
        assert!(trusted.allowed_roots().is_none() && trusted.allows_env("X"));
        let untrusted = Policy {
            trust: Trust::Untrusted,
            ..Policy::default()
        };
        assert_eq!(untrusted.allowed_roots(), Some(&[][..]));
        assert!(!untrusted.allows_env("X"));
    }

    #[test]
    fn model_and_gateway_tables_are_checked() {
        let p = Policy::parse(
            "[gateway]\nurl = \"http://127.0.0.1:1\"\ntoken_env = \"GW\"\n[model]\nprovider = \"openai\"\n[model.openai]\nurl = \"https://api.example/v1\"\nkey_env = \"OAI\"\nmodel = \"m\"\nstream = true\n[model.openclaw]\nkey_env = \"OC\"\n",
            Path::new("p.toml"),
        )
        .unwrap();
        assert_eq!(p.model.provider("openai").unwrap().stream, Some(true));
        assert_eq!(p.model.key_envs().collect::<Vec<_>>(), ["OC", "OAI"]);
        for (text, want) in [
            (
                "[gateway]\ntoken_env = \"X\"\n",
                "gateway.token_env needs gateway.url",
            ),
            ("[gateway]\nurl = \"ftp://h\"\n", "gateway.url"),
            ("[model]\nprovider = \"bard\"\n", "model.provider \"bard\""),
            (
                "[model.http]\nkey_env = \"K\"\n",
                "model.http.key_env needs model.http.url",
            ),
            (
                "[model.openclaw]\nkey_env = \"K\"\n",
                "model.openclaw.key_env needs",
            ),
            ("[model.pi]\nurl = \"http://u:p@h\"\n", "model.pi.url"),
            ("[model.openai]\nendpoint = \"x\"\n", "endpoint"),
        ] {
            let e = Policy::parse(text, Path::new("p.toml"))
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn registries_and_signers() {
        let p = Policy::parse(
            "trust = \"untrusted\"\nregistries = [\"ghcr.io/acme\", \"127.0.0.1:5000\"]\n",
            Path::new("p.toml"),
        )
        .unwrap();
        assert!(p.allows_registry("ghcr.io", "acme/greet"));
        assert!(p.allows_registry("ghcr.io", "acme"));
        assert!(!p.allows_registry("ghcr.io", "acmeevil/greet"));
        assert!(!p.allows_registry("ghcr.io", "other/greet"));
        assert!(p.allows_registry("127.0.0.1:5000", "any/thing"));
        assert!(!p.allows_registry("127.0.0.1:5001", "any/thing"));
        let untrusted = Policy::parse("trust = \"untrusted\"\n", Path::new("p.toml")).unwrap();
        assert!(!untrusted.allows_registry("ghcr.io", "a"));
        assert!(Policy::default().allows_registry("ghcr.io", "a"));
        let e =
            Policy::parse("registries = [\"https://ghcr.io\"]\n", Path::new("p.toml")).unwrap_err();
        assert!(e.to_string().contains("without a scheme"), "{e}");
        let e = Policy::parse("[signers]\nkeys = [\"nope\"]\n", Path::new("p.toml")).unwrap_err();
        assert!(e.to_string().contains("[signers] keys[0]"), "{e}");
        // A key line `lobster keys new ci` wrote (its .pub comment said key
        // id 7B8C5EA4F8B268D6).
        let line = "RWTWaLL4pF6MewlUdqwUVuzDrd31ykHs8LggS5KwF9aj3l21SXLk+p1f";
        let p = Policy::parse(
            &format!("[signers]\nkeys = [\"{line}\"]\nrequire_signed = true\n"),
            Path::new("p.toml"),
        )
        .unwrap();
        assert!(p.signers.require_signed);
        assert_eq!(p.signers.key_ids(), ["7B8C5EA4F8B268D6"]);
        assert_eq!(key_id("RWQAAAAA"), None);
    }

    #[test]
    fn fuel_off_only_in_a_trusted_policy() {
        let p = Policy::parse("fuel = false\n", Path::new("p.toml")).unwrap();
        assert!(!p.fuel);
        assert!(Policy::parse("", Path::new("p.toml")).unwrap().fuel);
        let e = Policy::parse("trust = \"untrusted\"\nfuel = false\n", Path::new("p.toml"))
            .unwrap_err();
        assert!(e.to_string().contains("fuel = false needs trust"), "{e}");
    }
}
