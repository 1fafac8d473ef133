//! The wasm engine is created only when a pipeline needs a wasm step:
//! built-in pipelines and unknown names without a matching file never start
//! it. (Its own test binary, so no other test has started the engine.)

use lobster::dsl::parse;
use lobster::executor::{process_context, run_pipeline, Mode};
use lobster::sandbox::engine_started;
use lobster::state::StateStore;
use serde_json::json;

#[test]
fn builtin_pipelines_never_start_the_engine() {
    let tmp = tempfile::tempdir().unwrap();
    let ctx = process_context(Mode::Tool, StateStore::new(tmp.path())).build();
    run_pipeline(&parse("head --n 1").unwrap(), 0, vec![json!(1)], &ctx).unwrap();
    let err = run_pipeline(&parse("head | no.such.step").unwrap(), 0, vec![], &ctx).unwrap_err();
    assert_eq!(err.to_string(), "Unknown command: no.such.step");
    assert!(
        !engine_started(),
        "the wasm engine started without a wasm step"
    );
}
