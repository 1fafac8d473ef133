//! `workflow:` steps: a sub-workflow's path and its `workflow_args`.

use super::{Known, V};
use crate::value::Item;
use crate::workflow::load::seg;
use crate::workflow::model::Action;
use serde_json::Map;

pub(super) fn parse_workflow_ref(
    v: &mut V,
    ptr: &str,
    obj: &Map<String, Item>,
    id: &str,
    known: &Known,
) -> Action {
    let p = format!("{ptr}/workflow");
    let path = match obj.get("workflow") {
        Some(Item::String(s)) if !s.trim().is_empty() => s.clone(),
        Some(Item::String(_)) => {
            v.val(
                &p,
                format!("Workflow step {id} workflow path cannot be blank"),
            );
            return Action::None;
        }
        _ => {
            v.val(
                &p,
                format!("Workflow step {id} workflow must be a string (file path)"),
            );
            return Action::None;
        }
    };
    known.template(v, &p, id, &path);
    let args = match obj.get("workflow_args") {
        None | Some(Item::Null) => Map::new(),
        Some(Item::Object(m)) => {
            for (k, a) in m {
                if let Item::String(s) = a {
                    known.template(v, &format!("{ptr}/workflow_args/{}", seg(k)), id, s);
                }
            }
            m.clone()
        }
        Some(_) => {
            v.val(
                &format!("{ptr}/workflow_args"),
                format!("Workflow step {id} workflow_args must be a plain object"),
            );
            Map::new()
        }
    };
    Action::Workflow {
        path,
        args,
        pos: v.doc.value_pos(&p),
    }
}
