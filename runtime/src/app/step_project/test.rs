//! `lobster step test`: every example of the project's `examples.json`
//! (`[{"name", "args": [..], "input": [..], "output": [..]}]`) run through
//! the sandbox with no grants, its items compared with the expected ones.

use super::{manifest, wasm_path};
use crate::error::{Error, Result};
use crate::executor::{run_pipeline, Outcome};
use crate::kernel::{Context, Mode};
use crate::sandbox::StepPath;
use crate::state::StateStore;
use crate::value::Item;
use std::path::Path;

/// One declared example of `examples.json`.
#[derive(Debug, serde::Deserialize)]
struct Example {
    #[serde(default)]
    name: String,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    input: Vec<Item>,
    output: Vec<Item>,
}

/// How one example went.
#[derive(Debug)]
pub enum ExampleOutcome {
    /// The step gave the expected items.
    Passed,
    /// It gave other items.
    Differs {
        /// What the example expects.
        expected: Vec<Item>,
        /// What the step gave.
        got: Vec<Item>,
    },
    /// It failed (or stopped at a gate).
    Failed(Error),
}

/// One example's result.
#[derive(Debug)]
pub struct ExampleResult {
    /// Its name, or `example N`.
    pub label: String,
    /// How it went.
    pub outcome: ExampleOutcome,
}

/// Run every example of the project in `dir` (built first) in the sandbox.
pub fn test(dir: &Path) -> Result<Vec<ExampleResult>> {
    let m = manifest(dir)?;
    let path = dir.join("examples.json");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| Error::runtime(format!("{}: {e}", path.display())))?;
    let examples: Vec<Example> = serde_json::from_str(&text)
        .map_err(|e| Error::parse(format!("{}: {e}", path.display())))?;
    if examples.is_empty() {
        return Err(Error::parse(format!(
            "{}: declares no examples",
            path.display()
        )));
    }
    let wasm = wasm_path(dir, &m);
    if !wasm.is_file() {
        return Err(Error::runtime(format!(
            "{}: missing; run `lobster step build {}` first",
            wasm.display(),
            dir.display()
        )));
    }
    let wasm_dir = wasm.parent().map(Path::to_path_buf).unwrap_or_default();
    let state = StateStore::from_env();
    let path = StepPath::new(vec![std::fs::canonicalize(&wasm_dir).unwrap_or(wasm_dir)]);
    let cwd = std::env::current_dir().unwrap_or_default();
    let registry = crate::executor::registry(path, &state, Default::default(), cwd);
    let ctx = crate::executor::process_context(Mode::Tool, state)
        .registry(registry)
        .build();
    Ok(examples
        .iter()
        .enumerate()
        .map(|(i, ex)| {
            let label = if ex.name.is_empty() {
                format!("example {}", i + 1)
            } else {
                ex.name.clone()
            };
            let outcome = match run_example(&m.name, ex, &ctx) {
                Ok(items) if items == ex.output => ExampleOutcome::Passed,
                Ok(items) => ExampleOutcome::Differs {
                    expected: ex.output.clone(),
                    got: items,
                },
                Err(e) => ExampleOutcome::Failed(e),
            };
            ExampleResult { label, outcome }
        })
        .collect())
}

/// Run the step `name` with the example's args over its input.
fn run_example(name: &str, ex: &Example, ctx: &Context) -> Result<Vec<Item>> {
    let mut pipeline = crate::dsl::parse(name)?;
    let tokens: Vec<crate::dsl::Token> = ex
        .args
        .iter()
        .map(|t| crate::dsl::Token {
            text: t.clone(),
            span: 0..0,
        })
        .collect();
    pipeline.stages[0].args = crate::dsl::parse_args(&tokens);
    match run_pipeline(&pipeline, 0, ex.input.clone(), ctx)? {
        Outcome::Completed { items, .. } => Ok(items),
        _ => Err(Error::runtime("the step stopped at a gate")),
    }
}
