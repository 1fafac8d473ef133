//! argv of `lobster check`, `lobster bundle` and `lobster lock`: value flags
//! (`--steps DIR`, repeatable; `--format human|json`; `--out PATH`;
//! `--policy FILE`) and
//! positional words.

use super::argv::{split_flag, take_value};
use crate::error::{Error, Result};

/// Parsed argv of a trust command.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustArgs {
    /// `--steps DIR` (repeatable).
    pub steps: Vec<String>,
    /// `--format json`.
    pub json: bool,
    /// `--out PATH`.
    pub out: Option<String>,
    /// `--policy FILE`.
    pub policy: Option<String>,
    /// `--help` / `-h`.
    pub help: bool,
    /// Everything else.
    pub words: Vec<String>,
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
        if !name.starts_with("--") {
            out.words.push(tok.to_string());
            continue;
        }
        if !flags.contains(&name) {
            return Err(
                Error::parse(format!("lobster {command}: unknown flag {name}"))
                    .with_hint(format!("`lobster {command} --help` lists its flags")),
            );
        }
        let value = take_value(inline, argv, &mut i)
            .ok_or_else(|| Error::parse(format!("lobster {command} {name} requires a value")))?;
        match name {
            "--steps" => out.steps.push(value),
            "--out" => out.out = Some(value),
            "--policy" => out.policy = Some(value),
            _ => match value.as_str() {
                "json" => out.json = true,
                "human" => out.json = false,
                other => {
                    return Err(Error::parse(format!(
                        "lobster {command} --format must be human or json (got {other:?})"
                    )))
                }
            },
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
