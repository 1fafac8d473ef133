//! `lobster doctor`: proves tool mode works end to end by running
//! `exec --json --shell 'echo [1]'` and answering with an envelope.

use super::output::Printer;
use super::{build_context, run_text};
use crate::envelope::{error_envelope_of, Envelope, Status};
use crate::executor::Mode;
use serde_json::{json, Map, Value};

pub(super) fn doctor(notes: &[String]) -> i32 {
    let printer = Printer {
        mode: Mode::Tool,
        max_bytes: None,
        text: None,
    };
    let check = build_context(Mode::Tool, &Default::default(), None)
        .and_then(|ctx| run_text("exec --json --shell 'echo [1]'", &ctx));
    match check {
        Ok(result)
            if result.envelope.status == Status::Ok && result.envelope.output == vec![json!(1)] =>
        {
            let mut report = Map::new();
            report.insert("toolMode".into(), json!(true));
            report.insert(
                "protocolVersion".into(),
                json!(crate::envelope::PROTOCOL_VERSION),
            );
            report.insert("version".into(), json!(crate::VERSION));
            if !notes.is_empty() {
                report.insert("notes".into(), json!(notes));
            }
            printer.envelope(&Envelope::ok(vec![Value::Object(report)]).to_json())
        }
        Ok(other) => printer.envelope(&error_envelope_of(
            "doctor_error",
            &format!(
                "unexpected result from the exec check: {:?}",
                other.envelope.output
            ),
        )),
        Err(e) => printer.envelope(&error_envelope_of("doctor_error", &e.to_string())),
    }
}
