//! Runs a command's declared examples and compares their output, so help
//! text and behaviour cannot drift apart. Each command file has one test:
//! `check_examples(&TheCommand)`.

use super::Command;
use crate::executor::{run_pipeline, Outcome};
use crate::kernel::Mode;
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
        let pipeline = crate::dsl::parse(ex.pipeline).expect("example pipeline parses");
        let got = match run_pipeline(&pipeline, 0, input, &ctx) {
            Ok(Outcome::Completed {
                rendered: Some(text),
                ..
            }) => Item::String(text),
            Ok(Outcome::Completed { items, .. }) => Item::Array(items),
            Ok(Outcome::Halted { halt, .. }) => {
                panic!("example `{}` halted: {halt:?}", ex.pipeline)
            }
            Err(e) => panic!("example `{}` failed: {e}", ex.pipeline),
        };
        assert_eq!(
            to_js_json(&got),
            to_js_json(&want),
            "example `{}`: {}",
            ex.pipeline,
            ex.description
        );
    }
}
