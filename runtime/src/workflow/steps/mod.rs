//! The kinds of step actions, one file each.

pub mod compose;
pub mod for_each;
pub mod parallel;
pub mod pipeline;
pub mod shell;
pub mod wasm;

use crate::value::{to_js_json, Item};
use serde_json::{json, Map};

/// The result of a gate-only step: its `stdin`, as `stdout` (strings) and
/// `json` (parsed strings, other values as they are).
pub fn synthesize(id: &str, stdin: Option<Item>) -> Item {
    let mut r = Map::new();
    r.insert("id".into(), json!(id));
    match stdin {
        None | Some(Item::Null) => {}
        Some(Item::String(s)) => {
            if let Ok(j) = serde_json::from_str::<Item>(s.trim()) {
                r.insert("json".into(), j);
            }
            r.insert("stdout".into(), Item::String(s));
        }
        Some(other) => {
            r.insert("stdout".into(), Item::String(to_js_json(&other)));
            r.insert("json".into(), other);
        }
    }
    Item::Object(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthesized_results() {
        assert_eq!(synthesize("a", None), json!({"id": "a"}));
        assert_eq!(
            synthesize("a", Some(json!("[1]\n"))),
            json!({"id": "a", "json": [1], "stdout": "[1]\n"})
        );
        assert_eq!(
            synthesize("a", Some(json!({"k": 1}))),
            json!({"id": "a", "stdout": "{\"k\":1}", "json": {"k": 1}})
        );
        assert_eq!(
            pipeline::result("p", vec![json!("x"), json!("y")], None),
            json!({"id": "p", "stdout": "x\ny", "json": ["x", "y"]})
        );
        assert_eq!(
            pipeline::result("p", vec![], Some("[1]\n".into())),
            json!({"id": "p", "stdout": "[1]\n", "json": [1]})
        );
        assert_eq!(
            compose::resolve_path(std::path::Path::new("/w/a.lobster"), "sub/b.lobster"),
            std::path::PathBuf::from("/w/sub/b.lobster")
        );
    }

    /// Strings are printed joined by newlines, so one string with a newline
    /// and two strings share a `stdout`: rule 2 digests such results whole,
    /// and the two get different digests (as pipeline steps make them).
    #[test]
    fn a_workflow_steps_string_outputs_with_one_stdout_get_different_digests() {
        use super::pipeline::result;
        use crate::journal::{digest, step_output_digest, value_digest, DigestRule};
        let one = result("s", vec![serde_json::json!("a\nb")], None);
        let two = result(
            "s",
            vec![serde_json::json!("a"), serde_json::json!("b")],
            None,
        );
        assert_eq!(one["stdout"], two["stdout"], "the case this guards");
        let (d1, d2) = (
            step_output_digest(DigestRule::V2, &one),
            step_output_digest(DigestRule::V2, &two),
        );
        assert_ne!(d1, d2);
        assert_eq!(d1, value_digest(&one));
        let none = result("s", vec![], None);
        assert_eq!(
            step_output_digest(DigestRule::V2, &none),
            value_digest(&none)
        );
        let mixed = result(
            "s",
            vec![serde_json::json!("a"), serde_json::json!(1)],
            None,
        );
        let text = mixed["stdout"].as_str().unwrap().to_string();
        assert_eq!(
            step_output_digest(DigestRule::V2, &mixed),
            digest(text.as_bytes())
        );
    }
    /// A result marked [`pipeline::OutputText::Stdout`] has, as its step's
    /// digest, the digest the run's end takes of the output it makes when
    /// last (`Runner::output`: an array `json` spread); every kind of item
    /// list, rendered or not, and the marks expected.
    #[test]
    fn a_result_marked_stdout_has_the_run_outputs_digest() {
        use super::pipeline::{result_text, OutputText};
        use crate::journal::{items_digest, step_output_digest_of, DigestRule};
        let cases: Vec<(Vec<Item>, Option<String>, OutputText)> = vec![
            (
                vec![json!({"a": 1}), json!([2, "é\n"])],
                None,
                OutputText::Stdout,
            ),
            (vec![json!([1, {"b": null}])], None, OutputText::Stdout),
            (vec![json!([])], None, OutputText::Stdout),
            (vec![json!(1), json!("x")], None, OutputText::Stdout),
            (vec![json!({"a": 1})], None, OutputText::Other),
            (vec![json!(3)], None, OutputText::Other),
            (vec![json!("x"), json!("y")], None, OutputText::Other),
            (vec![], None, OutputText::Other),
            (
                vec![json!({"a": 1}), json!(2)],
                Some("a table\n".into()),
                OutputText::Other,
            ),
        ];
        for (items, rendered, expected) in cases {
            let (r, text) = result_text("s", items.clone(), rendered);
            assert_eq!(text, expected, "{items:?}");
            if text != OutputText::Stdout {
                continue;
            }
            let output = match &r["json"] {
                Item::Array(a) => a.clone(),
                other => vec![other.clone()],
            };
            let (digest, of_stdout) = step_output_digest_of(DigestRule::V2, &r);
            if of_stdout {
                assert_eq!(digest, items_digest(&output), "{items:?}");
            }
        }
    }
}
