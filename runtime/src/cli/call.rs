//! `lobster call`: one agent tool call (the JSON object an OpenClaw-style
//! gateway sends to the `lobster` tool) in, one envelope out.
//!
//! ```json
//! {"action":"run","pipeline":"…","cwd":"sub","timeoutMs":30000,"maxStdoutBytes":512000,"argsJson":"{}"}
//! {"action":"resume","token":"…","approve":true}
//! ```
//! Parsing and running live in [`crate::app`] (shared with `lobster mcp`);
//! this file reads the request, arms the signal handlers and prints.

use super::help;
use super::output::{pretty_line, write_once, Printer};
use crate::app::{self, Settings, StartOptions};
use crate::error::Error;
use crate::kernel::{Cancel, Mode};
use std::io::Read;
use std::sync::Arc;

pub(super) fn call(argv: &[String]) -> i32 {
    if argv.iter().any(|a| a == "--help" || a == "-h") {
        write_once(help::CALL_HELP, "");
        return 0;
    }
    let printer = Printer {
        mode: Mode::Tool,
        max_bytes: None,
        text: None,
    };
    let raw = match argv.first() {
        Some(text) => Ok(text.clone()),
        None => {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .map(|_| s)
                .map_err(Error::from)
        }
    };
    let call = match raw.and_then(|text| app::parse_call(&text)) {
        Ok(c) => c,
        Err(e) => return printer.error(&e),
    };
    let cancel = Cancel::default();
    // Without handlers a signal still ends the process, just without the envelope.
    let _ = crate::process::install_signal_handlers(&cancel);
    let opts = StartOptions {
        cancel,
        ..StartOptions::default()
    };
    let reply = app::start(Arc::new(Settings::default()), call, opts)
        .wait()
        .reply();
    write_once(&pretty_line(&reply.envelope), "");
    reply.exit_code
}
