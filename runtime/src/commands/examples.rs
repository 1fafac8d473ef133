//! Runs a command's declared examples and compares their output, so help
//! text and behaviour cannot drift apart. Each command file has one test:
//! `check_examples(&TheCommand)`. A gate's example output is the request it
//! halts with (as a run without a terminal prints it, less the token);
//! examples that need a model are run against the loopback stub model by
//! `tests/cli/broker/models.rs` instead.

use super::Command;
use crate::executor::{run_pipeline, Outcome};
use crate::kernel::{Context, Mode};
use crate::state::StateStore;
use crate::value::{to_js_json, Item};

/// Run every example of `cmd` in human mode against a fresh state directory.
/// Renderer examples compare the rendered text (a JSON string); others the items.
pub fn check_examples(cmd: &dyn Command) {
    let examples = cmd.examples();
    assert!(
        !examples.is_empty(),
        "{} declares no examples",
        cmd.signature().name
    );
    for ex in examples {
        let dir = tempfile::tempdir().expect("temp dir");
        let ctx = crate::commands::test_context(Mode::Human, StateStore::new(dir.path()));
        let input: Vec<Item> =
            serde_json::from_str(ex.input).expect("example input is a JSON array");
        let want: Item = serde_json::from_str(ex.output).expect("example output is JSON");
        let got = run(ex.pipeline, input, &ctx);
        assert_eq!(
            to_js_json(&got),
            to_js_json(&want),
            "example `{}`: {}",
            ex.pipeline,
            ex.description
        );
        // The same input as unparsed items from `exec --json` (see
        // `Command::run_lazy`) gives the same output.
        let file = dir.path().join("input.json");
        std::fs::write(&file, ex.input).expect("input file");
        let dir2 = tempfile::tempdir().expect("temp dir");
        let ctx = crate::commands::test_context(Mode::Human, StateStore::new(dir2.path()));
        let lazy = format!(
            "exec --json --shell 'cat {}' | {}",
            file.display(),
            ex.pipeline
        );
        assert_eq!(
            to_js_json(&run(&lazy, Vec::new(), &ctx)),
            to_js_json(&want),
            "example `{lazy}`: {}",
            ex.description
        );
    }
}

fn run(pipeline: &str, input: Vec<Item>, ctx: &Context) -> Item {
    let parsed = crate::dsl::parse(pipeline).expect("example pipeline parses");
    match run_pipeline(&parsed, 0, input, ctx) {
        Ok(Outcome::Completed {
            rendered: Some(text),
            ..
        }) => Item::String(text),
        Ok(Outcome::Completed { items, .. }) => Item::Array(items),
        Ok(Outcome::Halted { halt, .. }) => halted(&halt),
        Err(e) => panic!("example `{pipeline}` failed: {e}"),
    }
}

/// The request a gate halts with, as its example output shows it.
fn halted(halt: &super::Halt) -> Item {
    use serde_json::{json, Map};
    let mut m = Map::new();
    match halt {
        super::Halt::Approval {
            prompt,
            items,
            preview,
        } => {
            m.insert("type".into(), json!("approval_request"));
            m.insert("prompt".into(), json!(prompt));
            m.insert("items".into(), Item::Array(items.clone()));
            if let Some(p) = preview {
                m.insert("preview".into(), json!(p));
            }
        }
        super::Halt::Input {
            prompt,
            schema,
            subject,
            items,
        } => {
            m.insert("type".into(), json!("input_request"));
            m.insert("prompt".into(), json!(prompt));
            m.insert("responseSchema".into(), schema.clone());
            if let Some(s) = subject {
                m.insert("subject".into(), s.clone());
            }
            m.insert("items".into(), Item::Array(items.clone()));
        }
    }
    Item::Array(vec![Item::Object(m)])
}
