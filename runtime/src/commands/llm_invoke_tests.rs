//! Tests of `llm.invoke`, in their own file to keep `llm_invoke.rs` under 700 lines.

use super::*;

fn args(flags: &[(&str, &str)]) -> Args {
    Args {
        positional: vec![],
        flags: flags
            .iter()
            .map(|(k, v)| (k.to_string(), FlagValue::Str(v.to_string())))
            .collect(),
    }
}

#[test]
fn flag_errors_are_the_reference_strings() {
    let env = BTreeMap::from([(
        "LOBSTER_LLM_ADAPTER_URL".to_string(),
        "http://127.0.0.1:1".to_string(),
    )]);
    let eps = Endpoints::resolve(
        &crate::policy::Policy::default(),
        &env,
        crate::broker::endpoints::Sources::Process,
    );
    let msg = |a: &[(&str, &str)]| {
        LLM.plan(&args(a), &env, &eps)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    assert_eq!(msg(&[]), "llm.invoke requires --prompt or positional text");
    assert_eq!(
        msg(&[("prompt", "p"), ("artifacts-json", "{}")]),
        "llm.invoke --artifacts-json must be a JSON array"
    );
    assert_eq!(
        msg(&[("prompt", "p"), ("metadata-json", "[]")]),
        "llm.invoke --metadata-json must be a JSON object"
    );
    assert_eq!(
        msg(&[("prompt", "p"), ("output-schema", "nope")]),
        "llm.invoke --output-schema must be a JSON object"
    );
    assert_eq!(
        msg(&[("prompt", "p"), ("provider", "Foo")]),
        "Unsupported llm provider: foo"
    );
    let none = BTreeMap::new();
    assert_eq!(
        LLM.plan(&args(&[("prompt", "p")]), &none, &Endpoints::default())
            .err()
            .unwrap()
            .to_string(),
        "llm.invoke could not resolve a provider. Set --provider or LOBSTER_LLM_PROVIDER"
    );
    assert_eq!(
        LLM_TASK
            .plan(&args(&[("prompt", "p")]), &none, &Endpoints::default())
            .unwrap()
            .provider,
        "openclaw"
    );
    let p = LLM
        .plan(
            &args(&[("prompt", "p"), ("output-schema", "{}")]),
            &env,
            &eps,
        )
        .unwrap();
    assert_eq!(
        (p.provider.as_str(), p.retries, p.schema_version.as_str()),
        ("http", 1, "v1")
    );
    let p = LLM.plan(&args(&[("prompt", "p")]), &env, &eps).unwrap();
    assert_eq!(p.retries, 0, "no schema, no retries");
}

#[test]
fn artifacts_normalize_and_keys_are_stable() {
    assert_eq!(
        normalize_artifact(json!("t")),
        json!({"kind": "text", "text": "t"})
    );
    assert_eq!(
        normalize_artifact(json!(2)),
        json!({"kind": "text", "text": "2"})
    );
    assert_eq!(
        normalize_artifact(json!([1])),
        json!({"kind": "json", "data": [1]})
    );
    assert_eq!(
        stable(&json!({"b": 1, "a": {"d": 2, "c": 3}})),
        r#"{"a":{"c":3,"d":2},"b":1}"#
    );
}
