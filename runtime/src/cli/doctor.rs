//! `lobster doctor`: proves tool mode works end to end and checks what the
//! sandbox depends on (`crate::app::doctor` examines; this door parses the
//! flags, builds the probe's context and renders the report).
//!
//! `--steps DIR` (repeatable) and `--policy FILE` are read as by `run`; every
//! other word is a note, as in the reference (a mistyped `--flag` is refused).
//! On a terminal it prints a report for a person instead; `--json` (or a
//! pipe) gives the envelope `{toolMode, protocolVersion, version, commit,
//! wasmtime, notes?, problems, checks}`.

use super::output::Printer;
use super::run::build_context;
use crate::app::doctor::{examine, Check};
use crate::envelope::{error_envelope_of, Envelope};
use crate::kernel::Mode;
use serde_json::{json, Map, Value};
use std::io::IsTerminal;

/// Run `lobster doctor …`; returns the exit code.
pub(super) fn doctor(argv: &[String]) -> i32 {
    let printer = Printer {
        mode: Mode::Tool,
        max_bytes: None,
        text: None,
    };
    let mut notes = Vec::new();
    let mut steps = Vec::new();
    let mut policy = None;
    let mut json_out = false;
    let mut i = 0;
    while i < argv.len() {
        let (name, inline) = super::argv::split_flag(&argv[i]);
        i += 1;
        match name {
            "--json" if inline.is_none() => json_out = true,
            "--steps" | "--policy" => {
                let Some(value) = super::argv::take_value(inline, argv, &mut i) else {
                    return printer.error(&crate::Error::parse(format!(
                        "lobster doctor {name} requires a value"
                    )));
                };
                if name == "--steps" {
                    steps.push(value);
                } else {
                    policy = Some(value);
                }
            }
            // A mistyped flag is not a note (the reference keeps any word).
            flag if flag.starts_with("--") => {
                let known = super::subcommands::find("doctor").map_or(&[][..], |s| s.flags);
                let e = super::subcommands::unknown_flag("doctor", flag, known);
                return match json_out || !std::io::stdout().is_terminal() {
                    true => printer.error(&e),
                    false => {
                        super::output::write_once("", &super::output::human_error(&e, None));
                        e.exit_code()
                    }
                };
            }
            _ => notes.push(argv[i - 1].clone()),
        }
    }
    // A person at a terminal gets a report to read; programs the envelope.
    let human = !json_out && std::io::stdout().is_terminal();
    let fail = |message: &str| {
        if human {
            let label = super::color::paint(
                "Error:",
                super::color::Style::Red,
                super::color::Stream::Stderr,
            );
            super::output::write_once(
                "",
                &format!("{label} lobster doctor: tool mode does not work: {message}\n"),
            );
            return 1;
        }
        printer.envelope(&error_envelope_of("doctor_error", message))
    };
    let limits = crate::app::options::LimitArgs {
        policy: policy.clone(),
        ..Default::default()
    };
    let sandbox = crate::app::options::SandboxArgs {
        steps: steps.clone(),
        ..Default::default()
    };
    let ctx = build_context(Mode::Tool, &limits, None, Some(&sandbox));
    let checks = match examine(ctx, &steps) {
        Ok(checks) => checks,
        Err(message) => return fail(&message),
    };
    let mut report = Map::new();
    report.insert("toolMode".into(), json!(true));
    report.insert(
        "protocolVersion".into(),
        json!(crate::envelope::PROTOCOL_VERSION),
    );
    report.insert("version".into(), json!(crate::VERSION));
    report.insert("commit".into(), json!(crate::COMMIT));
    report.insert("wasmtime".into(), json!(crate::WASMTIME_VERSION));
    if !notes.is_empty() {
        report.insert("notes".into(), json!(notes));
    }
    let problems = checks.iter().filter(|c| !c.ok).count();
    report.insert("problems".into(), json!(problems));
    report.insert(
        "checks".into(),
        Value::Array(checks.iter().map(Check::to_json).collect()),
    );
    if human {
        super::output::write_once(&render_human(&report, &checks), "");
        return 0;
    }
    printer.envelope(&Envelope::ok(vec![Value::Object(report)]).to_json())
}

/// The report for a person at a terminal: one line per check, its fix
/// under it, and a summary.
fn render_human(report: &Map<String, Value>, checks: &[Check]) -> String {
    use super::color::{paint, Stream, Style};
    let out = Stream::Stdout;
    let mut text = format!(
        "{} {} (commit {}, wasmtime {})\n",
        paint("lobster", Style::Bold, out),
        crate::VERSION,
        crate::COMMIT,
        crate::WASMTIME_VERSION
    );
    text.push_str(&format!(
        "  {}  {:<16} exec --json and the tool envelope work\n",
        paint("ok", Style::Green, out),
        "tool mode"
    ));
    for c in checks {
        let mark = if c.ok {
            paint("ok", Style::Green, out)
        } else {
            paint("!!", Style::Red, out)
        };
        text.push_str(&format!("  {mark}  {:<16} {}\n", c.name, c.detail));
        if let Some(fix) = &c.fix {
            text.push_str(&format!(
                "      {:<16} {} {fix}\n",
                "",
                paint("fix:", Style::Cyan, out)
            ));
        }
    }
    if let Some(Value::Array(notes)) = report.get("notes") {
        let notes: Vec<&str> = notes.iter().filter_map(Value::as_str).collect();
        text.push_str(&format!("  notes: {}\n", notes.join(" ")));
    }
    let problems = checks.iter().filter(|c| !c.ok).count();
    text.push_str(&match problems {
        0 => format!("All {} checks passed.\n", checks.len() + 1),
        1 => "1 problem found; its fix is above.\n".to_string(),
        n => format!("{n} problems found; each fix is above.\n"),
    });
    text.push_str("(lobster doctor --json prints this as a JSON envelope.)\n");
    text
}
