//! Render an error that points into the pipeline text, with a caret line.
//!
//! ```text
//! Parse error: Unclosed quote
//!   exec 'abc
//!        ^^^^
//! ```

use crate::error::Span;

/// The pipeline text with a `^` line under `span`. Multi-line text shows only
/// the line holding the start of the span.
pub fn caret(text: &str, span: &Span) -> String {
    let start = span.start.min(text.len());
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    let line = &text[line_start..line_end];
    let pad = text[line_start..start].chars().count();
    let end = span.end.clamp(start, line_end);
    let width = text[start..end].chars().count().max(1);
    format!("  {line}\n  {}{}", " ".repeat(pad), "^".repeat(width))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caret_under_span() {
        assert_eq!(caret("a | typo x", &(4..8)), "  a | typo x\n      ^^^^");
        assert_eq!(caret("a |", &(2..3)), "  a |\n    ^");
        assert_eq!(caret("x\ny 'z", &(4..6)), "  y 'z\n    ^^");
    }
}
