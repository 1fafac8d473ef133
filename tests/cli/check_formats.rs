//! `lobster check --format sarif|github`: the SARIF log validates against
//! the official SARIF 2.1.0 schema (OASIS, committed as
//! tests/fixtures/sarif-schema-2.1.0.json) and says what the JSON format
//! says; GitHub annotations name file and line; exit codes.

use crate::common::{root, test_guest, write, Env};
use serde_json::Value;

/// A directory with one problem of each kind lobster check finds on its
/// own: a broken workflow, a lock pin that does not match, a file that is
/// not a component, and a templated `uses:` (a run-time warning).
fn project(env: &Env) {
    write(
        env,
        "flows/bad.lobster",
        "name: bad\nsteps:\n  - id: a\n    run: echo hi\n  - id: a\n    run: echo again\n",
    );
    write(
        env,
        "flows/later.lobster",
        "name: later\nargs:\n  c:\n    default: x.wasm\nsteps:\n  - id: s\n    uses: ${c}\n",
    );
    write(env, "flows/not a component.wasm", "not wasm");
    write(
        env,
        "flows/lobster.lock",
        &format!(
            "version = 1\n\n[steps]\n\"missing.step\" = \"{}\"\n",
            "a".repeat(64)
        ),
    );
}

#[test]
fn sarif_validates_against_the_official_schema_and_matches_json() {
    let env = Env::new();
    project(&env);
    let json = env.run(&["check", "--format", "json", "flows"]);
    assert_eq!(json.code, 1, "{json:?}");
    let problems = json.json()["problems"].as_array().unwrap().clone();
    assert!(problems.len() >= 3, "{json:?}");
    let r = env.run(&["check", "--format", "sarif", "flows"]);
    assert_eq!(r.code, 1, "{r:?}");
    let log: Value = serde_json::from_str(&r.stdout).expect("SARIF is JSON");
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("tests/fixtures/sarif-schema-2.1.0.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::draft4::new(&schema).expect("the SARIF schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(&log)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}\n{}", r.stdout);
    let results = log["runs"][0]["results"].as_array().unwrap();
    let errors: Vec<&Value> = results.iter().filter(|r| r["level"] == "error").collect();
    assert_eq!(errors.len(), problems.len(), "{}", r.stdout);
    for (e, p) in errors.iter().zip(&problems) {
        assert_eq!(e["message"]["text"], p["message"]);
        let uri = e["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            .as_str()
            .unwrap();
        assert!(
            uri.starts_with("flows/"),
            "relative to the working directory: {uri}"
        );
        if let Some(line) = p.get("line") {
            assert_eq!(
                e["locations"][0]["physicalLocation"]["region"]["startLine"],
                *line
            );
        }
    }
    assert!(
        results
            .iter()
            .any(|r| r["level"] == "warning" && r["ruleId"] == "lobster/run-time"),
        "{}",
        r.stdout
    );
    assert!(
        results.iter().any(|r| r["ruleId"] == "lobster/lock"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("flows/not%20a%20component.wasm"),
        "{}",
        r.stdout
    );
    // A clean check is a valid, empty log and exit 0.
    let clean = Env::new();
    let Some(noop) = test_guest("noop") else {
        return;
    };
    std::fs::copy(noop, clean.work_path("noop.wasm")).unwrap();
    let r = clean.run(&["check", "--format", "sarif", "noop.wasm"]);
    assert_eq!(r.code, 0, "{r:?}");
    let log: Value = serde_json::from_str(&r.stdout).unwrap();
    assert!(validator.is_valid(&log));
    assert_eq!(log["runs"][0]["results"].as_array().unwrap().len(), 0);
}

#[test]
fn github_annotations_and_exit_codes() {
    let env = Env::new();
    project(&env);
    let r = env.run(&["check", "--format", "github", "flows"]);
    assert_eq!(r.code, 1, "{r:?}");
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("::error file=flows/bad.lobster,line=")),
        "{}",
        r.stdout
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("::error file=flows/lobster.lock,line=4,title=lobster/lock::")),
        "{}",
        r.stdout
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("::warning file=flows/later.lobster,line=")),
        "{}",
        r.stdout
    );
    assert!(
        lines.last().unwrap().starts_with("lobster check: "),
        "{}",
        r.stdout
    );
    // Exit code 2 for bad arguments, with the formats named.
    let r = env.run(&["check", "--format", "xml"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("human, json, sarif or github"), "{r:?}");
}
