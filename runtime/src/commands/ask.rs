//! `ask`: the input gate. In tool mode, or without a terminal, it halts with
//! an input request; the response (checked against the schema on resume)
//! becomes the single item passed on. At a terminal it asks directly.

use super::{
    collect, interactive, Command, Example, FlagSpec, Halt, ItemStream, Output, Signature,
};
use crate::dsl::Args;
use crate::error::{Error, Result};
use crate::kernel::{Context, Mode};
use crate::schema::Schema;
use crate::value::{to_js_json, Item};
use serde_json::json;

/// `ask [--prompt P] [--schema JSON] [--subject-from-stdin] [--emit]`.
pub struct Ask;

const HELP: &str = "ask — pause and request structured input from the user\n\nUsage:\n  ... | ask --prompt \"Approve, reject, or send feedback:\"\n  ... | ask --prompt \"Feedback?\" --schema '{\"type\":\"object\",\"properties\":{\"decision\":{\"type\":\"string\"},\"feedback\":{\"type\":\"string\"}},\"required\":[\"decision\"]}'\n  ... | ask --subject-from-stdin --prompt \"Review this draft:\"\n\nNotes:\n  - In tool mode (or non-interactive), emits a needs_input envelope and halts.\n  - Use --schema to constrain the response shape (JSON Schema).\n  - Use --subject-from-stdin to embed the current pipeline value as preview text.";

/// The schema used when `--schema` is not given.
pub fn default_schema() -> Item {
    json!({
        "type": "object",
        "properties": {
            "decision": {"type": "string", "enum": ["approve", "reject", "redraft"]},
            "feedback": {"type": "string", "description": "Feedback for redraft"}
        },
        "required": ["decision"]
    })
}

impl Ask {
    fn schema(args: &Args) -> Result<Item> {
        let Some(raw) = args.flag("schema").filter(|v| !v.is_bare()) else {
            return Ok(default_schema());
        };
        let parsed: Item = serde_json::from_str(raw.as_str())
            .map_err(|_| Error::runtime("ask --schema must be valid JSON"))?;
        if !parsed.is_object() {
            return Err(Error::runtime(
                "ask --schema must decode to a JSON schema object",
            ));
        }
        Schema::compile(&parsed).map_err(|_| Error::runtime("ask response schema is invalid"))?;
        Ok(parsed)
    }
}

impl Command for Ask {
    fn signature(&self) -> Signature {
        Signature {
            name: "ask",
            description: "Pause and request structured input from the user",
            flags: &[
                FlagSpec {
                    name: "prompt",
                    value: Some("text"),
                    kind: super::FlagType::Text,
                    description: "Question to show (default \"Input required\")",
                },
                FlagSpec {
                    name: "schema",
                    value: Some("json"),
                    kind: super::FlagType::Json,
                    description: "JSON Schema the response must match",
                },
                FlagSpec {
                    name: "subject-from-stdin",
                    value: None,
                    kind: super::FlagType::Switch,
                    description: "Show the input items as the subject",
                },
                FlagSpec {
                    name: "emit",
                    value: None,
                    kind: super::FlagType::Switch,
                    description: "Always emit an input request and halt",
                },
            ],
            positional: None,
            side_effects: &[],
        }
    }

    fn examples(&self) -> &'static [Example] {
        &[
            Example {
                description: "without a terminal (and with --emit) the run halts with an input request; resume --response-json answers it with JSON matching the schema",
                pipeline: r#"ask --prompt 'Which label?' --schema '{"type":"object","properties":{"label":{"type":"string"}},"required":["label"]}'"#,
                input: "[]",
                output: r#"[{"type": "input_request", "prompt": "Which label?", "responseSchema": {"type": "object", "properties": {"label": {"type": "string"}}, "required": ["label"]}, "items": []}]"#,
            },
            Example {
                description: "--subject-from-stdin shows the items as the subject of the question",
                pipeline: "ask --subject-from-stdin --prompt 'Redraft?'",
                input: r#"["Dear Ann, ..."]"#,
                output: r#"[{"type": "input_request", "prompt": "Redraft?", "responseSchema": {"type": "object", "properties": {"decision": {"type": "string", "enum": ["approve", "reject", "redraft"]}, "feedback": {"type": "string", "description": "Feedback for redraft"}}, "required": ["decision"]}, "subject": {"text": "Dear Ann, ..."}, "items": ["Dear Ann, ..."]}]"#,
            },
        ]
    }

    fn flag_aliases(&self) -> &'static [&'static str] {
        &["subjectFromStdin"]
    }

    fn help(&self) -> &'static str {
        HELP
    }

    fn validate(&self, args: &Args) -> Result<()> {
        Self::schema(args).map(|_| ())
    }

    fn run(&self, args: &Args, input: ItemStream, ctx: &Context) -> Result<Output> {
        let prompt = args
            .flag("prompt")
            .filter(|v| !v.is_bare())
            .map_or("Input required", |v| v.as_str())
            .to_string();
        let schema = Self::schema(args)?;
        let items = collect(input)?;
        let subject = (args.is_set("subject-from-stdin") || args.is_set("subjectFromStdin"))
            .then(|| {
                let text: String = items
                    .iter()
                    .map(|i| i.as_str().map_or_else(|| to_js_json(i), str::to_string))
                    .collect::<Vec<_>>()
                    .join("\n");
                json!({"text": text.chars().take(2000).collect::<String>()})
            })
            .filter(|_| !items.is_empty());
        if args.is_set("emit") || ctx.mode == Mode::Tool || !ctx.interactive {
            return Ok(Output::Halt(Halt::Input {
                prompt,
                schema,
                subject,
                items,
            }));
        }
        let compiled = Schema::compile(&schema)
            .map_err(|_| Error::runtime("ask response schema is invalid"))?;
        let line = interactive::ask_line(&format!("{prompt}\n> "), ctx)?;
        let candidates = match serde_json::from_str::<Item>(&line) {
            Ok(Item::String(s)) => vec![json!(s), json!({"decision": s})],
            Ok(v) => vec![v],
            Err(_) => vec![json!(line), json!({"decision": line})],
        };
        let mut first_violation = None;
        for candidate in candidates {
            match compiled.check(&candidate) {
                Ok(()) => return Ok(Output::Items(super::stream_of(vec![candidate]))),
                Err(v) => {
                    first_violation.get_or_insert(v);
                }
            }
        }
        let v = first_violation.expect("at least one candidate");
        Err(Error::runtime(format!(
            "ask response failed schema validation at {}: {}",
            v.path, v.message
        )))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn examples() {
        super::super::examples::check_examples(&super::Ask);
    }
}
