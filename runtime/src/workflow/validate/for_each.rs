//! `for_each:` steps: the expression, loop variables, batching and the
//! sub-steps (shell or pipeline only, no gates).

use super::pipeline::parse_branch_action;
use super::{Known, V};
use crate::value::Item;
use crate::workflow::model::{Action, Branch, ForEach};
use crate::workflow::template;
use serde_json::Map;
use std::collections::HashSet;

const SUB_KEYS: &[&str] = &[
    "id",
    "description",
    "run",
    "command",
    "pipeline",
    "when",
    "condition",
    "env",
    "cwd",
    "stdin",
];

pub(super) fn parse_for_each(
    v: &mut V,
    ptr: &str,
    obj: &Map<String, Item>,
    id: &str,
    known: &Known,
) -> Action {
    let p = |k: &str| format!("{ptr}/{k}");
    let expr = match obj.get("for_each") {
        Some(Item::String(s)) => {
            match template::exact_ref(s) {
                Some((rid, path)) => known.strict(v, &p("for_each"), id, &rid, &path),
                None => known.template(v, &p("for_each"), id, s),
            }
            s.clone()
        }
        _ => {
            v.val(
                &p("for_each"),
                format!("Workflow step {id} for_each must be a string (step reference expression)"),
            );
            String::new()
        }
    };
    let item_var = v
        .string(
            &p("item_var"),
            obj.get("item_var"),
            &format!("Workflow step {id} item_var must be a string"),
        )
        .unwrap_or_else(|| "item".into());
    let index_var = v
        .string(
            &p("index_var"),
            obj.get("index_var"),
            &format!("Workflow step {id} index_var must be a string"),
        )
        .unwrap_or_else(|| "index".into());
    if item_var == index_var {
        v.val(
            &p("index_var"),
            format!("Workflow step {id} item_var and index_var cannot be the same"),
        );
    }
    let batch_size = match obj.get("batch_size") {
        None | Some(Item::Null) => 1,
        Some(Item::Number(n)) if n.as_u64().is_some_and(|x| x >= 1) => n.as_u64().unwrap_or(1),
        Some(_) => {
            v.val(
                &p("batch_size"),
                format!("Workflow step {id} batch_size must be a positive integer"),
            );
            1
        }
    };
    let pause_ms = match obj.get("pause_ms") {
        None | Some(Item::Null) => 0,
        Some(Item::Number(n)) if n.as_f64().is_some_and(|x| x >= 0.0) => {
            n.as_f64().unwrap_or(0.0) as u64
        }
        Some(_) => {
            v.val(
                &p("pause_ms"),
                format!("Workflow step {id} pause_ms must be a finite non-negative number"),
            );
            0
        }
    };
    let mut steps = Vec::new();
    match obj.get("steps") {
        Some(Item::Array(list)) if !list.is_empty() => {
            let mut avail = known.available.clone();
            avail.insert(item_var.clone());
            avail.insert(index_var.clone());
            let mut local: HashSet<String> = HashSet::new();
            let mut all = known.all.clone();
            for s in list {
                if let Some(sid) = s.get("id").and_then(Item::as_str) {
                    all.insert(sid.to_string());
                }
            }
            for (i, s) in list.iter().enumerate() {
                let sp = format!("{ptr}/steps/{i}");
                let Some(so) = s.as_object() else {
                    v.val(
                        &sp,
                        format!("Workflow step {id} for_each sub-step must be an object"),
                    );
                    continue;
                };
                let sid = match so.get("id") {
                    Some(Item::String(x)) if !x.trim().is_empty() => x.clone(),
                    _ => {
                        v.val(
                            &sp,
                            format!("Workflow step {id} for_each sub-step requires an id"),
                        );
                        continue;
                    }
                };
                for k in ["approval", "input"] {
                    if so.contains_key(k) {
                        v.key(&format!("{sp}/{k}"), format!("Workflow step {id} for_each sub-steps cannot contain approval or input steps"));
                    }
                }
                for k in ["workflow", "parallel", "for_each", "uses"] {
                    if so.contains_key(k) {
                        v.key(&format!("{sp}/{k}"), format!("Workflow step {id} for_each sub-step {sid} cannot define workflow, parallel, uses, or for_each"));
                    }
                }
                let unknown: Map<String, Item> = so
                    .iter()
                    .filter(|(k, _)| {
                        ![
                            "approval", "input", "workflow", "parallel", "for_each", "uses",
                        ]
                        .contains(&k.as_str())
                    })
                    .map(|(k, x)| (k.clone(), x.clone()))
                    .collect();
                v.keys(&sp, &unknown, SUB_KEYS, &format!("for_each sub-step {sid}"));
                if sid == item_var || sid == index_var {
                    v.val(&format!("{sp}/id"), format!("Workflow step {id} for_each sub-step id '{sid}' conflicts with loop variable"));
                } else if !local.insert(sid.clone()) {
                    v.val(
                        &format!("{sp}/id"),
                        format!("Workflow step {id} duplicate for_each sub-step id: {sid}"),
                    );
                }
                let sub_known = Known {
                    available: &avail,
                    all: &all,
                };
                let action = parse_branch_action(
                    v,
                    &sp,
                    so,
                    id,
                    &format!("for_each sub-step {sid}"),
                    &sub_known,
                );
                let ck = if so.contains_key("when") {
                    "when"
                } else {
                    "condition"
                };
                let when = so
                    .get(ck)
                    .and_then(|c| sub_known.condition(v, &format!("{sp}/{ck}"), &sid, c));
                let env = v.env(
                    &format!("{sp}/env"),
                    so.get("env"),
                    &format!("Workflow step {id} for_each sub-step {sid}"),
                );
                let cwd = v.string(
                    &format!("{sp}/cwd"),
                    so.get("cwd"),
                    &format!("Workflow step {id} for_each sub-step {sid} cwd must be a string"),
                );
                let stdin = sub_known.stdin(v, &format!("{sp}/stdin"), &sid, so.get("stdin"));
                avail.insert(sid.clone());
                steps.push(Branch {
                    id: sid,
                    action,
                    when,
                    env,
                    cwd,
                    stdin,
                });
            }
        }
        _ => v.val(
            &p("for_each"),
            format!("Workflow step {id} for_each requires a non-empty steps array"),
        ),
    }
    Action::ForEach(ForEach {
        expr,
        item_var,
        index_var,
        batch_size,
        pause_ms,
        steps,
    })
}
