//! `approve`: the approval gate. In tool mode, or without a terminal, it
//! halts the pipeline with an approval request; at a terminal it asks.

use super::{collect, interactive, Command, FlagSpec, Halt, ItemStream, Output, Signature};
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
                    description: "Approval prompt text (default \"Approve?\")",
                },
                FlagSpec {
                    name: "emit",
                    value: None,
                    description: "Always emit an approval request and halt",
                },
                FlagSpec {
                    name: "preview-from-stdin",
                    value: None,
                    description: "Attach a preview of the first items",
                },
                FlagSpec {
                    name: "limit",
                    value: Some("N"),
                    description: "How many items the preview shows (default 5)",
                },
            ],
            positional: None,
            side_effects: &[],
        }
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
        let answer = interactive::ask_line(&format!("{prompt} [y/N] "), ctx)?;
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
    fn preview_rules() {
        assert_eq!(preview_of(&[json!("a"), json!("b")]), "a\nb");
        assert_eq!(preview_of(&[json!(1)]), "[\n  1\n]");
        assert_eq!(preview_of(&[]), "");
    }
}
