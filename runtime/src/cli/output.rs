//! The only place that prints a run's result: human text or one tool
//! envelope, and the exit code. A global latch makes sure exactly one
//! result is printed even when a watchdog ends the process early.

use crate::dsl::diagnostic::caret;
use crate::envelope::{error_envelope, error_envelope_of, Status};
use crate::error::Error;
use crate::kernel::Mode;
use crate::resume::pause::halted_item;
use crate::resume::Paused;
use crate::value::{to_js_json_pretty, Item};
use std::io::Write;
use std::sync::Mutex;

static EMITTED: Mutex<bool> = Mutex::new(false);

/// Write the final stdout/stderr text once per process; later calls print nothing.
pub fn write_once(stdout: &str, stderr: &str) {
    let mut done = EMITTED.lock().unwrap_or_else(|p| p.into_inner());
    if *done {
        return;
    }
    *done = true;
    let _ = std::io::stdout().write_all(stdout.as_bytes());
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().write_all(stderr.as_bytes());
    let _ = std::io::stderr().flush();
}

/// Print a subcommand's result once — its text on stdout with `code`, or
/// the error for humans on stderr with its exit code — and return the code.
pub fn finish(result: crate::error::Result<(String, i32)>) -> i32 {
    match result {
        Ok((text, code)) => {
            write_once(&text, "");
            code
        }
        Err(e) => {
            write_once("", &human_error(&e, None));
            e.exit_code()
        }
    }
}

/// Print a text result (exit 0) or the error: [`finish`].
pub fn finish_text(result: crate::error::Result<String>) -> i32 {
    finish(result.map(|text| (text, 0)))
}

/// How to print one result.
#[derive(Debug, Clone)]
pub struct Printer {
    pub mode: Mode,
    /// `--max-stdout-bytes` after defaults, if any.
    pub max_bytes: Option<usize>,
    /// The pipeline text, for caret diagnostics.
    pub text: Option<String>,
}

/// The journal of the run this process makes, for human mode's stderr.
static RUN: std::sync::OnceLock<crate::journal::Journal> = std::sync::OnceLock::new();

/// Name the run this process journals: once it has begun, human mode ends
/// its stderr with `run ID` (tool mode prints only the envelope, as the
/// reference does).
pub fn announce_run(journal: &crate::journal::Journal) {
    let _ = RUN.set(journal.clone());
}

fn with_run_line(mut err: String) -> String {
    if let Some(id) = RUN.get().filter(|j| j.is_on()).and_then(|j| j.run_id()) {
        if !err.is_empty() && !err.ends_with('\n') {
            err.push('\n');
        }
        err.push_str(&format!("run {id}\n"));
    }
    err
}

impl Printer {
    /// Print `result`; return the exit code.
    pub fn finish(&self, result: crate::Result<Paused>) -> i32 {
        match result {
            Ok(paused) => self.success(paused),
            Err(e) => self.error(&e),
        }
    }

    fn success(&self, paused: Paused) -> i32 {
        match self.mode {
            Mode::Tool => self.envelope(&paused.envelope.to_json()),
            Mode::Human => {
                let envelope = &paused.envelope;
                let (out, err) = match envelope.status {
                    Status::Ok => (
                        paused
                            .rendered
                            .clone()
                            .unwrap_or_else(|| pretty_line(&Item::Array(envelope.output.clone()))),
                        String::new(),
                    ),
                    Status::NeedsApproval | Status::NeedsInput => {
                        let item = halted_item(envelope).unwrap_or(Item::Null);
                        let prefix = paused.rendered.clone().unwrap_or_default();
                        (
                            format!("{prefix}{}", pretty_line(&Item::Array(vec![item]))),
                            resume_hint(envelope),
                        )
                    }
                    Status::Cancelled => (pretty_line(&envelope.to_json()), String::new()),
                };
                if self.max_bytes.is_some_and(|cap| out.len() > cap) {
                    return self.error(&Error::runtime("lobster stdout exceeded maxStdoutBytes"));
                }
                write_once(&out, &with_run_line(err));
                0
            }
        }
    }

    /// Print a tool envelope, enforcing the output cap on its size.
    pub fn envelope(&self, value: &Item) -> i32 {
        let text = pretty_line(value);
        if self.max_bytes.is_some_and(|cap| text.len() > cap) {
            let over = error_envelope_of(
                "runtime_error",
                "lobster runtime result exceeded maxStdoutBytes",
            );
            write_once(&pretty_line(&over), "");
            return 1;
        }
        write_once(&text, "");
        if value.get("ok") == Some(&Item::Bool(false)) {
            let kind = value.pointer("/error/type").and_then(Item::as_str);
            return if kind == Some("parse_error") { 2 } else { 1 };
        }
        0
    }

    /// Print an error in this printer's mode; return its exit code.
    pub fn error(&self, e: &Error) -> i32 {
        match self.mode {
            Mode::Tool => {
                write_once(&capped_error_text(e, self.max_bytes), "");
            }
            Mode::Human => write_once("", &with_run_line(human_error(e, self.text.as_deref()))),
        }
        e.exit_code()
    }
}

/// The line (stderr, human mode) that says how to go on from a pause: the
/// short `--id` for an approval when there is one (the token works too).
pub fn resume_hint(envelope: &crate::envelope::Envelope) -> String {
    use super::color::{paint, Stream, Style};
    let (what, command) = match (&envelope.requires_approval, &envelope.requires_input) {
        (Some(a), _) => {
            let target = match &a.approval_id {
                Some(id) => format!("--id {id}"),
                None => format!("--token {}", a.resume_token),
            };
            (
                "Paused for approval. Approve with",
                format!("lobster resume {target} --approve yes"),
            )
        }
        (None, Some(i)) => (
            "Paused for input. Answer with",
            format!(
                "lobster resume --token {} --response-json '<json>'",
                i.resume_token
            ),
        ),
        (None, None) => return String::new(),
    };
    let deny = if envelope.requires_approval.is_some() {
        " (or --approve no to deny)"
    } else {
        ""
    };
    format!(
        "{what}: {}{deny}\n",
        paint(&command, Style::Cyan, Stream::Stderr)
    )
}

/// The error envelope's text, its message shortened so the whole envelope
/// stays within `max_bytes` (`--max-stdout-bytes`): the cap holds for errors
/// too, whatever text an error quotes.
pub fn capped_error_text(e: &Error, max_bytes: Option<usize>) -> String {
    let text = pretty_line(&error_envelope(e));
    let Some(cap) = max_bytes.filter(|cap| text.len() > *cap) else {
        return text;
    };
    let message = e.to_string();
    let empty = pretty_line(&error_envelope_of(e.kind(), ""));
    // JSON escaping can grow a character up to six bytes (`\u001f`).
    let room = cap.saturating_sub(empty.len() + 64) / 6;
    let mut end = room.min(message.len());
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    let short = format!(
        "{}… ({} more bytes; the message exceeded maxStdoutBytes)",
        &message[..end],
        message.len() - end
    );
    pretty_line(&error_envelope_of(e.kind(), &short))
}

/// `Parse error: …` / `Error: …`, then a caret line under the offending text
/// and a hint when known.
/// Coloured on a terminal (see [`super::color`]).
pub fn human_error(e: &Error, text: Option<&str>) -> String {
    use super::color::{paint, Stream, Style};
    let label = if matches!(e, Error::Parse { .. }) {
        "Parse error:"
    } else {
        "Error:"
    };
    let mut out = format!("{} {e}\n", paint(label, Style::Red, Stream::Stderr));
    if let (Some(span), Some(text)) = (e.span(), text) {
        let drawn = caret(text, span);
        // The text line as written, the caret line in colour.
        match drawn.split_once('\n') {
            Some((line, carets)) => {
                out.push_str(line);
                out.push('\n');
                out.push_str(&paint(carets, Style::Red, Stream::Stderr));
            }
            None => out.push_str(&drawn),
        }
        out.push('\n');
    }
    if let Some(hint) = e.location().and_then(|l| l.hint.as_deref()) {
        out.push_str(&format!(
            "  {} {hint}\n",
            paint("hint:", Style::Cyan, Stream::Stderr)
        ));
    }
    out
}

/// `JSON.stringify(v, null, 2) + "\n"`.
pub fn pretty_line(v: &Item) -> String {
    let mut s = to_js_json_pretty(v);
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_envelopes_stay_within_the_output_cap() {
        let e = Error::runtime(format!("step x failed: {}", "\u{1}é".repeat(100_000)));
        let text = capped_error_text(&e, Some(1024));
        assert!(text.len() <= 1024, "{}", text.len());
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["error"]["type"], "runtime_error");
        let msg = v["error"]["message"].as_str().unwrap();
        assert!(msg.starts_with("step x failed: "), "{msg}");
        assert!(
            msg.ends_with("the message exceeded maxStdoutBytes)"),
            "{msg}"
        );
        // Under the cap (or without one) the envelope is untouched.
        let small = Error::runtime("boom");
        assert_eq!(
            capped_error_text(&small, Some(1024)),
            pretty_line(&error_envelope(&small))
        );
        assert_eq!(
            capped_error_text(&e, None),
            pretty_line(&error_envelope(&e))
        );
    }
}
