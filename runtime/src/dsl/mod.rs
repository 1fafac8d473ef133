//! The pipeline language: `cmd --flag value positional | next-cmd …`.
//!
//! Parsing follows the reference grammar exactly (spec §1.2): `|` is split first,
//! outside quotes; each stage is then tokenised (quotes removed, empty tokens
//! dropped); flags are greedy, except `exec --json`, a switch as in the
//! reference. Every token keeps its byte span in the original
//! text so that errors can point at it (see [`diagnostic`]).

mod args;
pub mod diagnostic;
mod split;
mod tokenize;

pub use args::{
    parse_args, parse_args_spanned, parse_args_with, switches_of, Args, FlagSpans, FlagValue,
};

use crate::error::{Error, Result, Span};

/// A parsed pipeline: one or more stages.
#[derive(Debug, Clone, PartialEq)]
pub struct Pipeline {
    pub stages: Vec<Stage>,
}

/// One stage: a command name and its arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct Stage {
    /// The command name (first token, quotes removed).
    pub name: String,
    /// Flags and positionals after the name.
    pub args: Args,
    /// The stage text, trimmed, as written.
    pub raw: String,
    /// Where `raw` sits in the pipeline text.
    pub span: Span,
    /// Where the command name sits in the pipeline text.
    pub name_span: Span,
    /// Where each `--flag` token sits, for diagnostics.
    pub flag_spans: FlagSpans,
}

/// A token after quote removal, with its span in the pipeline text.
#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    pub text: String,
    pub span: Span,
}

/// Parse pipeline text into stages.
///
/// Errors (`Empty pipeline`, `Empty command stage`, `Unclosed quote`) are
/// [`Error::Parse`] with the span of the offending character.
pub fn parse(text: &str) -> Result<Pipeline> {
    let parts = split::split_pipes(text)?;
    if parts.is_empty() {
        return Err(Error::parse_at("Empty pipeline", 0..text.len()));
    }
    let mut stages = Vec::with_capacity(parts.len());
    for part in parts {
        let tokens = tokenize::tokenize(&text[part.span.clone()], part.span.start)?;
        let Some((first, rest)) = tokens.split_first() else {
            return Err(Error::parse_at(
                "Empty command stage",
                part.separator_span(),
            ));
        };
        let (args, flag_spans) = parse_args_spanned(rest, switches_of(&first.text));
        stages.push(Stage {
            name: first.text.clone(),
            args,
            raw: text[part.span.clone()].to_string(),
            span: part.span.clone(),
            name_span: first.span.clone(),
            flag_spans,
        });
    }
    Ok(Pipeline { stages })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(text: &str) -> Vec<String> {
        parse(text)
            .unwrap()
            .stages
            .into_iter()
            .map(|s| s.name)
            .collect()
    }

    fn message(text: &str) -> String {
        parse(text).unwrap_err().to_string()
    }

    #[test]
    fn splits_on_pipes_outside_quotes() {
        assert_eq!(names("a | b 'x|y' | c \"p|q\""), ["a", "b", "c"]);
        let p = parse("a | b 'x|y'").unwrap();
        assert_eq!(p.stages[1].args.positional, ["x|y"]);
        assert_eq!(p.stages[1].raw, "b 'x|y'");
    }

    #[test]
    fn trailing_pipe_is_ignored_but_empty_stages_are_errors() {
        assert_eq!(names("a |"), ["a"]);
        assert_eq!(message("a || b"), "Empty command stage");
        assert_eq!(message("| a"), "Empty command stage");
        assert_eq!(message("a | \"\" | b"), "Empty command stage");
        assert_eq!(message("   "), "Empty pipeline");
        assert_eq!(message(""), "Empty pipeline");
    }

    #[test]
    fn unclosed_quotes_point_at_the_quote() {
        let e = parse("exec 'abc").unwrap_err();
        assert_eq!(e.to_string(), "Unclosed quote");
        assert_eq!(e.span().unwrap().start, 5);
        assert_eq!(message("a 'x\\'"), "Unclosed quote");
        assert_eq!(message("a \"x\\\""), "Unclosed quote");
    }

    #[test]
    fn spans_point_into_the_original_text() {
        let text = "exec --json x |  where a=1";
        let p = parse(text).unwrap();
        assert_eq!(&text[p.stages[1].name_span.clone()], "where");
        assert_eq!(&text[p.stages[1].span.clone()], "where a=1");
    }
}
