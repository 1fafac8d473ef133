//! Asking the human at the terminal (human mode with a TTY only).

use crate::error::{Error, Result};
use crate::kernel::Context;
use std::io::{BufRead, Write};
use std::sync::mpsc;
use std::time::Duration;

/// Write `prompt` to stdout and read one line from stdin.
///
/// `LOBSTER_APPROVAL_INPUT_TIMEOUT_MS` (> 0) bounds the wait:
/// `Timed out waiting for input (<ms>ms)`.
pub fn ask_line(prompt: &str, ctx: &Context) -> Result<String> {
    let mut out = std::io::stdout();
    out.write_all(prompt.as_bytes())?;
    out.flush()?;
    let timeout_ms = ctx
        .env
        .get("LOBSTER_APPROVAL_INPUT_TIMEOUT_MS")
        .map(|v| crate::value::string_to_number(v))
        .filter(|v| v.is_finite() && *v > 0.0)
        .map(|v| v.floor() as u64);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let read = std::io::stdin().lock().read_line(&mut line).map(|_| line);
        let _ = tx.send(read);
    });
    let received = match timeout_ms {
        Some(ms) => rx
            .recv_timeout(Duration::from_millis(ms))
            .map_err(|_| Error::runtime(format!("Timed out waiting for input ({ms}ms)")))?,
        None => rx.recv().map_err(|_| Error::runtime("stdin closed"))?,
    };
    Ok(received?.trim_end_matches(['\n', '\r']).to_string())
}

/// At most this many items are listed before a terminal approval prompt.
const SHOWN_ITEMS: usize = 10;
/// Each listed item (or preview line) is cut to this many characters.
const LINE_CHARS: usize = 160;
/// A preview shows at most this many lines.
const PREVIEW_LINES: usize = 40;

/// What a person at a terminal sees before `<prompt> [y/N]`: the gate's
/// preview (the plan) when it has one, else the items — each on one line,
/// long ones cut, at most ten, then how many more. Empty when there is
/// nothing to show.
pub fn approval_preview(items: &[crate::value::Item], preview: Option<&str>) -> String {
    use crate::value::{to_js_json, Item};
    let cut = |line: &str| -> String {
        if line.chars().count() <= LINE_CHARS {
            return line.to_string();
        }
        let kept: String = line.chars().take(LINE_CHARS - 1).collect();
        format!("{kept}…")
    };
    let mut out = String::new();
    match preview.filter(|p| !p.trim().is_empty()) {
        Some(text) => {
            let lines: Vec<&str> = text.lines().collect();
            for line in lines.iter().take(PREVIEW_LINES) {
                out.push_str(&format!("  {}\n", cut(line)));
            }
            if lines.len() > PREVIEW_LINES {
                out.push_str(&format!("  … {} more lines\n", lines.len() - PREVIEW_LINES));
            }
        }
        None if items.is_empty() => {}
        None => {
            let n = items.len();
            out.push_str(&format!("{n} item{}:\n", if n == 1 { "" } else { "s" }));
            for (i, item) in items.iter().take(SHOWN_ITEMS).enumerate() {
                let text = match item {
                    Item::String(s) => s.replace(['\n', '\r'], " "),
                    other => to_js_json(other),
                };
                out.push_str(&format!("  {}. {}\n", i + 1, cut(&text)));
            }
            if n > SHOWN_ITEMS {
                out.push_str(&format!("  … and {} more\n", n - SHOWN_ITEMS));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::approval_preview;
    use serde_json::json;

    #[test]
    fn items_and_previews_are_shown_cut_to_size() {
        let items: Vec<_> = (1..=12).map(|i| json!({"id": i})).collect();
        let text = approval_preview(&items, None);
        assert!(text.starts_with("12 items:\n  1. {\"id\":1}\n"), "{text}");
        assert!(
            text.ends_with("  10. {\"id\":10}\n  … and 2 more\n"),
            "{text}"
        );
        let long = "x".repeat(500);
        let text = approval_preview(&[json!(long)], None);
        assert_eq!(text.lines().nth(1).unwrap().chars().count(), 2 + 3 + 160);
        assert!(text.contains('…'));
        let text = approval_preview(&items, Some("plan: 3 labels\nplan: 1 archive"));
        assert_eq!(text, "  plan: 3 labels\n  plan: 1 archive\n");
        assert_eq!(approval_preview(&[], None), "");
    }
}
