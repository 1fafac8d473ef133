//! argv of `lobster check`, `lobster bundle`, `lobster lock`, `lobster keys`
//! and the registry commands of `lobster step`: value flags (`--steps DIR`,
//! repeatable; `--format human|json|sarif|github`; `--out PATH` / `-o PATH`;
//! `--policy FILE`; `--key FILE`; `--dir DIR`) and positional words.

use super::argv::{split_flag, take_value};
use crate::error::{Error, Result};

/// Parsed argv of a trust command.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustArgs {
    /// `--steps DIR` (repeatable).
    pub steps: Vec<String>,
    /// `--format json`.
    pub json: bool,
    /// `--format`: `human` (default), `json`, `sarif` or `github`.
    pub format: Format,
    /// `--key FILE`.
    pub key: Option<String>,
    /// `--dir DIR`.
    pub dir: Option<String>,
    /// `--out PATH`.
    pub out: Option<String>,
    /// `--policy FILE`.
    pub policy: Option<String>,
    /// `--help` / `-h`.
    pub help: bool,
    /// Everything else.
    pub words: Vec<String>,
}

/// An output format of `--format`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Format {
    /// `path[:line]: message` lines and a summary.
    #[default]
    Human,
    /// One JSON document.
    Json,
    /// SARIF 2.1.0 (code scanning).
    Sarif,
    /// GitHub Actions workflow commands (`::error file=…,line=…::…`).
    Github,
}

/// Parse `argv` of `command`; `flags` lists the value flags it accepts.
pub fn parse(command: &str, argv: &[String], flags: &[&str]) -> Result<TrustArgs> {
    let mut out = TrustArgs::default();
    let mut i = 0;
    while i < argv.len() {
        let tok = argv[i].as_str();
        i += 1;
        if matches!(tok, "--help" | "-h") {
            out.help = true;
            continue;
        }
        let (name, inline) = split_flag(tok);
        let name = if name == "-o" { "--out" } else { name };
        if !name.starts_with("--") {
            out.words.push(tok.to_string());
            continue;
        }
        if !flags.contains(&name) {
            return Err(super::subcommands::unknown_flag(command, name, flags));
        }
        let value = take_value(inline, argv, &mut i)
            .ok_or_else(|| Error::parse(format!("lobster {command} {name} requires a value")))?;
        match name {
            "--steps" => out.steps.push(value),
            "--out" => out.out = Some(value),
            "--policy" => out.policy = Some(value),
            "--key" => out.key = Some(value),
            "--dir" => out.dir = Some(value),
            _ => {
                out.format = match value.as_str() {
                    "json" => Format::Json,
                    "human" => Format::Human,
                    "sarif" if command == "check" => Format::Sarif,
                    "github" if command == "check" => Format::Github,
                    other => {
                        let allowed = if command == "check" {
                            "human, json, sarif or github"
                        } else {
                            "human or json"
                        };
                        return Err(Error::parse(format!(
                            "lobster {command} --format must be {allowed} (got {other:?})"
                        )));
                    }
                };
                out.json = out.format == Format::Json;
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn flags_and_words() {
        let a = parse(
            "check",
            &words(&["--format=json", "a.wasm", "--steps", "s", "b"]),
            &["--format", "--steps"],
        )
        .unwrap();
        assert!(a.json);
        assert_eq!(a.steps, ["s"]);
        assert_eq!(a.words, ["a.wasm", "b"]);
        assert!(parse("check", &words(&["--bogus"]), &["--format"]).is_err());
        assert!(parse("check", &words(&["--format", "xml"]), &["--format"]).is_err());
        assert!(parse("check", &words(&["--steps"]), &["--steps"]).is_err());
    }
}
