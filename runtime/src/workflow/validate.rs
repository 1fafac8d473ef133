//! Turning a loaded document into a [`Workflow`], checking everything that
//! can be checked before a step runs. Every problem is reported as
//! `<file>:<line>:<col>: <message>` (all of them, one per line), and nothing
//! runs when there is any.

use super::condition::Condition;
use super::load::{seg, Doc, Pos, Source};
use super::model::*;
use super::template;
use crate::error::{Error, Result};
use crate::executor::suggest;
use crate::kernel::Registry;
use crate::value::Item;
use serde_json::Map;
use std::collections::HashSet;

const TOP_KEYS: &[&str] = &[
    "name",
    "description",
    "args",
    "env",
    "cwd",
    "steps",
    "cost_limit",
    "permissions",
];
const PERMISSION_KEYS: &[&str] = &["read", "write", "env", "tools", "host_exec", "limits"];
const LIMIT_KEYS: &[&str] = &["fuel", "memory_bytes", "timeout_ms", "output_bytes"];
const ARG_KEYS: &[&str] = &["default", "description", "type", "required"];
const STEP_KEYS: &[&str] = &[
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
const RETRY_KEYS: &[&str] = &["max", "backoff", "delay_ms", "max_delay_ms", "jitter"];
const PARALLEL_KEYS: &[&str] = &["wait", "timeout_ms", "branches"];
const BRANCH_KEYS: &[&str] = &["id", "run", "command", "pipeline", "env", "cwd", "stdin"];
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

struct V<'a> {
    doc: &'a Doc,
    /// Where pipeline stage names are looked up (`None`: not checked).
    registry: Option<&'a Registry>,
    shown: &'a str,
    errors: Vec<(Pos, String)>,
    /// The workflow's `permissions:`, which step blocks must stay within.
    declared: Option<Permissions>,
}

impl V<'_> {
    fn at(&mut self, pos: Pos, msg: impl AsRef<str>) {
        let line = format!("{}:{}:{}: {}", self.shown, pos.line, pos.col, msg.as_ref());
        self.errors.push((pos, line));
    }
    fn key(&mut self, ptr: &str, msg: impl AsRef<str>) {
        let pos = self.doc.key_pos(ptr);
        self.at(pos, msg);
    }
    fn val(&mut self, ptr: &str, msg: impl AsRef<str>) {
        let pos = self.doc.value_pos(ptr);
        self.at(pos, msg);
    }
    fn keys(&mut self, ptr: &str, obj: &Map<String, Item>, allowed: &[&str], what: &str) {
        for k in obj.keys() {
            if !allowed.contains(&k.as_str()) {
                let hint = suggest(k, allowed.iter().copied())
                    .map(|s| format!(" (did you mean `{s}`?)"))
                    .unwrap_or_default();
                self.key(
                    &format!("{ptr}/{}", seg(k)),
                    format!("unknown field `{k}` in {what}{hint}"),
                );
            }
        }
    }
    fn string(&mut self, ptr: &str, v: Option<&Item>, msg: &str) -> Option<String> {
        match v {
            None | Some(Item::Null) => None,
            Some(Item::String(s)) => Some(s.clone()),
            Some(_) => {
                self.val(ptr, msg);
                None
            }
        }
    }
    fn env(&mut self, ptr: &str, v: Option<&Item>, owner: &str) -> Vec<(String, String)> {
        let mut out = Vec::new();
        match v {
            None | Some(Item::Null) => {}
            Some(Item::Object(m)) => {
                for (k, v) in m {
                    let p = format!("{ptr}/{}", seg(k));
                    match v {
                        Item::String(s) => out.push((k.clone(), s.clone())),
                        Item::Number(_) | Item::Bool(_) => {
                            out.push((k.clone(), crate::value::js_to_string(Some(v))))
                        }
                        _ => self.val(&p, format!("{owner} env {k} must be a string")),
                    }
                }
            }
            Some(_) => self.val(ptr, format!("{owner} env must be an object")),
        }
        out
    }
    fn int_range(&mut self, ptr: &str, v: Option<&Item>, msg: &str) -> Option<u64> {
        match v {
            None | Some(Item::Null) => None,
            Some(Item::Number(n))
                if n.as_u64().is_some_and(|x| (1..=2_147_483_647).contains(&x)) =>
            {
                n.as_u64()
            }
            Some(_) => {
                self.val(ptr, msg);
                None
            }
        }
    }
}

/// Validate a loaded document.
pub fn validate(source: Source, doc: &Doc, registry: Option<&Registry>) -> Result<Workflow> {
    let shown = source.shown.clone();
    let mut v = V {
        doc,
        registry,
        shown: &shown,
        errors: Vec::new(),
        declared: None,
    };
    let root = doc.value.as_object().cloned().unwrap_or_default();
    v.keys("", &root, TOP_KEYS, "the workflow");
    let name = v.string("/name", root.get("name"), "Workflow name must be a string");
    let description = v.string(
        "/description",
        root.get("description"),
        "Workflow description must be a string",
    );
    let cwd = v.string("/cwd", root.get("cwd"), "Workflow cwd must be a string");
    let env = v.env("/env", root.get("env"), "Workflow");
    let args = parse_args(&mut v, root.get("args"));
    let permissions = parse_permissions(
        &mut v,
        "/permissions",
        "Workflow permissions",
        root.get("permissions"),
    );
    v.declared = permissions.clone();

    let mut steps = Vec::new();
    match root.get("steps") {
        Some(Item::Array(list)) if !list.is_empty() => {
            let mut seen: HashSet<String> = HashSet::new();
            let all_ids: HashSet<String> = list
                .iter()
                .filter_map(|s| s.get("id").and_then(Item::as_str).map(String::from))
                .chain(list.iter().flat_map(|s| {
                    s.pointer("/parallel/branches")
                        .and_then(Item::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(|b| b.get("id").and_then(Item::as_str).map(String::from))
                }))
                .collect();
            for (i, raw) in list.iter().enumerate() {
                let ptr = format!("/steps/{i}");
                if let Some(step) = parse_step(&mut v, &ptr, raw, &mut seen, &all_ids) {
                    steps.push(step);
                }
            }
        }
        Some(Item::Array(_)) | None | Some(Item::Null) => {
            let pos = if root.contains_key("steps") {
                doc.key_pos("/steps")
            } else {
                Pos { line: 1, col: 1 }
            };
            v.at(pos, "Workflow file requires a non-empty steps array");
        }
        Some(_) => v.val("/steps", "Workflow file requires a non-empty steps array"),
    }
    if !v.errors.is_empty() {
        v.errors.sort_by_key(|(p, _)| (p.line, p.col));
        let lines: Vec<String> = v.errors.into_iter().map(|(_, l)| l).collect();
        return Err(Error::parse(lines.join("\n")));
    }
    Ok(Workflow {
        source,
        name,
        description,
        args,
        env,
        cwd,
        steps,
        permissions,
    })
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

/// `permissions:` at `ptr` (see [`Permissions`]); `what` names the block
/// in messages ("Workflow permissions", "Workflow step X permissions").
fn parse_permissions(v: &mut V, ptr: &str, what: &str, raw: Option<&Item>) -> Option<Permissions> {
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
fn check_step_permissions(v: &mut V, ptr: &str, id: &str, step: &Permissions) {
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

fn parse_args(v: &mut V, raw: Option<&Item>) -> Vec<ArgDef> {
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

/// What ids a reference may name at a point of the workflow.
struct Known<'a> {
    available: &'a HashSet<String>,
    all: &'a HashSet<String>,
}

impl Known<'_> {
    /// A strict reference (`stdin: $a.json`, conditions, `for_each`).
    fn strict(&self, v: &mut V, ptr: &str, owner: &str, id: &str, path: &str) {
        if self.available.contains(id) {
            return;
        }
        if self.all.contains(id) {
            v.val(
                ptr,
                format!("Workflow step {owner} references step {id}, which has not run yet ({id}.{path})"),
            );
            return;
        }
        let hint = suggest(id, self.available.iter().map(String::as_str))
            .map(|s| format!(" (did you mean `{s}`?)"))
            .unwrap_or_default();
        v.val(
            ptr,
            format!("Workflow step {owner}: Unknown step reference: {id}.{path}{hint}"),
        );
    }

    /// Refs in a template: only ids of this workflow that have not run yet are
    /// errors (other `$x.y` are left for the shell, like `$HOME.json`).
    fn template(&self, v: &mut V, ptr: &str, owner: &str, text: &str) {
        for (id, path) in template::refs(text) {
            if !self.available.contains(&id) && self.all.contains(&id) {
                v.val(
                    ptr,
                    format!("Workflow step {owner} references step {id}, which has not run yet ({id}.{path})"),
                );
            }
        }
    }

    fn condition(&self, v: &mut V, ptr: &str, owner: &str, raw: &Item) -> Option<Condition> {
        match Condition::from_value(raw) {
            Ok(c) => {
                for (id, path) in c.refs() {
                    self.strict(v, ptr, owner, &id, &path);
                }
                Some(c)
            }
            Err(e) => {
                v.val(ptr, format!("Workflow step {owner}: {e}"));
                None
            }
        }
    }

    fn stdin(&self, v: &mut V, ptr: &str, owner: &str, raw: Option<&Item>) -> Option<Item> {
        let raw = raw?;
        if let Item::String(s) = raw {
            match template::exact_ref(s) {
                Some((id, path)) => self.strict(v, ptr, owner, &id, &path),
                None => self.template(v, ptr, owner, s),
            }
        }
        Some(raw.clone())
    }
}

fn parse_step(
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

/// Stage names must exist unless they come from a template, and their flags
/// must be ones the stage accepts.
fn check_pipeline_text(v: &mut V, ptr: &str, id: &str, text: &str) {
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

fn parse_uses(v: &mut V, ptr: &str, obj: &Map<String, Item>, id: &str) -> Action {
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

fn parse_workflow_ref(
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

fn parse_branch_action(
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

fn parse_parallel(
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

fn parse_for_each(
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

fn parse_approval(v: &mut V, ptr: &str, raw: Option<&Item>, id: &str) -> Option<Approval> {
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

fn parse_input(v: &mut V, ptr: &str, raw: Option<&Item>, id: &str) -> Option<InputSpec> {
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

fn parse_retry(v: &mut V, ptr: &str, raw: Option<&Item>, id: &str) -> Retry {
    let mut r = Retry::default();
    let o = match raw {
        None | Some(Item::Null) => return r,
        Some(Item::Object(o)) => o,
        Some(_) => {
            v.val(ptr, format!("Workflow step {id} retry must be an object"));
            return r;
        }
    };
    v.keys(ptr, o, RETRY_KEYS, &format!("step {id} retry"));
    match o.get("max") {
        None => {}
        Some(Item::Number(n)) if n.as_u64().is_some_and(|x| (1..=1000).contains(&x)) => {
            r.max = n.as_u64().unwrap_or(1) as u32
        }
        Some(_) => v.val(
            &format!("{ptr}/max"),
            format!("Workflow step {id} retry.max must be a positive integer"),
        ),
    }
    match o.get("backoff") {
        None => {}
        Some(Item::String(s)) if s == "fixed" => {}
        Some(Item::String(s)) if s == "exponential" => r.exponential = true,
        Some(_) => v.val(
            &format!("{ptr}/backoff"),
            format!("Workflow step {id} retry.backoff must be \"fixed\" or \"exponential\""),
        ),
    }
    for (k, slot) in [
        ("delay_ms", &mut r.delay_ms),
        ("max_delay_ms", &mut r.max_delay_ms),
    ] {
        match o.get(k) {
            None => {}
            Some(Item::Number(n)) if n.as_f64().is_some_and(|x| x >= 0.0) => {
                *slot = n.as_f64().unwrap_or(0.0) as u64
            }
            Some(_) => v.val(
                &format!("{ptr}/{k}"),
                format!("Workflow step {id} retry.{k} must be a finite non-negative number"),
            ),
        }
    }
    match o.get("jitter") {
        None => {}
        Some(Item::Bool(b)) => r.jitter = *b,
        Some(_) => v.val(
            &format!("{ptr}/jitter"),
            format!("Workflow step {id} retry.jitter must be a boolean"),
        ),
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workflow::load::parse_text;
    use std::path::PathBuf;

    fn check(text: &str) -> Result<Workflow> {
        let doc = parse_text(text, false, "w.lobster")?;
        let source = Source {
            shown: "w.lobster".into(),
            path: PathBuf::from("/tmp/w.lobster"),
            digest: String::new(),
        };
        validate(source, &doc, Some(&crate::commands::builtin()))
    }

    fn errors(text: &str) -> Vec<String> {
        check(text)
            .unwrap_err()
            .to_string()
            .lines()
            .map(String::from)
            .collect()
    }

    #[test]
    fn parses_every_step_field() {
        let wf = check(
            "args:\n  n: {type: integer, default: 1, required: true}\nsteps:\n  - id: a\n    command: echo\n    env: {X: 1, Y: true}\n    cwd: d\n    timeout_ms: 5\n    retry: {max: 3, backoff: exponential, delay_ms: 2, max_delay_ms: 9, jitter: true}\n    on_error: skip_rest\n  - id: b\n    stdin: $a.json.x\n    when: $a.approved\n    approval:\n      prompt: p\n      items: [1]\n      preview: v\n      initiatedBy: i\n      requiredApprover: r\n      requireDifferentApprover: true\n  - id: c\n    input: {prompt: q, responseSchema: {type: object}, defaults: {}}\n  - id: d\n    workflow: sub.lobster\n    workflow_args: {x: $a.stdout}\n  - id: e\n    parallel: {wait: any, timeout_ms: 7, branches: [{id: e1, run: x}, {id: e2, pipeline: head}]}\n  - id: f\n    for_each: $a.json\n    item_var: it\n    index_var: ix\n    batch_size: 2\n    pause_ms: 1\n    steps: [{id: s, run: echo, when: $it.json}]\n",
        )
        .unwrap();
        assert_eq!(wf.args[0].ty, Some(ArgType::Integer));
        let a = &wf.steps[0];
        assert!(matches!(&a.action, Action::Shell(s) if s == "echo"));
        assert_eq!(
            a.env,
            vec![("X".into(), "1".into()), ("Y".into(), "true".into())]
        );
        assert_eq!(a.timeout_ms, Some(5));
        assert_eq!(a.on_error, OnError::SkipRest);
        assert!(a.retry.exponential && a.retry.jitter && a.retry.max == 3);
        let b = &wf.steps[1];
        let ap = b.approval.as_ref().unwrap();
        assert_eq!(ap.required_approver.as_deref(), Some("r"));
        assert_eq!(ap.require_different_approver, Some(true));
        assert!(wf.steps[2].input.is_some());
        assert!(
            matches!(&wf.steps[3].action, Action::Workflow { path, .. } if path == "sub.lobster")
        );
        assert!(
            matches!(&wf.steps[4].action, Action::Parallel(p) if p.wait_any && p.branches.len() == 2)
        );
        assert!(
            matches!(&wf.steps[5].action, Action::ForEach(f) if f.item_var == "it" && f.batch_size == 2)
        );
    }

    #[test]
    fn approval_shorthands() {
        let wf = check("steps:\n  - id: a\n    approval: true\n  - id: b\n    approval: required\n  - id: c\n    approval: Sure?\n  - id: d\n    approval: false\n    run: x\n").unwrap();
        assert_eq!(wf.steps[0].approval, Some(Approval::default()));
        assert_eq!(wf.steps[1].approval, Some(Approval::default()));
        assert_eq!(
            wf.steps[2].approval.as_ref().unwrap().prompt.as_deref(),
            Some("Sure?")
        );
        assert_eq!(wf.steps[3].approval, None);
    }

    #[test]
    fn reports_positions_and_reference_messages() {
        assert_eq!(
            errors("steps:\n  - id: a\n    run: 1\n  - id: b\n    stdin: x\n"),
            [
                "w.lobster:3:10: Workflow step a run must be a string",
                "w.lobster:4:5: Workflow step b requires run, command, pipeline, uses, workflow, parallel, for_each, approval, or input",
            ]
        );
        assert_eq!(
            errors("steps:\n  - id: a\n    run: x\n    retry: {max: 0, backoff: linear, jitter: 1}\n"),
            [
                "w.lobster:4:18: Workflow step a retry.max must be a positive integer",
                "w.lobster:4:30: Workflow step a retry.backoff must be \"fixed\" or \"exponential\"",
                "w.lobster:4:46: Workflow step a retry.jitter must be a boolean",
            ]
        );
        let e = errors("steps:\n  - id: p\n    parallel: {branches: [{id: p, run: x}, {id: q}]}\n");
        assert!(
            e[0].ends_with("Workflow step p parallel branch id cannot match the step id"),
            "{e:?}"
        );
        assert!(
            e[1].ends_with("Workflow step p parallel branch q requires run, command, or pipeline"),
            "{e:?}"
        );
        let e = errors("steps:\n  - id: f\n    for_each: $x.json\n    steps: []\n");
        assert!(
            e.iter()
                .any(|l| l.ends_with("Unknown step reference: x.json")),
            "{e:?}"
        );
        assert!(
            e.iter()
                .any(|l| l.ends_with("for_each requires a non-empty steps array")),
            "{e:?}"
        );
        let e = errors(
            "steps:\n  - id: i\n    input: {prompt: 1, responseSchema: {type: 12}}\n    run: x\n",
        );
        assert!(
            e.iter()
                .any(|l| l.contains("input.prompt must be a string")),
            "{e:?}"
        );
        assert!(
            e.iter()
                .any(|l| l.contains("input.responseSchema is invalid")),
            "{e:?}"
        );
        assert!(
            e.iter().any(|l| l.contains("input steps cannot define")),
            "{e:?}"
        );
        let e = errors("args:\n  n: {type: float, default: x}\nenv:\n  O: {a: 1}\nsteps:\n  - id: a\n    run: x\n    when: 3\n");
        assert!(e[0].contains("type must be one of"), "{e:?}");
        assert!(
            e.iter()
                .any(|l| l == "w.lobster:4:6: Workflow env O must be a string"),
            "{e:?}"
        );
        assert!(
            e.iter()
                .any(|l| l.ends_with("Workflow step a: Unsupported condition type")),
            "{e:?}"
        );
    }

    #[test]
    fn suggestions() {
        assert_eq!(suggest("paln", ["plan", "apply"]), Some("plan"));
        assert_eq!(
            suggest("timout_ms", STEP_KEYS.iter().copied()),
            Some("timeout_ms")
        );
        assert_eq!(suggest("zzzzzz", ["plan"]), None);
    }
}
