//! One top-level step: its id, exactly one action, and the fields every
//! step kind shares (stdin, when, env, cwd, timeout, on_error, retry,
//! permissions, approval or input).

use super::compose::parse_workflow_ref;
use super::for_each::parse_for_each;
use super::gates::{parse_approval, parse_input};
use super::parallel::parse_parallel;
use super::permissions::{check_step_permissions, parse_permissions};
use super::pipeline::check_pipeline_text;
use super::retry::parse_retry;
use super::wasm::parse_uses;
use super::{Known, V};
use crate::value::Item;
use crate::workflow::model::{Action, OnError, Step};
use std::collections::HashSet;

pub(super) const STEP_KEYS: &[&str] = &[
    "id",
    "description",
    "run",
    "command",
    "pipeline",
    "uses",
    "with",
    "workflow",
    "workflow_args",
    "parallel",
    "for_each",
    "steps",
    "item_var",
    "index_var",
    "batch_size",
    "pause_ms",
    "stdin",
    "approval",
    "input",
    "when",
    "condition",
    "env",
    "cwd",
    "retry",
    "timeout_ms",
    "on_error",
    "permissions",
];

pub(super) fn parse_step(
    v: &mut V,
    ptr: &str,
    raw: &Item,
    seen: &mut HashSet<String>,
    all: &HashSet<String>,
) -> Option<Step> {
    let Some(obj) = raw.as_object() else {
        v.val(ptr, "Workflow step must be an object");
        return None;
    };
    let id = match obj.get("id") {
        Some(Item::String(s)) if !s.trim().is_empty() => s.clone(),
        _ => {
            v.val(ptr, "Workflow step requires an id");
            return None;
        }
    };
    v.keys(ptr, obj, STEP_KEYS, &format!("step {id}"));
    let pos = v.doc.value_pos(ptr);
    let available = seen.clone();
    if !seen.insert(id.clone()) {
        v.val(
            &format!("{ptr}/id"),
            format!("Duplicate workflow step id: {id}"),
        );
    }
    let known = Known {
        available: &available,
        all,
    };
    let p = |k: &str| format!("{ptr}/{k}");

    // Exactly one action.
    let present: Vec<&str> = [
        "run", "command", "pipeline", "uses", "workflow", "parallel", "for_each",
    ]
    .into_iter()
    .filter(|k| obj.get(*k).is_some_and(|x| !x.is_null()))
    .collect();
    let actions = present
        .iter()
        .filter(|k| !(**k == "command" && present.contains(&"run")))
        .count();
    if actions > 1 {
        v.key(
            &p(present[1]),
            format!("Workflow step {id} can only define one of run, command, pipeline, uses, workflow, parallel, or for_each"),
        );
    }
    let mut action = Action::None;
    if let Some(k) = present.first().copied() {
        action = match k {
            "run" | "command" => {
                let raw = obj.get("run").filter(|x| x.is_string()).or(obj.get(k));
                match raw {
                    Some(Item::String(s)) => {
                        known.template(v, &p(k), &id, s);
                        Action::Shell(s.clone())
                    }
                    _ => {
                        v.val(&p(k), format!("Workflow step {id} {k} must be a string"));
                        Action::None
                    }
                }
            }
            "pipeline" => match obj.get("pipeline") {
                Some(Item::String(s)) => {
                    known.template(v, &p(k), &id, s);
                    check_pipeline_text(v, &p(k), &id, s);
                    Action::Pipeline(s.clone())
                }
                _ => {
                    v.val(
                        &p(k),
                        format!("Workflow step {id} pipeline must be a string"),
                    );
                    Action::None
                }
            },
            "uses" => parse_uses(v, ptr, obj, &id),
            "workflow" => parse_workflow_ref(v, ptr, obj, &id, &known),
            "parallel" => parse_parallel(v, ptr, obj, &id, &known, seen),
            _ => parse_for_each(v, ptr, obj, &id, &known),
        };
    }
    if obj.contains_key("with") && !present.contains(&"uses") {
        v.key(&p("with"), format!("Workflow step {id} with requires uses"));
    }
    if obj.contains_key("workflow_args") && !present.contains(&"workflow") {
        v.key(
            &p("workflow_args"),
            format!("Workflow step {id} workflow_args requires workflow"),
        );
    }
    if !present.contains(&"for_each") {
        for k in ["steps", "item_var", "index_var", "batch_size", "pause_ms"] {
            if obj.contains_key(k) {
                v.key(&p(k), format!("Workflow step {id} {k} requires for_each"));
            }
        }
    }

    let approval = parse_approval(v, &p("approval"), obj.get("approval"), &id);
    let input = parse_input(v, &p("input"), obj.get("input"), &id);
    if input.is_some() && approval.is_some() {
        v.key(
            &p("input"),
            format!("Workflow step {id} cannot define both approval and input"),
        );
    }
    if input.is_some() && !matches!(action, Action::None) {
        v.key(
            &p("input"),
            format!("Workflow step {id} input steps cannot define run, command, pipeline, uses, workflow, parallel, or for_each"),
        );
    }
    if matches!(action, Action::None) && approval.is_none() && input.is_none() && present.is_empty()
    {
        v.val(
            ptr,
            format!("Workflow step {id} requires run, command, pipeline, uses, workflow, parallel, for_each, approval, or input"),
        );
    }
    if matches!(action, Action::ForEach(_)) {
        for k in ["approval", "input", "stdin"] {
            if obj
                .get(k)
                .is_some_and(|x| !x.is_null() && x != &Item::Bool(false))
            {
                v.key(
                    &p(k),
                    format!("Workflow step {id} for_each steps cannot define {k}"),
                );
            }
        }
    }
    let stdin = known.stdin(v, &p("stdin"), &id, obj.get("stdin"));
    let cond_key = if obj.contains_key("when") {
        "when"
    } else {
        "condition"
    };
    let when = obj
        .get(cond_key)
        .and_then(|c| known.condition(v, &p(cond_key), &id, c));
    let env = v.env(&p("env"), obj.get("env"), &format!("Workflow step {id}"));
    let cwd = v.string(
        &p("cwd"),
        obj.get("cwd"),
        &format!("Workflow step {id} cwd must be a string"),
    );
    let timeout_ms = v.int_range(
        &p("timeout_ms"),
        obj.get("timeout_ms"),
        &format!(
            "Workflow step {id} timeout_ms must be a positive integer between 1 and 2147483647"
        ),
    );
    let on_error = match obj.get("on_error") {
        None | Some(Item::Null) => OnError::Stop,
        Some(Item::String(s)) if s == "stop" => OnError::Stop,
        Some(Item::String(s)) if s == "continue" => OnError::Continue,
        Some(Item::String(s)) if s == "skip_rest" => OnError::SkipRest,
        Some(_) => {
            v.val(
                &p("on_error"),
                format!(
                    "Workflow step {id} on_error must be \"stop\", \"continue\", or \"skip_rest\""
                ),
            );
            OnError::Stop
        }
    };
    let retry = parse_retry(v, &p("retry"), obj.get("retry"), &id);
    let what = format!("Workflow step {id} permissions");
    let permissions = parse_permissions(v, &p("permissions"), &what, obj.get("permissions"));
    if let Some(own) = &permissions {
        check_step_permissions(v, &p("permissions"), &id, own);
    }
    Some(Step {
        id,
        pos,
        action,
        stdin,
        approval,
        input,
        when,
        env,
        cwd,
        retry,
        timeout_ms,
        on_error,
        permissions,
    })
}
