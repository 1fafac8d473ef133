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
