//! Template rendering in every style, against a fixed scope of args and step
//! results, must render something for any text, never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use lobster::workflow::template::{exact_ref, refs, render, MapScope, Style};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::sync::OnceLock;

struct Fixture {
    args: Map<String, Value>,
    results: Map<String, Value>,
    env: BTreeMap<String, String>,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let obj = |v: Value| v.as_object().cloned().unwrap();
        Fixture {
            args: obj(json!({"name": "it's \"x\"", "n": 3, "list": [1, {"a": null}], "o": {"k": "$HOME"}})),
            results: obj(json!({
                "a": {"id": "a", "stdout": "line\n'quote'", "json": [{"x": 1}, "two"], "approved": true},
                "b": {"id": "b", "json": {"deep": {"er": [true, false]}}}
            })),
            env: [("HOME", "/home/x"), ("LANG", "C")]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    })
}

fuzz_target!(|text: &str| {
    let f = fixture();
    let scope = MapScope {
        args: &f.args,
        results: &f.results,
        extra: None,
    };
    for style in [Style::Raw, Style::Shell, Style::Dsl, Style::Env] {
        let _ = render(text, &scope, style, Some(&f.env));
    }
    let _ = refs(text);
    let _ = exact_ref(text);
});
