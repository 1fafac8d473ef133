//! First pass: split pipeline text on `|` outside quotes.

use crate::error::{Error, Result, Span};

/// One stage's text range (already trimmed) and the `|` that ended it, if any.
pub(super) struct Part {
    pub span: Span,
    /// Byte offset of the `|` before this part (for "Empty command stage").
    pub pipe_before: Option<usize>,
    pub pipe_after: Option<usize>,
}

impl Part {
    /// The span to blame when this part is empty.
    pub fn separator_span(&self) -> Span {
        match (self.pipe_before, self.pipe_after) {
            (_, Some(p)) => p..p + 1,
            (Some(p), None) => p..p + 1,
            (None, None) => self.span.clone(),
        }
    }
}

/// Split on `|` outside `'…'`/`"…"`. Inside quotes a backslash and the next
/// character are copied as a pair, so `\'` and `\"` do not close the quote.
/// A trailing empty part is dropped; an empty part elsewhere is kept (and
/// rejected by the caller).
pub(super) fn split_pipes(text: &str) -> Result<Vec<Part>> {
    let bytes = text.as_bytes();
    let mut parts = Vec::new();
    let mut start = 0;
    let mut quote: Option<(u8, usize)> = None;
    let mut pipe_before = None;
    let mut i = 0;
    while i < bytes.len() {
        let ch = bytes[i];
        if let Some((q, _)) = quote {
            if ch == b'\\' && i + 1 < bytes.len() {
                i += 2;
                continue;
            }
            if ch == q {
                quote = None;
            }
        } else if ch == b'"' || ch == b'\'' {
            quote = Some((ch, i));
        } else if ch == b'|' {
            parts.push(Part {
                span: trim(text, start, i),
                pipe_before,
                pipe_after: Some(i),
            });
            pipe_before = Some(i);
            start = i + 1;
        }
        i += 1;
    }
    if let Some((_, at)) = quote {
        return Err(Error::parse_at("Unclosed quote", at..text.len()));
    }
    let last = trim(text, start, text.len());
    if !last.is_empty() {
        parts.push(Part {
            span: last,
            pipe_before,
            pipe_after: None,
        });
    }
    Ok(parts)
}

/// The span of `text[start..end]` without surrounding whitespace.
fn trim(text: &str, start: usize, end: usize) -> Span {
    let slice = &text[start..end];
    let lead = slice.len() - slice.trim_start().len();
    let trimmed = slice.trim();
    (start + lead)..(start + lead + trimmed.len())
}
