//! `lobster serve`: argv → config → the HTTP gateway (see [`crate::serve`]).
//!
//! Stdout carries exactly one line, `lobster serve listening on
//! http://ADDR`, once the socket is bound; logs go to stderr.

use super::argv::{split_flag, take_value};
use super::output::write_once;
use crate::error::{Error, Result};
use crate::serve::ServeConfig;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

/// `lobster help serve`.
pub const SERVE_HELP: &str = "lobster serve — a multi-tenant HTTP gateway for untrusted workflows

Usage:
  lobster serve --config serve.toml [--listen ADDR]
  lobster serve hash-password      reads a password on stdin, prints an approver's password_hash

Flags:
  --config FILE   the server's configuration (TOML; see below)
  --listen ADDR   listen here instead of the file's `listen` (127.0.0.1:0 picks a free port)

API (Authorization: Bearer <tenant token>):
  POST /v1/runs                  {pipeline | workflow | workflowText, args?, timeoutMs?, maxStdoutBytes?, wait?}
  GET  /v1/runs/{runId}          the run's record (another tenant's run is a 404)
  POST /v1/runs/{runId}/resume   {approve? | response? | cancel?}
  POST /v1/resume                {token | approvalId, approve? | response? | cancel?}
  GET  /v1/approvals             paused gates, each with an approveUrl for a human
  GET  /a/{link}, POST /a/{link} the approval page (signed, single-use, expiring link;
                                 an approver signs in there with their own credential)
  POST /mcp                      the MCP tools over streamable HTTP
  GET  /healthz, GET /metrics    no token

Example config:
  listen = \"127.0.0.1:8787\"
  state = \"/var/lib/lobster\"
  approval_link_ttl = \"15m\"
  max_body_bytes = 1048576
  request_timeout_ms = 60000
  shutdown_grace_ms = 10000
  header_timeout_ms = 10000
  notify_key_env = \"LOBSTER_NOTIFY_KEY\"  # signs approval notifications (HMAC-SHA256)

  [[tenant]]
  name = \"acme\"
  token_env = \"ACME_TOKEN\"          # or token_sha256 = \"<hex of sha256(token)>\"
  policy = \"acme-policy.toml\"       # default: untrusted, no roots
  workflows = [\"workflows/\"]
  steps = [\"steps/\"]
  max_concurrent_runs = 16
  requests_per_minute = 600
  self_approve = false                 # then at least one approver:
  notify_url = \"https://hooks.example/lobster\"  # told of every approval gate
  [[tenant.approver]]
  name = \"alice\"
  password_hash = \"$argon2id$v=19$...\" # lobster serve hash-password

Examples:
  ACME_TOKEN=s3cret lobster serve --config serve.toml
  lobster serve --config serve.toml --listen 0.0.0.0:8080
";

/// Parsed flags.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServeArgs {
    pub config: Option<PathBuf>,
    pub listen: Option<String>,
    pub help: bool,
}

/// Parse `serve`'s argv (without `serve`).
pub fn parse_serve_args(argv: &[String]) -> Result<ServeArgs> {
    let mut out = ServeArgs::default();
    let mut i = 0;
    while i < argv.len() {
        let tok = argv[i].as_str();
        if matches!(tok, "--help" | "-h") {
            out.help = true;
            i += 1;
            continue;
        }
        let (name, inline) = split_flag(tok);
        if !matches!(name, "--config" | "--listen") {
            if name.starts_with("--") {
                return Err(super::subcommands::unknown_flag(
                    "serve",
                    name,
                    &["--config", "--listen"],
                ));
            }
            return Err(Error::parse(format!("serve does not take {tok}"))
                .with_hint("see `lobster serve --help`"));
        }
        i += 1;
        let value = take_value(inline, argv, &mut i)
            .ok_or_else(|| Error::parse(format!("serve {name} requires a value")))?;
        match name {
            "--config" => out.config = Some(PathBuf::from(value)),
            _ => out.listen = Some(value),
        }
    }
    Ok(out)
}

/// `lobster serve hash-password`: the password on stdin (one line, or all of
/// it) → an argon2id PHC string for `[[tenant.approver]] password_hash`.
fn hash_password(rest: &[String]) -> i32 {
    let fail = |e: Error| {
        write_once("", &super::output::human_error(&e, None));
        e.exit_code()
    };
    if let Some(extra) = rest.first() {
        return fail(
            Error::parse(format!(
                "serve hash-password takes no arguments, not {extra}"
            ))
            .with_hint("type the password on stdin: lobster serve hash-password < file"),
        );
    }
    let mut text = String::new();
    if let Err(e) = std::io::Read::read_to_string(&mut std::io::stdin(), &mut text) {
        return fail(Error::runtime(format!("cannot read the password: {e}")));
    }
    let password = text.strip_suffix('\n').unwrap_or(&text);
    let password = password.strip_suffix('\r').unwrap_or(password);
    if password.len() < 8 {
        return fail(Error::parse(
            "the password on stdin is shorter than 8 bytes; give an approver a longer one",
        ));
    }
    match crate::serve::approver::hash_password(password) {
        Ok(phc) => {
            write_once(&format!("{phc}\n"), "");
            0
        }
        Err(e) => fail(e),
    }
}

/// Async worker threads (`LOBSTER_SERVE_WORKERS`, default 2); runs use the blocking pool.
fn workers() -> usize {
    std::env::var("LOBSTER_SERVE_WORKERS")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(2)
}

pub(super) fn serve(argv: &[String]) -> i32 {
    let fail = |e: Error| {
        write_once("", &super::output::human_error(&e, None));
        e.exit_code()
    };
    if argv.first().map(String::as_str) == Some("hash-password") {
        return hash_password(&argv[1..]);
    }
    let args = match parse_serve_args(argv) {
        Ok(a) => a,
        Err(e) => return fail(e),
    };
    if args.help {
        write_once(SERVE_HELP, "");
        return 0;
    }
    let Some(file) = args.config else {
        return fail(
            Error::parse("serve requires --config FILE").with_hint("see `lobster serve --help`"),
        );
    };
    let config = match ServeConfig::load(&file) {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    let listen = args.listen.unwrap_or_else(|| config.listen.clone());
    let log: crate::serve::Log = Arc::new(|line: &str| {
        // One write per line: lines of concurrent requests never interleave.
        let mut text = String::with_capacity(line.len() + 1);
        text.push_str(line);
        text.push('\n');
        let _ = std::io::stderr().write_all(text.as_bytes());
    });
    let ready = |addr: std::net::SocketAddr| {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "lobster serve listening on http://{addr}");
        let _ = out.flush();
    };
    match crate::serve::run(config, &listen, workers(), log, ready) {
        Ok(()) => 0,
        Err(e) => fail(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags() {
        let a = parse_serve_args(&[
            "--config".into(),
            "s.toml".into(),
            "--listen=127.0.0.1:0".into(),
        ])
        .unwrap();
        assert_eq!(a.config, Some(PathBuf::from("s.toml")));
        assert_eq!(a.listen.as_deref(), Some("127.0.0.1:0"));
        assert!(parse_serve_args(&["--port".into()]).is_err());
    }

    #[test]
    fn the_help_example_config_parses() {
        let start = SERVE_HELP.find("Example config:\n").unwrap() + "Example config:\n".len();
        let end = SERVE_HELP.find("\nExamples:").unwrap();
        let text: String = SERVE_HELP[start..end]
            .lines()
            .map(|l| l.strip_prefix("  ").unwrap_or(l))
            .collect::<Vec<_>>()
            .join("\n")
            .replace("token_env = \"ACME_TOKEN\"", "token_sha256 = \"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\"")
            .replace("LOBSTER_NOTIFY_KEY", "LOBSTER_HELP_TEST_NOTIFY_KEY");
        // The example's hash is elided: a real one in its place.
        let phc = crate::serve::approver::hash_password("a long password").unwrap();
        let text = text.replace("$argon2id$v=19$...", &phc);
        std::env::set_var("LOBSTER_HELP_TEST_NOTIFY_KEY", "0123456789abcdef0123");
        let c = ServeConfig::parse(&text, std::path::Path::new("/srv/serve.toml")).unwrap();
        assert_eq!(c.tenants[0].name, "acme");
        assert_eq!(c.tenants[0].max_concurrent_runs, 16);
        assert_eq!(c.tenants[0].approvers[0].name, "alice");
        assert!(c.tenants[0].notify_url.is_some() && c.notify_key.is_some());
    }
}
