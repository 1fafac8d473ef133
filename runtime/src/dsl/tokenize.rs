//! Second pass: split one stage into tokens, removing quotes.
//!
//! Not POSIX: `\'` works inside single quotes; in double quotes only `\"`, `\\`,
//! `\$` and backslash-backtick are unescaped, backslash-newline is removed, and
//! any other `\x` stays as two characters (so JSON escapes survive). Empty
//! tokens (`""`, `''`) are dropped.

use super::Token;
use crate::error::{Error, Result};

pub(super) fn tokenize(stage: &str, offset: usize) -> Result<Vec<Token>> {
    let chars: Vec<(usize, char)> = stage.char_indices().collect();
    let mut tokens = Vec::new();
    let mut current = String::new();
    let mut token_start: Option<usize> = None;
    let mut quote: Option<(char, usize)> = None;
    let mut i = 0;

    let mut push = |current: &mut String, token_start: &mut Option<usize>, end: usize| {
        if let Some(start) = token_start.take() {
            if !current.is_empty() {
                tokens.push(Token {
                    text: std::mem::take(current),
                    span: offset + start..offset + end,
                });
            }
        }
        current.clear();
    };

    while i < chars.len() {
        let (pos, ch) = chars[i];
        let next = chars.get(i + 1).map(|&(_, c)| c);
        if let Some((q, _)) = quote {
            if q == '\'' {
                if ch == '\\' && next == Some('\'') {
                    current.push('\'');
                    i += 2;
                    continue;
                }
                if ch == '\'' {
                    quote = None;
                } else {
                    current.push(ch);
                }
                i += 1;
                continue;
            }
            if ch == '\\' {
                match next {
                    Some(n @ ('"' | '\\' | '$' | '`')) => {
                        current.push(n);
                        i += 2;
                        continue;
                    }
                    Some('\n') => {
                        i += 2;
                        continue;
                    }
                    _ => current.push(ch),
                }
            } else if ch == '"' {
                quote = None;
            } else {
                current.push(ch);
            }
            i += 1;
            continue;
        }
        match ch {
            '"' | '\'' => {
                quote = Some((ch, pos));
                token_start.get_or_insert(pos);
            }
            ' ' | '\t' | '\n' | '\r' => push(&mut current, &mut token_start, pos),
            _ => {
                token_start.get_or_insert(pos);
                current.push(ch);
            }
        }
        i += 1;
    }
    if let Some((_, at)) = quote {
        return Err(Error::parse_at(
            "Unclosed quote",
            offset + at..offset + stage.len(),
        ));
    }
    push(&mut current, &mut token_start, stage.len());
    Ok(tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(s: &str) -> Vec<String> {
        tokenize(s, 0)
            .unwrap()
            .into_iter()
            .map(|t| t.text)
            .collect()
    }

    #[test]
    fn quoting_rules_of_the_reference() {
        assert_eq!(texts(r#"a"b c"d"#), ["ab cd"]);
        assert_eq!(texts(r"'it\'s'"), ["it's"]);
        assert_eq!(texts(r#""a\nb""#), [r"a\nb"]);
        assert_eq!(texts(r#""q\" \\ \$ \`""#), [r#"q" \ $ `"#]);
        assert_eq!(texts("\"line\\\ncont\""), ["linecont"]);
        assert_eq!(texts(r"a\ b"), [r"a\", "b"]);
        assert_eq!(texts(r#"x "" '' y"#), ["x", "y"]);
        assert_eq!(texts("a\tb\nc\rd"), ["a", "b", "c", "d"]);
        assert_eq!(texts(r#"'{"a":"\n"}'"#), [r#"{"a":"\n"}"#]);
    }

    #[test]
    fn spans_cover_the_written_token() {
        let t = tokenize("ab 'c d'", 10).unwrap();
        assert_eq!(t[1].span, 13..18);
    }
}
