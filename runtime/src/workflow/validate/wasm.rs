//! `uses:` steps: a component and its `with:` object.

use super::V;
use crate::value::Item;
use crate::workflow::model::Action;
use serde_json::Map;

pub(super) fn parse_uses(v: &mut V, ptr: &str, obj: &Map<String, Item>, id: &str) -> Action {
    let p = format!("{ptr}/uses");
    let uses = match obj.get("uses") {
        Some(Item::String(s)) if !s.trim().is_empty() => s.clone(),
        _ => {
            v.val(
                &p,
                format!("Workflow step {id} uses must be a non-empty string (component path)"),
            );
            return Action::None;
        }
    };
    let with = match obj.get("with") {
        None | Some(Item::Null) => Item::Object(Map::new()),
        Some(w @ Item::Object(_)) => w.clone(),
        Some(_) => {
            v.val(
                &format!("{ptr}/with"),
                format!("Workflow step {id} with must be an object"),
            );
            Item::Null
        }
    };
    Action::Wasm {
        uses,
        with,
        pos: v.doc.value_pos(&p),
    }
}
