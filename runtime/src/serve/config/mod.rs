//! `serve.toml`: the gateway's configuration, read and checked once at
//! start-up. Unknown keys, bad names, missing tokens and unreadable policy
//! files stop the server with an error naming the file and the key.

use crate::error::{Error, Result};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Default `listen`.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8787";

/// The file as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    listen: Option<String>,
    state: Option<String>,
    node_id: Option<String>,
    public_url: Option<String>,
    approval_link_ttl: Option<String>,
    max_body_bytes: Option<u64>,
    request_timeout_ms: Option<u64>,
    shutdown_grace_ms: Option<u64>,
    header_timeout_ms: Option<u64>,
    max_connections_per_ip: Option<usize>,
    journal_retention: Option<String>,
    journal_keep_runs: Option<usize>,
    notify_key_env: Option<String>,
    notify_timeout_ms: Option<u64>,
    notify_attempts: Option<u32>,
    #[serde(default)]
    tenant: Vec<RawTenant>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTenant {
    name: String,
    token_sha256: Option<String>,
    token_env: Option<String>,
    policy: Option<String>,
    #[serde(default)]
    workflows: Vec<String>,
    #[serde(default)]
    steps: Vec<String>,
    workdir: Option<String>,
    max_concurrent_runs: Option<usize>,
    requests_per_minute: Option<u32>,
    self_approve: Option<bool>,
    elicitation_is_human: Option<bool>,
    notify_url: Option<String>,
    #[serde(default)]
    approver: Vec<RawApprover>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawApprover {
    name: String,
    token_sha256: Option<String>,
    password_hash: Option<String>,
}

/// The checked configuration.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// Where the file was read from.
    pub file: PathBuf,
    pub listen: String,
    /// The state directory (every tenant's store lives under it; with a
    /// PostgreSQL store, only node-local caches and inline workflows).
    pub state: PathBuf,
    /// `state = "postgres://…"`: the database every node shares.
    pub store_url: Option<String>,
    /// This node's name in run records (`node_id`, else `<hostname>-<pid>`).
    pub node_id: String,
    /// Base of `approveUrl` links (`None`: `http://<bound address>`).
    pub public_url: Option<String>,
    pub approval_link_ttl: Duration,
    pub max_body_bytes: usize,
    pub request_timeout: Duration,
    pub shutdown_grace: Duration,
    /// How long a client has to send a request's headers (`header_timeout_ms`).
    pub header_timeout: Duration,
    /// Most connections open at once from one client address
    /// (`max_connections_per_ip`; `None`: no cap).
    pub max_connections_per_ip: Option<usize>,
    /// Settled runs' journals older than this are pruned (`journal_retention`,
    /// default [`DEFAULT_JOURNAL_RETENTION`]), each leaving a tombstone.
    pub journal_retention: Duration,
    /// At most this many settled runs' journals are kept per tenant
    /// (`journal_keep_runs`, default [`DEFAULT_JOURNAL_KEEP_RUNS`]).
    pub journal_keep_runs: usize,
    /// The approval notifier's signing key (`notify_key_env`'s value).
    pub notify_key: Option<Vec<u8>>,
    /// Each notification attempt's deadline (`notify_timeout_ms`, 5000).
    pub notify_timeout: Duration,
    /// Attempts per notification in all (`notify_attempts`, 3).
    pub notify_attempts: u32,
    pub tenants: Vec<TenantConfig>,
}

/// Default `journal_retention`: 30 days.
pub const DEFAULT_JOURNAL_RETENTION: Duration = Duration::from_secs(30 * 86_400);

/// Default `journal_keep_runs`.
pub const DEFAULT_JOURNAL_KEEP_RUNS: usize = 10_000;

/// One `[[tenant]]`, paths made absolute.
#[derive(Debug, Clone)]
pub struct TenantConfig {
    pub name: String,
    /// sha256 of the bearer token.
    pub token_sha256: [u8; 32],
    /// The policy file (`None`: untrusted, no roots).
    pub policy: Option<PathBuf>,
    pub workflows: Vec<PathBuf>,
    pub steps: Vec<PathBuf>,
    /// The tenant's own working directory (`workdir`, default
    /// `<state>/work/<name>`): its runs start there, its policy's `roots`
    /// resolve there, and every file its runs name is confined to it and
    /// to its catalog and step directories (read-only).
    pub workdir: PathBuf,
    pub max_concurrent_runs: usize,
    pub requests_per_minute: u32,
    pub self_approve: bool,
    /// The humans who may decide this tenant's gates (`[[tenant.approver]]`).
    pub approvers: Vec<super::approver::Approver>,
    /// An MCP client's "input required" answer counts as a human's
    /// (`elicitation_is_human`, default false).
    pub elicitation_is_human: bool,
    /// The webhook told of every approval gate (`notify_url`).
    pub notify_url: Option<crate::broker::http::Url>,
}

impl ServeConfig {
    /// Read and check `path`.
    pub fn load(path: &Path) -> Result<ServeConfig> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::parse(format!("cannot read serve config {}: {e}", path.display()))
        })?;
        Self::parse(&text, path)
    }

    /// Check config `text` read from `path` (relative paths in it are
    /// relative to `path`'s directory).
    pub fn parse(text: &str, path: &Path) -> Result<ServeConfig> {
        let bad = |msg: String| Error::parse(format!("serve config {}: {msg}", path.display()));
        let raw: RawConfig =
            toml::from_str(text).map_err(|e| bad(e.to_string().trim_end().into()))?;
        let base = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        let base = base.canonicalize().unwrap_or(base);
        let rel = |p: &str| -> PathBuf {
            let p = PathBuf::from(p);
            if p.is_absolute() {
                p
            } else {
                base.join(p)
            }
        };
        let mut store_url = None;
        let state = match raw.state.as_deref().map(str::trim) {
            Some(s) if s.starts_with("postgres://") || s.starts_with("postgresql://") => {
                store_url = Some(s.to_string());
                default_state_dir()
            }
            Some(s) if s.contains("://") => {
                return Err(bad(format!(
                    "state {:?}: give a directory or postgres://USER@HOST/DB",
                    crate::state::pg::redact(s)
                )))
            }
            Some(s) if !s.is_empty() => rel(s),
            _ => default_state_dir(),
        };
        let node_id = match raw.node_id.as_deref().map(str::trim) {
            None => default_node_id(),
            Some(n)
                if !n.is_empty()
                    && n.len() <= 64
                    && n.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') =>
            {
                n.to_ascii_lowercase()
            }
            Some(n) => {
                return Err(bad(format!(
                    "node_id {n:?} must be 1 to 64 of [A-Za-z0-9_-]"
                )))
            }
        };
        let ttl = match raw.approval_link_ttl.as_deref() {
            None => Duration::from_secs(15 * 60),
            Some(s) => parse_duration(s).ok_or_else(|| {
                bad(format!(
                    "approval_link_ttl {s:?} is not a duration like \"90s\", \"15m\" or \"2h\""
                ))
            })?,
        };
        let journal_retention = match raw.journal_retention.as_deref() {
            None => DEFAULT_JOURNAL_RETENTION,
            Some(s) => parse_duration(s).ok_or_else(|| {
                bad(format!(
                    "journal_retention {s:?} is not a duration like \"12h\" or \"30d\""
                ))
            })?,
        };
        let journal_keep_runs = match raw.journal_keep_runs {
            Some(0) => return Err(bad("journal_keep_runs must be at least 1".into())),
            Some(n) => n,
            None => DEFAULT_JOURNAL_KEEP_RUNS,
        };
        if raw.tenant.is_empty() {
            return Err(bad(
                "no [[tenant]]: add at least one (see `lobster serve --help`)".into(),
            ));
        }
        let mut tenants: Vec<TenantConfig> = Vec::new();
        for t in raw.tenant {
            let name_ok = !t.name.is_empty()
                && t.name.len() <= 64
                && t.name.bytes().all(|b| {
                    b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-'
                });
            if !name_ok {
                return Err(bad(format!(
                    "tenant name {:?} must match [a-z0-9_-]{{1,64}}",
                    t.name
                )));
            }
            if tenants.iter().any(|o| o.name == t.name) {
                return Err(bad(format!("tenant {} is configured twice", t.name)));
            }
            let token_sha256 = match (&t.token_sha256, &t.token_env) {
                (Some(hex), None) => parse_sha256(hex).ok_or_else(|| {
                    bad(format!(
                        "tenant {}: token_sha256 must be 64 hex digits (sha256 of the token)",
                        t.name
                    ))
                })?,
                (None, Some(var)) => {
                    let token = std::env::var(var)
                        .ok()
                        .filter(|v| !v.is_empty())
                        .ok_or_else(|| {
                            bad(format!(
                                "tenant {}: token_env {var} is not set (or empty)",
                                t.name
                            ))
                        })?;
                    super::tenant::sha256(token.as_bytes())
                }
                _ => {
                    return Err(bad(format!(
                        "tenant {}: give exactly one of token_sha256 and token_env",
                        t.name
                    )))
                }
            };
            let max_concurrent_runs = t.max_concurrent_runs.unwrap_or(8);
            let requests_per_minute = t.requests_per_minute.unwrap_or(600);
            if max_concurrent_runs == 0 || requests_per_minute == 0 {
                return Err(bad(format!(
                    "tenant {}: max_concurrent_runs and requests_per_minute must be at least 1",
                    t.name
                )));
            }
            let mut approvers: Vec<super::approver::Approver> = Vec::new();
            for a in &t.approver {
                if !super::approver::valid_name(&a.name) {
                    return Err(bad(format!(
                        "tenant {}: approver name {:?} must be 1 to 64 of [A-Za-z0-9._@-]",
                        t.name, a.name
                    )));
                }
                if approvers.iter().any(|o| o.name == a.name) {
                    return Err(bad(format!(
                        "tenant {}: approver {} is configured twice",
                        t.name, a.name
                    )));
                }
                let credential = match (&a.token_sha256, &a.password_hash) {
                    (Some(hex), None) => {
                        let h = parse_sha256(hex).ok_or_else(|| {
                            bad(format!(
                                "tenant {}: approver {}: token_sha256 must be 64 hex digits",
                                t.name, a.name
                            ))
                        })?;
                        if h == token_sha256 {
                            return Err(bad(format!(
                                "tenant {}: approver {} has the tenant's own token: an approver signs in with a credential of their own, not the agent's",
                                t.name, a.name
                            )));
                        }
                        super::approver::Credential::TokenSha256(h)
                    }
                    (None, Some(phc)) => super::approver::Credential::password(phc).map_err(|e| {
                        bad(format!(
                            "tenant {}: approver {}: password_hash is not an argon2 PHC string ({e}); make one with `lobster serve hash-password`",
                            t.name, a.name
                        ))
                    })?,
                    _ => {
                        return Err(bad(format!(
                            "tenant {}: approver {}: give exactly one of token_sha256 and password_hash",
                            t.name, a.name
                        )))
                    }
                };
                approvers.push(super::approver::Approver {
                    name: a.name.clone(),
                    credential,
                });
            }
            let self_approve = t.self_approve.unwrap_or(false);
            let elicitation_is_human = t.elicitation_is_human.unwrap_or(false);
            if !self_approve && approvers.is_empty() {
                return Err(bad(format!(
                    "tenant {}: self_approve = false and no [[tenant.approver]]: nobody could approve its gates. Add an approver under the tenant (name = \"…\" and token_sha256 = \"…\" or password_hash from `lobster serve hash-password`), or set self_approve = true to let the tenant's token approve",
                    t.name
                )));
            }
            let notify_url = match &t.notify_url {
                None => None,
                Some(u) => {
                    crate::policy::credential::Origin::parse(u)
                        .map_err(|e| bad(format!("tenant {}: notify_url: {e}", t.name)))?;
                    Some(
                        crate::broker::http::Url::parse(u)
                            .map_err(|e| bad(format!("tenant {}: notify_url: {e}", t.name)))?,
                    )
                }
            };
            let workdir = match t.workdir.as_deref().map(str::trim) {
                Some("") => return Err(bad(format!("tenant {}: workdir is empty", t.name))),
                Some(w) => rel(w),
                None => state.join("work").join(&t.name),
            };
            check_workdir(&workdir, &state, &tenants).map_err(|why| {
                bad(format!(
                    "tenant {}: workdir {}: {why}",
                    t.name,
                    workdir.display()
                ))
            })?;
            tenants.push(TenantConfig {
                approvers,
                elicitation_is_human,
                notify_url,
                policy: t.policy.as_deref().map(rel),
                workflows: t.workflows.iter().map(|p| rel(p)).collect(),
                steps: t.steps.iter().map(|p| rel(p)).collect(),
                workdir,
                max_concurrent_runs,
                requests_per_minute,
                self_approve,
                token_sha256,
                name: t.name,
            });
        }
        let notify_key = match &raw.notify_key_env {
            None => None,
            Some(var) => Some(
                std::env::var(var)
                    .ok()
                    .filter(|v| v.len() >= 16)
                    .ok_or_else(|| {
                        bad(format!(
                            "notify_key_env {var} is not set, or shorter than 16 bytes (the key that signs approval notifications)"
                        ))
                    })?
                    .into_bytes(),
            ),
        };
        if notify_key.is_none() {
            if let Some(t) = tenants.iter().find(|t| t.notify_url.is_some()) {
                return Err(bad(format!(
                    "tenant {}: notify_url needs notify_key_env at the top of the file (the variable holding the key that signs notifications)",
                    t.name
                )));
            }
        }
        let positive = |v: Option<u64>, key: &str, default: u64| -> Result<u64> {
            match v {
                Some(0) => Err(bad(format!("{key} must be greater than 0"))),
                Some(n) => Ok(n),
                None => Ok(default),
            }
        };
        Ok(ServeConfig {
            file: path.to_path_buf(),
            listen: raw.listen.unwrap_or_else(|| DEFAULT_LISTEN.into()),
            state,
            store_url,
            node_id,
            public_url: raw.public_url.map(|u| u.trim_end_matches('/').to_string()),
            approval_link_ttl: ttl,
            max_body_bytes: positive(raw.max_body_bytes, "max_body_bytes", 1 << 20)? as usize,
            request_timeout: Duration::from_millis(positive(
                raw.request_timeout_ms,
                "request_timeout_ms",
                60_000,
            )?),
            shutdown_grace: Duration::from_millis(raw.shutdown_grace_ms.unwrap_or(10_000)),
            header_timeout: Duration::from_millis(positive(
                raw.header_timeout_ms,
                "header_timeout_ms",
                10_000,
            )?),
            notify_key,
            notify_timeout: Duration::from_millis(positive(
                raw.notify_timeout_ms,
                "notify_timeout_ms",
                5_000,
            )?),
            notify_attempts: match raw.notify_attempts {
                Some(n) if (1..=10).contains(&n) => n,
                None => 3,
                Some(_) => return Err(bad("notify_attempts must be from 1 to 10".into())),
            },
            max_connections_per_ip: match raw.max_connections_per_ip {
                Some(0) => {
                    return Err(bad(
                        "max_connections_per_ip must be at least 1 (leave it out for no cap)"
                            .into(),
                    ))
                }
                n => n,
            },
            journal_retention,
            journal_keep_runs,
            tenants,
        })
    }
}

/// Why `workdir` cannot be a tenant's root: it holds (or lies inside) the
/// server's state stores or another tenant's root. Lexical, on absolute
/// paths; [`super::tenant::Tenant::new`] checks again once it exists.
pub fn check_workdir(
    workdir: &Path,
    state: &Path,
    others: &[TenantConfig],
) -> std::result::Result<(), String> {
    if state.starts_with(workdir) {
        return Err(format!(
            "holds the state directory {} (the tenants' stores); give the tenant a directory of its own",
            state.display()
        ));
    }
    if workdir.starts_with(state.join("tenants")) {
        return Err(
            "lies inside the tenants' stores; give the tenant a directory of its own".into(),
        );
    }
    if let Some(o) = others
        .iter()
        .find(|o| o.workdir.starts_with(workdir) || workdir.starts_with(&o.workdir))
    {
        return Err(format!(
            "overlaps tenant {}'s workdir {}; every tenant needs a root of its own",
            o.name,
            o.workdir.display()
        ));
    }
    Ok(())
}

/// `<hostname>-<pid>`: unique among the nodes of one database as long as
/// host names are.
fn default_node_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_default();
    let host: String = host
        .trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .take(40)
        .collect();
    let host = if host.is_empty() { "node".into() } else { host };
    format!("{host}-{}", std::process::id())
}

/// `$LOBSTER_STATE_DIR`, else `~/.lobster/state/serve`.
fn default_state_dir() -> PathBuf {
    match std::env::var("LOBSTER_STATE_DIR")
        .ok()
        .filter(|s| !s.trim().is_empty())
    {
        Some(dir) => PathBuf::from(dir.trim()),
        None => std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("."))
            .join(".lobster/state/serve"),
    }
}

/// `"90s"`, `"15m"`, `"2h"` (a positive whole number and a unit).
pub fn parse_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    let unit = text.chars().last()?;
    let n: u64 = text[..text.len() - unit.len_utf8()].parse().ok()?;
    let secs = match unit {
        's' => n,
        'm' => n.checked_mul(60)?,
        'h' => n.checked_mul(3600)?,
        'd' => n.checked_mul(86_400)?,
        _ => return None,
    };
    (secs > 0).then(|| Duration::from_secs(secs))
}

fn parse_sha256(hex: &str) -> Option<[u8; 32]> {
    let hex = hex.trim();
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ServeConfig> {
        ServeConfig::parse(text, Path::new("/etc/lobster/serve.toml"))
    }

    const TENANT: &str = "[[tenant]]\nname = \"acme\"\ntoken_sha256 = \"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\"\nself_approve = true\n";

    #[test]
    fn defaults_and_relative_paths() {
        let c = parse(&format!("state = \"st\"\n{TENANT}policy = \"p.toml\"\n")).unwrap();
        assert_eq!(c.listen, DEFAULT_LISTEN);
        assert_eq!(c.state, PathBuf::from("/etc/lobster/st"));
        assert_eq!(c.approval_link_ttl, Duration::from_secs(900));
        assert_eq!(c.max_body_bytes, 1 << 20);
        assert_eq!(c.header_timeout, Duration::from_secs(10));
        assert_eq!(c.max_connections_per_ip, None);
        let limited = parse(&format!(
            "header_timeout_ms = 250\nmax_connections_per_ip = 4\n{TENANT}"
        ))
        .unwrap();
        assert_eq!(
            (limited.header_timeout, limited.max_connections_per_ip),
            (Duration::from_millis(250), Some(4))
        );
        for bad in ["header_timeout_ms = 0", "max_connections_per_ip = 0"] {
            let e = parse(&format!("{bad}\n{TENANT}")).unwrap_err().to_string();
            assert!(e.contains(bad.split(' ').next().unwrap()), "{e}");
        }
        let t = &c.tenants[0];
        assert_eq!(t.policy.as_deref(), Some(Path::new("/etc/lobster/p.toml")));
        assert_eq!((t.max_concurrent_runs, t.requests_per_minute), (8, 600));
        assert!(t.self_approve && t.approvers.is_empty() && !t.elicitation_is_human);
        assert_eq!((c.notify_key.as_deref(), c.notify_attempts), (None, 3));
        assert_eq!(c.notify_timeout, Duration::from_secs(5));
        assert_eq!(t.token_sha256, super::super::tenant::sha256(b"test"));
        assert_eq!(c.journal_retention, DEFAULT_JOURNAL_RETENTION);
        assert_eq!(c.journal_keep_runs, DEFAULT_JOURNAL_KEEP_RUNS);
    }

    #[test]
    fn journal_retention_is_a_duration_and_keep_at_least_one() {
        let c = parse(&format!(
            "journal_retention = \"7d\"\njournal_keep_runs = 50\n{TENANT}"
        ))
        .unwrap();
        assert_eq!(c.journal_retention, Duration::from_secs(7 * 86_400));
        assert_eq!(c.journal_keep_runs, 50);
        let e = parse(&format!("journal_retention = \"soon\"\n{TENANT}")).unwrap_err();
        assert!(e.to_string().contains("journal_retention \"soon\""), "{e}");
        let e = parse(&format!("journal_keep_runs = 0\n{TENANT}")).unwrap_err();
        assert!(e.to_string().contains("journal_keep_runs"), "{e}");
    }

    #[test]
    fn a_postgres_state_and_node_ids() {
        let c = parse(&format!(
            "state = \"postgresql://u:pw@db/lob\"\nnode_id = \"Node-1\"\n{TENANT}"
        ))
        .unwrap();
        assert_eq!(c.store_url.as_deref(), Some("postgresql://u:pw@db/lob"));
        assert_eq!(c.node_id, "node-1");
        let c = parse(&format!("state = \"st\"\n{TENANT}")).unwrap();
        assert_eq!(c.store_url, None);
        assert!(c.node_id.ends_with(&format!("-{}", std::process::id())));
        let e = parse(&format!("node_id = \"a b\"\n{TENANT}"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("node_id \"a b\""), "{e}");
        let e = parse(&format!("state = \"redis://u:secret@h\"\n{TENANT}"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("postgres://") && !e.contains("secret"), "{e}");
    }

    #[test]
    fn bad_input_names_the_key() {
        let e = parse(&format!("listne = \"x\"\n{TENANT}"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("/etc/lobster/serve.toml") && e.contains("listne"),
            "{e}"
        );
        let e = parse(&format!("{TENANT}self_aprove = true\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("self_aprove"), "{e}");
        let e = parse("[[tenant]]\nname = \"Acme\"\ntoken_sha256 = \"00\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("[a-z0-9_-]{1,64}"), "{e}");
        let e = parse("[[tenant]]\nname = \"a\"\ntoken_sha256 = \"00\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("64 hex digits"), "{e}");
        let e = parse(&format!("approval_link_ttl = \"soon\"\n{TENANT}"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("approval_link_ttl"), "{e}");
        let e = parse("").unwrap_err().to_string();
        assert!(e.contains("[[tenant]]"), "{e}");
    }

    /// sha256("alice-token").
    const ALICE_SHA: &str = "9c220f200955d76c0a38d308225e0ef10c5f971acaf2f8d1d8f732affa5bd1dc";

    #[test]
    fn a_tenant_that_may_not_self_approve_needs_an_approver() {
        let head = "[[tenant]]\nname = \"acme\"\ntoken_sha256 = \"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\"\n";
        // self_approve = false (the default) and nobody to approve: refused
        // with the fix named, even where elicited answers count.
        for extra in ["", "elicitation_is_human = true\n"] {
            let e = parse(&format!("{head}{extra}")).unwrap_err().to_string();
            assert!(
                e.contains("no [[tenant.approver]]")
                    && e.contains("lobster serve hash-password")
                    && e.contains("self_approve = true"),
                "{e}"
            );
        }
        let approver =
            format!("[[tenant.approver]]\nname = \"alice\"\ntoken_sha256 = \"{ALICE_SHA}\"\n");
        let c = parse(&format!("{head}{approver}")).unwrap();
        assert_eq!(c.tenants[0].approvers.len(), 1);
        assert_eq!(c.tenants[0].approvers[0].name, "alice");
        // The tenant's own token as an approver's, both or neither
        // credential, a hash that is not argon2, a bad or repeated name.
        let own = "[[tenant.approver]]\nname = \"a\"\ntoken_sha256 = \"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\"\n";
        for (bad, says) in [
            (own.to_string(), "the tenant's own token"),
            (
                format!("[[tenant.approver]]\nname = \"a\"\ntoken_sha256 = \"{ALICE_SHA}\"\npassword_hash = \"x\"\n"),
                "exactly one of",
            ),
            ("[[tenant.approver]]\nname = \"a\"\n".to_string(), "exactly one of"),
            (
                "[[tenant.approver]]\nname = \"a\"\npassword_hash = \"$2b$12$abcdefghijklmnopqrstuu\"\n".to_string(),
                "lobster serve hash-password",
            ),
            (
                format!("[[tenant.approver]]\nname = \"a b\"\ntoken_sha256 = \"{ALICE_SHA}\"\n"),
                "[A-Za-z0-9._@-]",
            ),
            (format!("{approver}{approver}"), "configured twice"),
        ] {
            let e = parse(&format!("{head}{bad}")).unwrap_err().to_string();
            assert!(e.contains(says), "{says}: {e}");
        }
    }

    #[test]
    fn a_notifier_needs_the_operator_s_key_and_bounds() {
        let url = "notify_url = \"http://127.0.0.1:9/hook\"\n";
        let e = parse(&format!("{TENANT}{url}")).unwrap_err().to_string();
        assert!(e.contains("notify_key_env"), "{e}");
        std::env::set_var("LOBSTER_CONFIG_TEST_NOTIFY_KEY", "0123456789abcdef-key");
        std::env::set_var("LOBSTER_CONFIG_TEST_SHORT_KEY", "short");
        let c = parse(&format!(
            "notify_key_env = \"LOBSTER_CONFIG_TEST_NOTIFY_KEY\"\nnotify_timeout_ms = 700\nnotify_attempts = 2\n{TENANT}{url}"
        ))
        .unwrap();
        assert_eq!(c.notify_key.as_deref(), Some(&b"0123456789abcdef-key"[..]));
        assert_eq!(
            (c.notify_timeout, c.notify_attempts),
            (Duration::from_millis(700), 2)
        );
        assert!(c.tenants[0].notify_url.is_some());
        for (bad, says) in [
            (
                "notify_key_env = \"LOBSTER_CONFIG_TEST_SHORT_KEY\"",
                "shorter than 16",
            ),
            (
                "notify_key_env = \"LOBSTER_CONFIG_TEST_UNSET_KEY\"",
                "is not set",
            ),
            ("notify_attempts = 0", "notify_attempts"),
            ("notify_attempts = 11", "notify_attempts"),
            ("notify_timeout_ms = 0", "notify_timeout_ms"),
        ] {
            let e = parse(&format!("{bad}\n{TENANT}")).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
        let e = parse(&format!(
            "notify_key_env = \"LOBSTER_CONFIG_TEST_NOTIFY_KEY\"\n{TENANT}notify_url = \"ftp://x/\"\n"
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("notify_url"), "{e}");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("15m"), Some(Duration::from_secs(900)));
        assert_eq!(parse_duration("2h"), Some(Duration::from_secs(7200)));
        assert_eq!(parse_duration("0s"), None);
        assert_eq!(parse_duration("5"), None);
        assert_eq!(parse_duration("m"), None);
    }
}
