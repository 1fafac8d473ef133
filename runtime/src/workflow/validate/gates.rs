//! Gates: a step's `approval:` (shorthands and the object form) and
//! `input:` (a prompt and the response schema).

use super::V;
use crate::value::Item;
use crate::workflow::model::{Approval, InputSpec};

const APPROVAL_KEYS: &[&str] = &[
    "prompt",
    "items",
    "preview",
    "initiated_by",
    "initiatedBy",
    "required_approver",
    "requiredApprover",
    "require_different_approver",
    "requireDifferentApprover",
];

const INPUT_KEYS: &[&str] = &["prompt", "responseSchema", "defaults"];

pub(super) fn parse_approval(
    v: &mut V,
    ptr: &str,
    raw: Option<&Item>,
    id: &str,
) -> Option<Approval> {
    match raw? {
        Item::Null | Item::Bool(false) => None,
        Item::Bool(true) => Some(Approval::default()),
        Item::String(s) if s.is_empty() => None,
        Item::String(s) if s == "required" => Some(Approval::default()),
        Item::String(s) => Some(Approval {
            prompt: Some(s.clone()),
            ..Approval::default()
        }),
        Item::Object(o) => {
            v.keys(ptr, o, APPROVAL_KEYS, &format!("step {id} approval"));
            let s = |v: &mut V, keys: &[&str]| -> Option<String> {
                let k = keys.iter().find(|k| o.contains_key(**k))?;
                v.string(
                    &format!("{ptr}/{k}"),
                    o.get(*k),
                    &format!("Workflow step {id} approval.{k} must be a string"),
                )
            };
            let prompt = s(v, &["prompt"]);
            let preview = s(v, &["preview"]);
            let initiated_by = s(v, &["initiated_by", "initiatedBy"]);
            let required_approver = s(v, &["required_approver", "requiredApprover"]);
            let require_different_approver =
                match ["require_different_approver", "requireDifferentApprover"]
                    .iter()
                    .find_map(|k| o.get(*k).map(|x| (k, x)))
                {
                    None | Some((_, Item::Null)) => None,
                    Some((_, Item::Bool(b))) => Some(*b),
                    Some((k, _)) => {
                        v.val(
                            &format!("{ptr}/{k}"),
                            format!("Workflow step {id} approval.{k} must be a boolean"),
                        );
                        None
                    }
                };
            let items = match o.get("items") {
                None | Some(Item::Null) => None,
                Some(Item::Array(a)) => Some(a.clone()),
                Some(_) => {
                    v.val(
                        &format!("{ptr}/items"),
                        format!("Workflow step {id} approval.items must be an array"),
                    );
                    None
                }
            };
            Some(Approval {
                prompt,
                items,
                preview,
                initiated_by,
                required_approver,
                require_different_approver,
            })
        }
        _ => {
            v.val(ptr, format!("Workflow step {id} approval must be true, \"required\", a prompt string, or an object"));
            None
        }
    }
}

pub(super) fn parse_input(v: &mut V, ptr: &str, raw: Option<&Item>, id: &str) -> Option<InputSpec> {
    match raw? {
        Item::Null => None,
        Item::Object(o) => {
            v.keys(ptr, o, INPUT_KEYS, &format!("step {id} input"));
            let prompt = match o.get("prompt") {
                Some(Item::String(s)) => s.clone(),
                _ => {
                    v.val(
                        &format!("{ptr}/prompt"),
                        format!("Workflow step {id} input.prompt must be a string"),
                    );
                    String::new()
                }
            };
            let schema = match o.get("responseSchema") {
                Some(s @ Item::Object(_)) => {
                    if let Err(e) = crate::schema::Schema::compile(s) {
                        v.val(
                            &format!("{ptr}/responseSchema"),
                            format!("Workflow step {id} input.responseSchema is invalid: {e}"),
                        );
                    }
                    s.clone()
                }
                _ => {
                    v.val(
                        &format!("{ptr}/responseSchema"),
                        format!("Workflow step {id} input.responseSchema must be an object"),
                    );
                    Item::Null
                }
            };
            Some(InputSpec {
                prompt,
                schema,
                defaults: o.get("defaults").cloned(),
            })
        }
        _ => {
            v.val(ptr, format!("Workflow step {id} input must be an object"));
            None
        }
    }
}
