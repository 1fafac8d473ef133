//! `approve`: the approval gate. In tool mode, or without a terminal, it
//! halts the pipeline with an approval request; at a terminal it asks.

use super::{
    collect, interactive, Command, Example, FlagSpec, Halt, ItemStream, Output, Signature,
};
use crate::dsl::Args;
use crate::error::{Error, Result};
use crate::kernel::{Context, Mode};
use crate::value::{string_to_number, to_js_json_pretty, Item};

/// `approve [--prompt P] [--emit] [--preview-from-stdin] [--limit N]`.
pub struct Approve;

const HELP: &str = "approve — require confirmation to continue\n\nUsage:\n  ... | approve --prompt \"Send these emails?\"\n  ... | approve --emit --prompt \"Send these emails?\"\n  ... | approve --emit --preview-from-stdin --limit 5 --prompt \"Proceed?\"\n\nModes:\n  - Interactive (default): prompts on TTY and passes items through if approved.\n  - Emit (--emit): returns an approval request object and stops the pipeline.\n\nNotes:\n  - In tool mode (or non-interactive), this emits an approval request and halts.\n";

impl Approve {
    fn preview_limit(args: &Args) -> usize {
        let raw = args
            .flag_any(&["limit", "previewLimit", "preview-limit"])
            .map(|v| v.as_str().to_string());
        let n = raw.map_or(5.0, |s| string_to_number(&s));
        if n.is_finite() {
            n.max(0.0) as usize
        } else {
            5
        }
    }
}

/// All-string items joined by newlines; otherwise pretty JSON of the slice.
pub fn preview_of(items: &[Item]) -> String {
    if items.is_empty() {
        return String::new();
    }
    if items.iter().all(Item::is_string) {
        return items
            .iter()
            .filter_map(Item::as_str)
            .collect::<Vec<_>>()
            .join("\n");
    }
    to_js_json_pretty(&Item::Array(items.to_vec()))
}

impl Command for Approve {
    fn signature(&self) -> Signature {
        Signature {
            name: "approve",
            description: "Require confirmation to continue",
            flags: &[
                FlagSpec {
                    name: "prompt",
                    value: Some("text"),
                    kind: super::FlagType::Text,
                    description: "Approval prompt text (default \"Approve?\")",
                },
                FlagSpec {
                    name: "emit",
                    value: None,
                    kind: super::FlagType::Switch,
                    description: "Always emit an approval request and halt",
                },
                FlagSpec {
                    name: "preview-from-stdin",
                    value: None,
                    kind: super::FlagType::Switch,
                    description: "Attach a preview of the first items",
                },
                FlagSpec {
                    name: "limit",
                    value: Some("N"),
                    kind: super::FlagType::Integer,
                    description: "How many items the preview shows (default 5)",
                },
            ],
            positional: None,
            side_effects: &[],
        }
    }

    fn examples(&self) -> &'static [Example] {
        &[
            Example {
                description: "without a terminal (and in tool mode) the run halts with an approval request holding the items; resume --approve yes passes them on",
                pipeline: "approve --prompt 'Send 2 emails?'",
                input: r#"["ann@example.com", "bob@example.com"]"#,
                output: r#"[{"type": "approval_request", "prompt": "Send 2 emails?", "items": ["ann@example.com", "bob@example.com"]}]"#,
            },
            Example {
                description: "--preview-from-stdin --limit N adds a preview of the first N items",
                pipeline: "approve --preview-from-stdin --limit 1 --prompt 'Apply?'",
                input: r#"["label 001 as bills", "archive 002"]"#,
                output: r#"[{"type": "approval_request", "prompt": "Apply?", "items": ["label 001 as bills", "archive 002"], "preview": "label 001 as bills"}]"#,
            },
        ]
    }

    fn flag_aliases(&self) -> &'static [&'static str] {
        &["previewFromStdin", "preview-limit", "previewLimit"]
    }

    fn help(&self) -> &'static str {
        HELP
    }

    fn run(&self, args: &Args, input: ItemStream, ctx: &Context) -> Result<Output> {
        let prompt = args.str("prompt").unwrap_or("Approve?").to_string();
        let items = collect(input)?;
        let emit = args.is_set("emit") || ctx.mode == Mode::Tool || !ctx.interactive;
        if emit {
            let preview = args
                .flag_any(&["preview-from-stdin", "previewFromStdin"])
                .filter(|v| v.as_str() != "false")
                .map(|_| preview_of(&items[..Self::preview_limit(args).min(items.len())]))
                .filter(|p| !p.is_empty());
            return Ok(Output::Halt(Halt::Approval {
                prompt,
                items,
                preview,
            }));
        }
        // What is being approved, then the question (the reference asked
        // without showing anything).
        let preview = args
            .flag_any(&["preview-from-stdin", "previewFromStdin"])
            .filter(|v| v.as_str() != "false")
            .map(|_| preview_of(&items[..Self::preview_limit(args).min(items.len())]));
        let shown = interactive::approval_preview(&items, preview.as_deref());
        let answer = interactive::ask_line(&format!("{shown}{prompt} [y/N] "), ctx)?;
        let answer = answer.trim().to_ascii_lowercase();
        if answer == "y" || answer == "yes" {
            Ok(Output::Items(super::stream_of(items)))
        } else {
            Err(Error::runtime("Not approved"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn examples() {
        super::super::examples::check_examples(&Approve);
    }

    #[test]
    fn preview_rules() {
        assert_eq!(preview_of(&[json!("a"), json!("b")]), "a\nb");
        assert_eq!(preview_of(&[json!(1)]), "[\n  1\n]");
        assert_eq!(preview_of(&[]), "");
    }
}
