//! A `lobster:step@0.1.0` component built straight from `wit/step.wit`
//! (not through `lobster-guest`, which targets 0.2.0): proves the host still
//! runs 0.1 components unchanged. Echoes its input and logs one line.

wit_bindgen::generate!({ world: "step", path: "../../../wit" });

use lobster::step::host;
use lobster::step::types::LogLevel;

struct Legacy;

impl Guest for Legacy {
    fn describe() -> StepInfo {
        StepInfo {
            name: "legacy.echo".into(),
            version: "0.1.0".into(),
            summary: "Echo the input items (a lobster:step@0.1.0 component)".into(),
            flags: Vec::new(),
            capabilities: Vec::new(),
        }
    }

    fn run(_args: Vec<String>, input: String) -> Result<String, StepError> {
        host::log(LogLevel::Info, "legacy 0.1 step ran");
        Ok(input)
    }
}

export!(Legacy);
