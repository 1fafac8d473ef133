//! The values of `serve.toml` that are not plain numbers or strings
//! (durations, token hashes) and the defaults taken from the host.

use std::path::PathBuf;
use std::time::Duration;

/// `<hostname>-<pid>`: unique among the nodes of one database as long as
/// host names are.
pub(super) fn default_node_id() -> String {
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
pub(super) fn default_state_dir() -> PathBuf {
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

/// 64 hex digits as 32 bytes.
pub(super) fn parse_sha256(hex: &str) -> Option<[u8; 32]> {
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
