//! `pipeline:` steps: Lobster DSL run in-process by the executor.
//!
//! Substituted values are quoted as single DSL tokens (see
//! [`crate::workflow::template`]); the step's `stdin` becomes the input
//! items (an array is spread, `null` means none).

use crate::error::{Error, Result};
use crate::executor::{run_pipeline, Context, Mode, Outcome};
use crate::value::{to_js_json, Item};
use crate::workflow::run::derive;
use crate::workflow::template::{render, Scope, Style};
use serde_json::{json, Map};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Run pipeline `text` for step `id`; the result is `{id, stdout, json?}`.
pub fn run(
    id: &str,
    text: &str,
    stdin: Option<Item>,
    env: BTreeMap<String, String>,
    cwd: PathBuf,
    scope: &dyn Scope,
    ctx: &Context,
) -> Result<Item> {
    let rendered = render(text, scope, Style::Dsl, None).text;
    let pipeline = crate::dsl::parse(&rendered)
        .map_err(|e| e.context(&format!("Workflow step {id} pipeline: ")))?;
    let input = match stdin {
        None | Some(Item::Null) => Vec::new(),
        Some(Item::Array(a)) => a,
        Some(other) => vec![other],
    };
    let mut sub = derive(ctx, Some(env), Some(cwd), None);
    sub.mode = Mode::Human;
    sub.interactive = false;
    match run_pipeline(&pipeline, 0, input, &sub)? {
        Outcome::Completed { items, rendered } => Ok(result(id, items, rendered)),
        Outcome::Halted { stage, halt, .. } => {
            let name = &pipeline.stages[stage].name;
            Err(Error::runtime(match halt {
                crate::commands::Halt::Approval { .. } => format!(
                    "Workflow step {id} halted for approval inside pipeline stage {name}. Use a separate approval step in the workflow file."
                ),
                crate::commands::Halt::Input { .. } => format!(
                    "Workflow step {id} halted before completion at pipeline stage {name}. Use a separate input step in the workflow file."
                ),
            }))
        }
    }
}

/// `stdout`: rendered text, else strings joined by newlines, else the JSON
/// of the single item or of the array; `json`: the single item or the array
/// (or the parsed rendering when nothing else came out).
pub fn result(id: &str, items: Vec<Item>, rendered: Option<String>) -> Item {
    let mut r = Map::new();
    r.insert("id".into(), json!(id));
    let stdout = match &rendered {
        Some(t) => t.clone(),
        None if items.iter().all(Item::is_string) => items
            .iter()
            .filter_map(Item::as_str)
            .collect::<Vec<_>>()
            .join("\n"),
        None if items.len() == 1 => to_js_json(&items[0]),
        None => to_js_json(&Item::Array(items.clone())),
    };
    r.insert("stdout".into(), Item::String(stdout));
    let j = match (items.len(), rendered) {
        (0, Some(t)) => serde_json::from_str(t.trim()).ok(),
        (1, _) => items.into_iter().next(),
        _ => Some(Item::Array(items)),
    };
    if let Some(j) = j {
        r.insert("json".into(), j);
    }
    Item::Object(r)
}
