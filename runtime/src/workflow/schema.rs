//! The JSON Schema (draft 2020-12) of workflow files, for editors (`lobster
//! schema workflow`; the same text is `docs/workflow.schema.json`). It
//! describes the shapes [`super::validate`] accepts; validation proper
//! (positions, references between steps, conditions, stage names, the
//! reference's exact messages) stays there. Tests check every example
//! workflow, and every workflow a test writes that the validator accepts,
//! against it, so the two cannot drift apart.

use serde_json::Value;
use std::sync::OnceLock;

/// The schema's text.
pub const WORKFLOW_SCHEMA: &str = include_str!("../../../docs/workflow.schema.json");

/// Check a workflow document (YAML or JSON, as a JSON value) against the
/// schema; the errors as `pointer: message`.
pub fn check(doc: &Value) -> Result<(), Vec<String>> {
    static VALIDATOR: OnceLock<jsonschema::Validator> = OnceLock::new();
    let validator = VALIDATOR.get_or_init(|| {
        let schema: Value = serde_json::from_str(WORKFLOW_SCHEMA).expect("the schema is JSON");
        jsonschema::draft202012::new(&schema).expect("the schema compiles")
    });
    let errors: Vec<String> = validator
        .iter_errors(doc)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn doc_of(path: &Path) -> Value {
        let (_, doc) = crate::workflow::load::load(path).expect("the example loads");
        doc.value.clone()
    }

    #[test]
    fn the_schema_is_a_valid_draft_2020_12_schema() {
        let schema: Value = serde_json::from_str(WORKFLOW_SCHEMA).unwrap();
        assert_eq!(
            schema["$schema"],
            "https://json-schema.org/draft/2020-12/schema"
        );
        assert!(jsonschema::meta::is_valid(&schema));
    }

    #[test]
    fn every_example_workflow_matches_the_schema() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut seen = 0;
        for dir in ["examples/workflows", "examples/serve/workflows"] {
            let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
                if ["lobster", "yaml", "yml", "json"].contains(&ext) {
                    if let Err(e) = check(&doc_of(&path)) {
                        panic!("{}: {e:#?}", path.display());
                    }
                    seen += 1;
                }
            }
        }
        assert!(seen >= 10, "{seen} examples");
    }

    #[test]
    fn the_schema_refuses_what_the_validator_refuses_by_shape() {
        let bad = |yaml: &str| {
            let doc = crate::workflow::load::parse_text(yaml, false, "w.lobster").unwrap();
            check(&doc.value).expect_err(yaml)
        };
        bad("name: x\n");
        bad("steps: []\n");
        bad("steps:\n  - id: a\n    run: x\n    timout_ms: 5\n");
        bad("steps:\n  - id: a\n    run: x\n    timeout_ms: 0\n");
        bad("steps:\n  - id: a\n    run: x\n    on_error: ignore\n");
        bad("steps:\n  - id: a\n    with: {n: 1}\n    run: x\n");
        bad("steps:\n  - id: a\n");
        bad("args:\n  n: {type: text}\nsteps:\n  - id: a\n    run: x\n");
        bad("steps:\n  - id: a\n    parallel: {wait: some, branches: [{id: b, run: x}]}\n");
        let ok = crate::workflow::load::parse_text(
            "steps:\n  - id: a\n    run: x\n    when:\n    approval: required\n",
            false,
            "w.lobster",
        )
        .unwrap();
        check(&ok.value).unwrap();
    }
}
