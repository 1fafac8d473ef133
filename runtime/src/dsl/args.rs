//! Third pass: tokens → flags and positionals (greedy, as the reference).
//!
//! One exception, also the reference's: a stage may declare switches, flags
//! that never take the next token as their value. Only `exec` has one
//! (`--json`, see [`switches_of`]), so `exec --json cat items.json` runs `cat`.

use super::Token;
use crate::error::Span;

/// A flag's value: a string, or bare `true` when no value followed.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum FlagValue {
    Bool(bool),
    Str(String),
}

impl FlagValue {
    /// The value as text (`true` for a bare flag).
    pub fn as_str(&self) -> &str {
        match self {
            FlagValue::Bool(true) => "true",
            FlagValue::Bool(false) => "false",
            FlagValue::Str(s) => s,
        }
    }

    /// Whether this is a bare flag (`--emit`).
    pub fn is_bare(&self) -> bool {
        matches!(self, FlagValue::Bool(true))
    }
}

/// Parsed arguments of one stage.
///
/// Flags keep their first-seen order (a repeated flag keeps its position, the
/// last value wins), as a JavaScript object does.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Args {
    /// Tokens that do not start with `--`, in order (`-n` is a positional).
    pub positional: Vec<String>,
    /// `--key value`, `--key=value`, or bare `--key` (true).
    pub flags: Vec<(String, FlagValue)>,
}

impl Args {
    /// The value of flag `key`, if given.
    pub fn flag(&self, key: &str) -> Option<&FlagValue> {
        self.flags.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The first of `keys` that is given (aliases such as `--limit`/`--preview-limit`).
    pub fn flag_any(&self, keys: &[&str]) -> Option<&FlagValue> {
        keys.iter().find_map(|k| self.flag(k))
    }

    /// The flag as a string value; a bare flag reads as `"true"`.
    pub fn str(&self, key: &str) -> Option<&str> {
        self.flag(key).map(FlagValue::as_str)
    }

    /// True when the flag is present and not the literal string `false`.
    pub fn is_set(&self, key: &str) -> bool {
        match self.flag(key) {
            None => false,
            Some(FlagValue::Bool(b)) => *b,
            Some(FlagValue::Str(s)) => s != "false",
        }
    }

    fn set(&mut self, key: String, value: FlagValue) {
        match self.flags.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.flags.push((key, value)),
        }
    }
}

/// The switches of stage `name`: flags that are `true` when bare and never
/// consume the next token (`--k=v` still gives them a value). The reference's
/// parser passes `["json"]` for `exec` and nothing for every other stage.
pub fn switches_of(name: &str) -> &'static [&'static str] {
    match name {
        "exec" => &["json"],
        _ => &[],
    }
}

/// Turn a stage's tokens (after its name) into [`Args`], with no switches.
///
/// `--k=v` splits at the first `=`; `--k v` consumes the next token unless it
/// starts with `--`; otherwise `--k` is `true`. Values are never converted.
pub fn parse_args(tokens: &[Token]) -> Args {
    parse_args_with(tokens, &[])
}

/// Where a stage's `--flag` tokens sit in the pipeline text, for diagnostics
/// that point at a flag (an unknown flag, a bad value).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FlagSpans {
    /// Each flag token, in order: the flag's name and the span of its token
    /// (`--name` or `--name=value`; a value in the next token is not included).
    pub flags: Vec<(String, Span)>,
    /// Where the first positional token starts, if there is one.
    pub first_positional: Option<usize>,
}

impl FlagSpans {
    /// The span of the first `--name` token.
    pub fn of(&self, name: &str) -> Option<&Span> {
        self.flags.iter().find(|(k, _)| k == name).map(|(_, s)| s)
    }

    /// Whether flag `name` was first written after a positional token.
    pub fn after_positional(&self, name: &str) -> bool {
        match (self.of(name), self.first_positional) {
            (Some(span), Some(first)) => span.start > first,
            _ => false,
        }
    }
}

/// [`parse_args`], except that the flags named in `switches` never take a value
/// from the next token.
pub fn parse_args_with(tokens: &[Token], switches: &[&str]) -> Args {
    parse_args_spanned(tokens, switches).0
}

/// [`parse_args_with`], also returning where each flag token sits.
pub fn parse_args_spanned(tokens: &[Token], switches: &[&str]) -> (Args, FlagSpans) {
    let mut args = Args::default();
    let mut spans = FlagSpans::default();
    let mut i = 0;
    while i < tokens.len() {
        let tok = &tokens[i].text;
        if let Some(flag) = tok.strip_prefix("--") {
            let name = flag.split_once('=').map_or(flag, |(k, _)| k);
            spans.flags.push((name.to_string(), tokens[i].span.clone()));
            if let Some((k, v)) = flag.split_once('=') {
                args.set(k.to_string(), FlagValue::Str(v.to_string()));
            } else {
                match tokens.get(i + 1) {
                    Some(next) if !next.text.starts_with("--") && !switches.contains(&flag) => {
                        args.set(flag.to_string(), FlagValue::Str(next.text.clone()));
                        i += 1;
                    }
                    _ => args.set(flag.to_string(), FlagValue::Bool(true)),
                }
            }
        } else {
            spans.first_positional.get_or_insert(tokens[i].span.start);
            args.positional.push(tok.clone());
        }
        i += 1;
    }
    (args, spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Args {
        let tokens: Vec<Token> = words
            .iter()
            .map(|w| Token {
                text: w.to_string(),
                span: 0..0,
            })
            .collect();
        parse_args(&tokens)
    }

    #[test]
    fn greedy_flags() {
        let a = args(&["--json", "echo [1]"]);
        assert_eq!(a.str("json"), Some("echo [1]"));
        let a = args(&["--json", "--shell", "x"]);
        assert_eq!(a.flag("json"), Some(&FlagValue::Bool(true)));
        assert_eq!(a.str("shell"), Some("x"));
        let a = args(&["--n", "-5", "-x", "--k=", "--a=b=c"]);
        assert_eq!(a.str("n"), Some("-5"));
        assert_eq!(a.positional, ["-x"]);
        assert_eq!(a.str("k"), Some(""));
        assert_eq!(a.str("a"), Some("b=c"));
    }

    #[test]
    fn switches_never_take_the_next_token() {
        let tokens: Vec<Token> = ["--json", "gh", "pr", "--json", "number", "--stdin", "raw"]
            .iter()
            .map(|w| Token {
                text: w.to_string(),
                span: 0..0,
            })
            .collect();
        let a = parse_args_with(&tokens, switches_of("exec"));
        assert_eq!(a.flag("json"), Some(&FlagValue::Bool(true)));
        assert_eq!(a.positional, ["gh", "pr", "number"]);
        assert_eq!(a.str("stdin"), Some("raw"));
        // Every other stage stays greedy.
        assert!(switches_of("where").is_empty());
        assert_eq!(parse_args(&tokens).str("json"), Some("number"));
        // `--json=v` still sets a value.
        assert_eq!(args(&["--json=yes"]).str("json"), Some("yes"));
    }

    #[test]
    fn repeated_flags_keep_position_last_value_wins() {
        let a = args(&["--n", "1", "--m", "--n", "2"]);
        assert_eq!(a.flags[0], ("n".to_string(), FlagValue::Str("2".into())));
        assert_eq!(a.flags.len(), 2);
    }

    #[test]
    fn double_dash_is_an_empty_key() {
        let a = args(&["--", "x"]);
        assert_eq!(a.str(""), Some("x"));
    }
}
