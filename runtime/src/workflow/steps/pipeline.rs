//! `pipeline:` steps: Lobster DSL run in-process by the executor.
//!
//! Substituted values are quoted as single DSL tokens (see
//! [`crate::workflow::template`]); the step's `stdin` becomes the input
//! items (an array is spread, `null` means none).

use crate::error::{Error, Result};
use crate::executor::{run_pipeline, Outcome};
use crate::kernel::{Context, Mode};
use crate::value::{items_to_js_json, to_js_json, Item};
use crate::workflow::gate::InputGate;
use crate::workflow::run::derive;
use crate::workflow::template::{render, Scope, Style};
use serde_json::{json, Map};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// How a top-level pipeline step ended.
#[derive(Debug)]
pub enum Piped {
    /// `{id, stdout, json?}`, and what its `stdout` is.
    Done(Item, OutputText),
    /// A stage (`ask`) asks for input; the pipeline continues after it.
    Asked(PipelinePause),
}

/// Whether a step result's `stdout` is, byte for byte, the JSON text of
/// the items a run outputs when the step is its last
/// ([`crate::workflow::run::Runner::output`]): then the step's digest of
/// its `stdout` is the run's output digest, and the run's end does not
/// write its output out again to take it. Known where the result is made
/// ([`result_text`]), never guessed from the result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputText {
    /// `stdout` is the output's JSON text.
    Stdout,
    /// Not known to be (rendered text, strings, one non-array item, …).
    Other,
}

/// A pipeline step waiting for input at stage `next_stage - 1`.
#[derive(Debug, Clone, PartialEq)]
pub struct PipelinePause {
    /// The rendered pipeline text.
    pub text: String,
    /// The stage that receives the response as its only input item.
    pub next_stage: usize,
    pub gate: InputGate,
}

/// Run pipeline `text` for step `id` where input suspensions are not
/// supported (parallel branches, `for_each` sub-steps).
pub fn run(
    id: &str,
    text: &str,
    stdin: Option<Item>,
    env: BTreeMap<String, String>,
    cwd: PathBuf,
    scope: &dyn Scope,
    ctx: &Context,
) -> Result<Item> {
    match run_step(id, text, stdin, env, cwd, scope, ctx)? {
        Piped::Done(r, _) => Ok(r),
        Piped::Asked(p) => Err(Error::runtime(format!(
            "Workflow step {id} halted before completion at pipeline stage {}. Input requests are not supported in this pipeline context.",
            stage_name(&p.text, p.next_stage - 1)
        ))),
    }
}

fn stage_name(text: &str, stage: usize) -> String {
    crate::dsl::parse(text)
        .ok()
        .and_then(|p| p.stages.get(stage).map(|s| s.name.clone()))
        .unwrap_or_default()
}

/// Run pipeline `text` for top-level step `id`; an `ask` stage pauses it.
pub fn run_step(
    id: &str,
    text: &str,
    stdin: Option<Item>,
    env: BTreeMap<String, String>,
    cwd: PathBuf,
    scope: &dyn Scope,
    ctx: &Context,
) -> Result<Piped> {
    let rendered = render(text, scope, Style::Dsl, None).text;
    let input = match stdin {
        None | Some(Item::Null) => Vec::new(),
        Some(Item::Array(a)) => a,
        Some(other) => vec![other],
    };
    continue_from(id, &rendered, 0, input, env, cwd, ctx)
}

/// Run the rendered pipeline `text` from `stage` with `input`.
pub fn continue_from(
    id: &str,
    text: &str,
    stage: usize,
    input: Vec<Item>,
    env: BTreeMap<String, String>,
    cwd: PathBuf,
    ctx: &Context,
) -> Result<Piped> {
    let pipeline = crate::dsl::parse(text)
        .map_err(|e| e.context(&format!("Workflow step {id} pipeline: ")))?;
    let mut sub = derive(ctx, Some(env), Some(cwd), None);
    // Its stages' events say they ran within this step.
    sub.journal = sub.journal.within(id);
    sub.mode = Mode::Human;
    sub.interactive = false;
    match run_pipeline(&pipeline, stage, input, &sub)? {
        Outcome::Completed { items, rendered } => {
            let (r, text) = result_text(id, items, rendered);
            Ok(Piped::Done(r, text))
        }
        Outcome::Halted { stage, halt, .. } => {
            let name = &pipeline.stages[stage].name;
            match halt {
                crate::commands::Halt::Approval { .. } => Err(Error::runtime(format!(
                    "Workflow step {id} halted for approval inside pipeline stage {name}. Use a separate approval step in the workflow file."
                ))),
                crate::commands::Halt::Input {
                    prompt,
                    schema,
                    subject,
                    ..
                } => Ok(Piped::Asked(PipelinePause {
                    text: text.to_string(),
                    next_stage: stage + 1,
                    gate: InputGate {
                        prompt,
                        schema,
                        defaults: None,
                        subject,
                    },
                })),
            }
        }
    }
}

/// `stdout`: rendered text, else strings joined by newlines, else the JSON
/// of the single item or of the array; `json`: the single item or the array
/// (or the parsed rendering when nothing else came out).
pub fn result(id: &str, items: Vec<Item>, rendered: Option<String>) -> Item {
    result_text(id, items, rendered).0
}

/// [`result`], and whether its `stdout` is the JSON text of the run's
/// output were the step the last: unrendered items, not all strings, that
/// are not one item other than an array (`[x]` is not `x`'s text; one
/// array item is spread into the output, and its text is the array's).
pub fn result_text(id: &str, items: Vec<Item>, rendered: Option<String>) -> (Item, OutputText) {
    let text = match (&rendered, items.as_slice()) {
        (Some(_), _) => OutputText::Other,
        (None, items) if items.iter().all(Item::is_string) => OutputText::Other,
        (None, [one]) if !one.is_array() => OutputText::Other,
        (None, _) => OutputText::Stdout,
    };
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
        None => items_to_js_json(&items),
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
    (Item::Object(r), text)
}
