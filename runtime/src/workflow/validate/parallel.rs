//! `parallel:` steps: wait, timeout and uniquely named branches.

use super::pipeline::parse_branch_action;
use super::{Known, V};
use crate::value::Item;
use crate::workflow::model::{Action, Branch, Parallel};
use serde_json::Map;
use std::collections::HashSet;

const PARALLEL_KEYS: &[&str] = &["wait", "timeout_ms", "branches"];

const BRANCH_KEYS: &[&str] = &["id", "run", "command", "pipeline", "env", "cwd", "stdin"];

pub(super) fn parse_parallel(
    v: &mut V,
    ptr: &str,
    obj: &Map<String, Item>,
    id: &str,
    known: &Known,
    seen: &mut HashSet<String>,
) -> Action {
    let p = format!("{ptr}/parallel");
    let Some(par) = obj.get("parallel").and_then(Item::as_object) else {
        v.val(&p, format!("Workflow step {id} parallel must be an object"));
        return Action::None;
    };
    v.keys(&p, par, PARALLEL_KEYS, &format!("step {id} parallel"));
    let wait_any = match par.get("wait") {
        None | Some(Item::Null) => false,
        Some(Item::String(s)) if s == "all" => false,
        Some(Item::String(s)) if s == "any" => true,
        Some(_) => {
            v.val(
                &format!("{p}/wait"),
                format!("Workflow step {id} parallel wait must be \"all\" or \"any\""),
            );
            false
        }
    };
    let timeout_ms = v.int_range(
        &format!("{p}/timeout_ms"),
        par.get("timeout_ms"),
        &format!("Workflow step {id} parallel timeout_ms must be a positive integer between 1 and 2147483647"),
    );
    let mut branches = Vec::new();
    match par.get("branches") {
        Some(Item::Array(list)) if !list.is_empty() => {
            let mut local = HashSet::new();
            for (i, b) in list.iter().enumerate() {
                let bp = format!("{p}/branches/{i}");
                let Some(bo) = b.as_object() else {
                    v.val(
                        &bp,
                        format!("Workflow step {id} parallel branches must be objects"),
                    );
                    continue;
                };
                let bid = match bo.get("id") {
                    Some(Item::String(s)) if !s.trim().is_empty() => s.clone(),
                    _ => {
                        v.val(
                            &bp,
                            format!("Workflow step {id} parallel branch requires an id"),
                        );
                        continue;
                    }
                };
                v.keys(&bp, bo, BRANCH_KEYS, &format!("parallel branch {bid}"));
                if bid == id {
                    v.val(
                        &format!("{bp}/id"),
                        format!("Workflow step {id} parallel branch id cannot match the step id"),
                    );
                } else if !local.insert(bid.clone()) {
                    v.val(
                        &format!("{bp}/id"),
                        format!("Workflow step {id} duplicate parallel branch id: {bid}"),
                    );
                } else if !seen.insert(bid.clone()) {
                    v.val(
                        &format!("{bp}/id"),
                        format!("Duplicate workflow id across steps/parallel branches: {bid}"),
                    );
                }
                let action =
                    parse_branch_action(v, &bp, bo, id, &format!("parallel branch {bid}"), known);
                let env = v.env(
                    &format!("{bp}/env"),
                    bo.get("env"),
                    &format!("Workflow step {id} parallel branch {bid}"),
                );
                let cwd = v.string(
                    &format!("{bp}/cwd"),
                    bo.get("cwd"),
                    &format!("Workflow step {id} parallel branch {bid} cwd must be a string"),
                );
                let stdin = known.stdin(v, &format!("{bp}/stdin"), id, bo.get("stdin"));
                branches.push(Branch {
                    id: bid,
                    action,
                    when: None,
                    env,
                    cwd,
                    stdin,
                });
            }
        }
        _ => v.val(
            &p,
            format!("Workflow step {id} parallel requires a non-empty branches array"),
        ),
    }
    Action::Parallel(Parallel {
        wait_any,
        timeout_ms,
        branches,
    })
}
