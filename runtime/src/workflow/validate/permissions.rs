//! `permissions:` blocks: the workflow's, and each step's, which may only
//! narrow it.

use super::V;
use crate::value::Item;
use crate::workflow::model::Permissions;

const PERMISSION_KEYS: &[&str] = &["read", "write", "env", "tools", "host_exec", "limits"];

const LIMIT_KEYS: &[&str] = &["fuel", "memory_bytes", "timeout_ms", "output_bytes"];

/// `permissions:` at `ptr` (see [`Permissions`]); `what` names the block
/// in messages ("Workflow permissions", "Workflow step X permissions").
pub(super) fn parse_permissions(
    v: &mut V,
    ptr: &str,
    what: &str,
    raw: Option<&Item>,
) -> Option<Permissions> {
    let map = match raw {
        None | Some(Item::Null) => return None,
        Some(Item::Object(m)) => m.clone(),
        Some(_) => {
            v.val(ptr, format!("{what} must be an object"));
            return None;
        }
    };
    v.keys(ptr, &map, PERMISSION_KEYS, what);
    let mut list = |key: &str| {
        string_list(
            v,
            &format!("{ptr}/{key}"),
            map.get(key),
            &format!("{what}: {key} must be a list of strings"),
        )
    };
    let mut p = Permissions {
        read: list("read"),
        write: list("write"),
        env: list("env"),
        tools: list("tools"),
        host_exec: None,
        limits: Default::default(),
        pos: v.doc.key_pos(ptr),
    };
    for tool in p.tools.iter().filter(|t| t.trim().is_empty()) {
        v.val(
            &format!("{ptr}/tools"),
            format!("{what}: tools entry {tool:?} must name a gateway tool (or llm)"),
        );
    }
    match map.get("host_exec") {
        None | Some(Item::Null) => {}
        Some(Item::Bool(b)) => p.host_exec = Some(*b),
        Some(_) => v.val(
            &format!("{ptr}/host_exec"),
            format!("{what}: host_exec must be true or false"),
        ),
    }
    for (key, dirs) in [("read", &p.read), ("write", &p.write)] {
        for dir in dirs {
            let path = std::path::Path::new(dir);
            if dir.is_empty()
                || path.is_absolute()
                || path
                    .components()
                    .any(|c| c == std::path::Component::ParentDir)
            {
                v.val(
                    &format!("{ptr}/{key}"),
                    format!("{what}: directory {dir:?} must be relative to the working directory, without `..`"),
                );
            }
        }
    }
    let lptr = format!("{ptr}/limits");
    match map.get("limits") {
        None | Some(Item::Null) => {}
        Some(Item::Object(l)) => {
            let l = l.clone();
            v.keys(&lptr, &l, LIMIT_KEYS, &format!("{what}.limits"));
            let mut n = |k: &str| match l.get(k) {
                None | Some(Item::Null) => None,
                Some(Item::Number(x)) if x.as_u64().is_some_and(|x| x > 0) => x.as_u64(),
                Some(_) => {
                    v.val(
                        &format!("{lptr}/{k}"),
                        format!("{what}: limits.{k} must be a positive integer"),
                    );
                    None
                }
            };
            p.limits.fuel = n("fuel");
            p.limits.memory_bytes = n("memory_bytes");
            p.limits.timeout_ms = n("timeout_ms");
            p.limits.output_bytes = n("output_bytes");
        }
        Some(_) => v.val(&lptr, format!("{what}: limits must be an object")),
    }
    Some(p)
}

/// A step's `permissions:` may only narrow the workflow's: every directory,
/// variable, `host_exec: true` and limit above the workflow's block is an
/// error at the offending key.
pub(super) fn check_step_permissions(v: &mut V, ptr: &str, id: &str, step: &Permissions) {
    let Some(wf) = v.declared.clone() else {
        return;
    };
    let what = format!("Workflow step {id} permissions");
    let inside = |dir: &str, roots: &[&String]| {
        roots.iter().any(|r| {
            crate::policy::enforce::lexically_inside(
                std::path::Path::new(dir),
                std::path::Path::new(r.as_str()),
            )
        })
    };
    let readable: Vec<&String> = wf.read.iter().chain(&wf.write).collect();
    let writable: Vec<&String> = wf.write.iter().collect();
    for dir in &step.read {
        if !inside(dir, &readable) {
            v.val(
                &format!("{ptr}/read"),
                format!("{what}: read {dir:?} is not inside the workflow's permissions (read or write: {})", shown(&readable)),
            );
        }
    }
    for dir in &step.write {
        if !inside(dir, &writable) {
            v.val(
                &format!("{ptr}/write"),
                format!(
                    "{what}: write {dir:?} is not inside the workflow's permissions.write {}",
                    shown(&writable)
                ),
            );
        }
    }
    for tool in step.tools.iter().filter(|t| !wf.tools.contains(t)) {
        v.val(
            &format!("{ptr}/tools"),
            format!(
                "{what}: tools {tool:?} is not in the workflow's permissions.tools {}",
                shown(&wf.tools.iter().collect::<Vec<_>>())
            ),
        );
    }
    for name in step.env.iter().filter(|n| !wf.env.contains(n)) {
        v.val(
            &format!("{ptr}/env"),
            format!(
                "{what}: env {name:?} is not in the workflow's permissions.env {}",
                shown(&wf.env.iter().collect::<Vec<_>>())
            ),
        );
    }
    if step.host_exec == Some(true) && wf.forbids_exec() {
        v.val(
            &format!("{ptr}/host_exec"),
            format!("{what}: host_exec: true, but the workflow's permissions say host_exec: false"),
        );
    }
    for (key, mine, theirs) in step.limits.above(&wf.limits) {
        v.val(
            &format!("{ptr}/limits/{key}"),
            format!("{what}: limits.{key} {mine} is above the workflow's {theirs}"),
        );
    }
}

/// `[a, b]` for messages.
fn shown(list: &[&String]) -> String {
    let names: Vec<&str> = list.iter().map(|s| s.as_str()).collect();
    format!("[{}]", names.join(", "))
}

fn string_list(v: &mut V, ptr: &str, raw: Option<&Item>, msg: &str) -> Vec<String> {
    match raw {
        None | Some(Item::Null) => Vec::new(),
        Some(Item::Array(a)) if a.iter().all(Item::is_string) => a
            .iter()
            .filter_map(|x| x.as_str().map(String::from))
            .collect(),
        Some(_) => {
            v.val(ptr, msg);
            Vec::new()
        }
    }
}
