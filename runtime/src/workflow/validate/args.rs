//! The workflow's `args:` (names, types, defaults, required).

use super::V;
use crate::value::Item;
use crate::workflow::load::seg;
use crate::workflow::model::{ArgDef, ArgType};

const ARG_KEYS: &[&str] = &["default", "description", "type", "required"];

pub(super) fn parse_args(v: &mut V, raw: Option<&Item>) -> Vec<ArgDef> {
    let mut out = Vec::new();
    let map = match raw {
        None | Some(Item::Null) => return out,
        Some(Item::Object(m)) => m,
        Some(_) => {
            v.val("/args", "Workflow args must be an object");
            return out;
        }
    };
    for (name, def) in map {
        let ptr = format!("/args/{}", seg(name));
        let mut arg = ArgDef {
            name: name.clone(),
            default: None,
            ty: None,
            required: false,
            description: None,
        };
        match def {
            Item::Object(d) => {
                v.keys(&ptr, d, ARG_KEYS, &format!("arg {name}"));
                arg.default = d.get("default").cloned();
                arg.description = v.string(
                    &format!("{ptr}/description"),
                    d.get("description"),
                    &format!("Workflow arg {name} description must be a string"),
                );
                match d.get("type") {
                    None | Some(Item::Null) => {}
                    Some(Item::String(t)) if ArgType::parse(t).is_some() => arg.ty = ArgType::parse(t),
                    Some(_) => v.val(
                        &format!("{ptr}/type"),
                        format!("Workflow arg {name} type must be one of: string, number, integer, boolean, object, array"),
                    ),
                }
                match d.get("required") {
                    None | Some(Item::Null) => {}
                    Some(Item::Bool(b)) => arg.required = *b,
                    Some(_) => v.val(
                        &format!("{ptr}/required"),
                        format!("Workflow arg {name} required must be a boolean"),
                    ),
                }
                if let (Some(t), Some(d)) = (arg.ty, &arg.default) {
                    if !t.accepts(d) {
                        v.val(
                            &format!("{ptr}/default"),
                            format!("Workflow arg {name} default must be {}", t.with_article()),
                        );
                    }
                }
            }
            Item::Null => {}
            _ => v.val(&ptr, format!("Workflow arg {name} must be an object")),
        }
        out.push(arg);
    }
    out
}
