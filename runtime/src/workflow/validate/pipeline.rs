//! Shell and pipeline actions: a pipeline's stage names (and flags) checked
//! against the registry, and the run/command/pipeline action of a parallel
//! branch or a for_each sub-step.

use super::{Known, V};
use crate::executor::suggest;
use crate::value::Item;
use crate::workflow::model::Action;
use serde_json::Map;

/// Stage names must exist unless they come from a template, and their flags
/// must be ones the stage accepts.
pub(super) fn check_pipeline_text(v: &mut V, ptr: &str, id: &str, text: &str) {
    v.stages
        .push((ptr.to_string(), id.to_string(), text.to_string()));
    let Some(registry) = v.registry else {
        return;
    };
    match crate::dsl::parse(text) {
        Ok(p) => {
            for stage in &p.stages {
                if stage.name.contains('$') {
                    continue;
                }
                let found = match registry.resolve(&stage.name) {
                    Ok(Some(cmd)) => {
                        // Flags too, except those a template names.
                        let mut literal = stage.clone();
                        literal.args.flags.retain(|(k, _)| !k.contains('$'));
                        if let Err(e) = crate::executor::check_flags(cmd, &literal) {
                            v.val(ptr, format!("Workflow step {id} pipeline: {e}"));
                        }
                        true
                    }
                    Ok(None) => false,
                    Err(e) => {
                        v.val(
                            ptr,
                            format!("Workflow step {id} pipeline stage {}: {e}", stage.name),
                        );
                        continue;
                    }
                };
                if !found {
                    let hint = suggest(&stage.name, registry.names())
                        .map(|s| format!(" (did you mean `{s}`?)"))
                        .unwrap_or_default();
                    v.val(
                        ptr,
                        format!(
                            "Workflow step {id} pipeline references unknown command: {}{hint}",
                            stage.name
                        ),
                    );
                }
            }
        }
        Err(e) if !text.contains('$') => {
            v.val(ptr, format!("Workflow step {id} pipeline: {e}"));
        }
        Err(_) => {}
    }
}

pub(super) fn parse_branch_action(
    v: &mut V,
    ptr: &str,
    obj: &Map<String, Item>,
    owner: &str,
    what: &str,
    known: &Known,
) -> Action {
    let present: Vec<&str> = ["run", "command", "pipeline"]
        .into_iter()
        .filter(|k| obj.get(*k).is_some_and(|x| !x.is_null()))
        .collect();
    if present.is_empty() {
        v.val(
            ptr,
            format!("Workflow step {owner} {what} requires run, command, or pipeline"),
        );
        return Action::None;
    }
    if present.len() > 1
        && !(present.len() == 2 && present.contains(&"run") && present.contains(&"command"))
    {
        v.key(
            &format!("{ptr}/{}", present[1]),
            format!(
                "Workflow step {owner} {what} can only define one of run, command, or pipeline"
            ),
        );
    }
    let k = present[0];
    match obj.get(k) {
        Some(Item::String(s)) => {
            known.template(v, &format!("{ptr}/{k}"), owner, s);
            if k == "pipeline" {
                check_pipeline_text(v, &format!("{ptr}/{k}"), owner, s);
                Action::Pipeline(s.clone())
            } else {
                Action::Shell(s.clone())
            }
        }
        _ => {
            v.val(
                &format!("{ptr}/{k}"),
                format!("Workflow step {owner} {what} {k} must be a string"),
            );
            Action::None
        }
    }
}
