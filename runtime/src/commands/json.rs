//! `json`: render all items as one pretty JSON array.

use super::{collect, Command, Example, ItemStream, Output, Signature};
use crate::dsl::Args;
use crate::error::Result;
use crate::kernel::Context;
use crate::value::to_js_json_pretty;
use serde_json::Value;

/// `json`.
pub struct Json;

const HELP: &str = "json — render pipeline output as JSON\n\nUsage:\n  ... | json\n";

/// `JSON.stringify(items, null, 2) + "\n"`.
fn render(items: &[Value]) -> String {
    let mut text = to_js_json_pretty(&Value::Array(items.to_vec()));
    text.push('\n');
    text
}

impl Command for Json {
    fn signature(&self) -> Signature {
        Signature {
            name: "json",
            description: "Render pipeline output as JSON",
            flags: &[],
            positional: None,
            side_effects: &[],
        }
    }

    fn help(&self) -> &'static str {
        HELP
    }

    fn examples(&self) -> &'static [Example] {
        &[
            Example {
                description: "items as a pretty array (integer-like keys first)",
                pipeline: "json",
                input: r#"[{"b": 1, "2": 2.0}, "x"]"#,
                output: r#""[\n  {\n    \"2\": 2,\n    \"b\": 1\n  },\n  \"x\"\n]\n""#,
            },
            Example {
                description: "empty input renders an empty array",
                pipeline: "json",
                input: "[]",
                output: r#""[]\n""#,
            },
        ]
    }

    fn run(&self, _args: &Args, input: ItemStream, _ctx: &Context) -> Result<Output> {
        let items = collect(input)?;
        let text = render(&items);
        Ok(Output::Rendered { text, items })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn examples() {
        super::super::examples::check_examples(&super::Json);
    }
}
