//! Flag parsing with the pipeline language's greedy rules.

use crate::Error;

/// A flag's value: text, or `true` for a bare switch (`--apply`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlagValue {
    /// Bare flag: no value followed it.
    Bool(bool),
    /// `--name value` or `--name=value`.
    Str(String),
}

impl FlagValue {
    /// The value as text (`"true"` for a bare flag).
    pub fn as_str(&self) -> &str {
        match self {
            FlagValue::Bool(true) => "true",
            FlagValue::Bool(false) => "false",
            FlagValue::Str(s) => s,
        }
    }
}

/// The stage's arguments: positionals and flags.
///
/// Rules (the same as Lobster's pipeline language): `--k=v` splits at the
/// first `=`; `--k v` takes the next token unless it starts with `--`;
/// otherwise `--k` is `true`. A repeated flag keeps its first position and
/// its last value. Tokens not starting with `--` are positionals.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Args {
    /// Tokens that are not flags, in order.
    pub positional: Vec<String>,
    /// Flags in first-seen order.
    pub flags: Vec<(String, FlagValue)>,
}

impl Args {
    /// Parse argv-style tokens (without the step name).
    pub fn parse<S: AsRef<str>>(tokens: &[S]) -> Args {
        let mut args = Args::default();
        let mut i = 0;
        while i < tokens.len() {
            let tok = tokens[i].as_ref();
            if let Some(flag) = tok.strip_prefix("--") {
                if let Some((k, v)) = flag.split_once('=') {
                    args.set(k, FlagValue::Str(v.to_string()));
                } else {
                    match tokens.get(i + 1).map(|t| t.as_ref()) {
                        Some(next) if !next.starts_with("--") => {
                            args.set(flag, FlagValue::Str(next.to_string()));
                            i += 1;
                        }
                        _ => args.set(flag, FlagValue::Bool(true)),
                    }
                }
            } else {
                args.positional.push(tok.to_string());
            }
            i += 1;
        }
        args
    }

    fn set(&mut self, key: &str, value: FlagValue) {
        match self.flags.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = value,
            None => self.flags.push((key.to_string(), value)),
        }
    }

    /// The value of flag `name`, if given.
    pub fn flag(&self, name: &str) -> Option<&FlagValue> {
        self.flags.iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }

    /// The flag as text (`"true"` for a bare flag).
    pub fn str(&self, name: &str) -> Option<&str> {
        self.flag(name).map(FlagValue::as_str)
    }

    /// The flag as text, or `default` when absent.
    pub fn str_or<'a>(&'a self, name: &str, default: &'a str) -> &'a str {
        self.str(name).unwrap_or(default)
    }

    /// True when the flag is present and not the literal text `false`.
    pub fn is_set(&self, name: &str) -> bool {
        match self.flag(name) {
            None => false,
            Some(FlagValue::Bool(b)) => *b,
            Some(FlagValue::Str(s)) => s != "false",
        }
    }

    /// The flag as a number (JavaScript `Number()` syntax for decimals,
    /// `Infinity` and `0x` hex); [`Error::InvalidArgs`] when it is not one.
    pub fn number(&self, name: &str) -> Result<Option<f64>, Error> {
        let Some(value) = self.flag(name) else {
            return Ok(None);
        };
        let text = match value {
            FlagValue::Bool(_) => return Ok(Some(1.0)),
            FlagValue::Str(s) => s.trim(),
        };
        parse_number(text)
            .map(Some)
            .ok_or_else(|| Error::invalid_args(format!("--{name} must be a number, got {text:?}")))
    }

    /// The positional arguments.
    pub fn positional(&self) -> &[String] {
        &self.positional
    }
}

fn parse_number(text: &str) -> Option<f64> {
    match text {
        "" => Some(0.0),
        "Infinity" | "+Infinity" => Some(f64::INFINITY),
        "-Infinity" => Some(f64::NEG_INFINITY),
        _ => {
            let lower = text.to_ascii_lowercase();
            if let Some(hex) = lower.strip_prefix("0x") {
                return u64::from_str_radix(hex, 16).ok().map(|n| n as f64);
            }
            let ok = text
                .chars()
                .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-'));
            if ok {
                text.parse().ok()
            } else {
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greedy_flags_match_the_host_dsl() {
        let a = Args::parse(&["--json", "echo [1]"]);
        assert_eq!(a.str("json"), Some("echo [1]"));
        let a = Args::parse(&["--json", "--shell", "x"]);
        assert_eq!(a.flag("json"), Some(&FlagValue::Bool(true)));
        assert_eq!(a.str("shell"), Some("x"));
        let a = Args::parse(&["--n", "-5", "-x", "--k=", "--a=b=c"]);
        assert_eq!(a.str("n"), Some("-5"));
        assert_eq!(a.positional(), ["-x"]);
        assert_eq!(a.str("k"), Some(""));
        assert_eq!(a.str("a"), Some("b=c"));
        let a = Args::parse(&["--n", "1", "--m", "--n", "2"]);
        assert_eq!(a.flags[0], ("n".to_string(), FlagValue::Str("2".into())));
        assert!(a.is_set("m"));
        assert!(!a.is_set("zzz"));
    }

    #[test]
    fn numbers() {
        let a = Args::parse(&["--n=12.5", "--h=0x10", "--bad=abc", "--s"]);
        assert_eq!(a.number("n").unwrap(), Some(12.5));
        assert_eq!(a.number("h").unwrap(), Some(16.0));
        assert_eq!(a.number("s").unwrap(), Some(1.0));
        assert_eq!(a.number("missing").unwrap(), None);
        assert!(matches!(a.number("bad"), Err(Error::InvalidArgs(_))));
    }
}
