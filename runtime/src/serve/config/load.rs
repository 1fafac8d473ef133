//! Reading `serve.toml` and checking its top-level keys (each tenant's
//! table is `tenant.rs`'s).

use super::raw::RawConfig;
use super::values::{default_node_id, default_state_dir, parse_duration};
use super::{tenant, ServeConfig, TenantConfig};
use super::{DEFAULT_JOURNAL_KEEP_RUNS, DEFAULT_JOURNAL_RETENTION, DEFAULT_LISTEN};
use crate::error::{Error, Result};
use std::path::{Path, PathBuf};
use std::time::Duration;

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
            let tenant = tenant::check(t, &state, &rel, &tenants, &bad)?;
            tenants.push(tenant);
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
