//! Colour on terminals. `--color auto|always|never` (a leading global flag,
//! default `auto`) decides; in `auto`, text is coloured only when the stream
//! it goes to is a terminal, `TERM` is not `dumb` and `NO_COLOR` is unset or
//! empty (<https://no-color.org>). Tool-mode envelopes and anything parsed
//! by programs are never coloured.

use std::io::IsTerminal;
use std::sync::OnceLock;

/// When to colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    Auto,
    Always,
    Never,
}

static CHOICE: OnceLock<Choice> = OnceLock::new();

/// Which stream a text goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// A style: an SGR sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// Errors, refusals, failed checks.
    Red,
    /// Passed checks.
    Green,
    /// Warnings and prompts that wait for a human.
    Yellow,
    /// Hints and commands to type.
    Cyan,
    /// Headings.
    Bold,
    /// Secondary detail.
    Dim,
}

impl Style {
    fn code(self) -> &'static str {
        match self {
            Style::Red => "1;31",
            Style::Green => "32",
            Style::Yellow => "33",
            Style::Cyan => "36",
            Style::Bold => "1",
            Style::Dim => "2",
        }
    }
}

/// Take a leading `--color WHEN` / `--color=WHEN` off `args` for the rest of
/// the process.
pub fn take_color_flag(args: Vec<String>) -> std::result::Result<Vec<String>, String> {
    let Some(first) = args.first() else {
        return Ok(args);
    };
    let (value, rest) = if first == "--color" {
        (args.get(1).cloned().unwrap_or_default(), 2)
    } else if let Some(v) = first.strip_prefix("--color=") {
        (v.to_string(), 1)
    } else {
        return Ok(args);
    };
    let choice = match value.as_str() {
        "auto" => Choice::Auto,
        "always" => Choice::Always,
        "never" => Choice::Never,
        other => {
            return Err(format!(
                "--color must be auto, always or never (got {other:?})"
            ))
        }
    };
    let _ = CHOICE.set(choice);
    Ok(args[rest.min(args.len())..].to_vec())
}

/// Whether text for `stream` is coloured.
pub fn enabled(stream: Stream) -> bool {
    match CHOICE.get().copied().unwrap_or(Choice::Auto) {
        Choice::Always => true,
        Choice::Never => false,
        Choice::Auto => {
            let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
            let dumb = std::env::var_os("TERM").is_some_and(|t| t == "dumb");
            let terminal = match stream {
                Stream::Stdout => std::io::stdout().is_terminal(),
                Stream::Stderr => std::io::stderr().is_terminal(),
            };
            terminal && !no_color && !dumb
        }
    }
}

/// `text` in `style` when `stream` is coloured, else as it is.
pub fn paint(text: &str, style: Style, stream: Stream) -> String {
    if text.is_empty() || !enabled(stream) {
        return text.to_string();
    }
    format!("\x1b[{}m{text}\x1b[0m", style.code())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_is_taken_and_checked() {
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            take_color_flag(words(&["--color=never", "version"])).unwrap(),
            ["version"]
        );
        assert!(take_color_flag(words(&["--color", "rainbow"])).is_err());
        assert_eq!(
            take_color_flag(words(&["run", "--color"])).unwrap(),
            ["run", "--color"]
        );
    }
}
