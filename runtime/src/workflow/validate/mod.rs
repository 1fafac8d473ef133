//! Turning a loaded document into a [`Workflow`], checking everything that
//! can be checked before a step runs. Every problem is reported as
//! `<file>:<line>:<col>: <message>` (all of them, one per line), and nothing
//! runs when there is any.
//!
//! One file per part of a workflow, as `workflow/steps/` runs them: `args`,
//! `permissions`, `step` (what every step shares), one per step kind
//! (`pipeline` with shell, `wasm`, `compose`, `parallel`, `for_each`),
//! `gates` (approval and input) and `retry`.

mod args;
mod compose;
mod for_each;
mod gates;
mod parallel;
mod permissions;
mod pipeline;
mod retry;
mod step;
mod wasm;

use args::parse_args;
use permissions::parse_permissions;
use step::parse_step;

use super::condition::Condition;
use super::load::{seg, Doc, Pos, Source};
use super::model::*;
use super::template;
use crate::error::{Error, Result};
use crate::executor::suggest;
use crate::kernel::Registry;
use crate::value::Item;
use serde_json::Map;
use std::collections::HashMap;
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

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
struct V<'a> {
    doc: &'a Doc,
    /// Where pipeline stage names are looked up (`None`: not checked).
    registry: Option<&'a Registry>,
    shown: &'a str,
    errors: Vec<(Pos, String)>,
    /// The workflow's `permissions:`, which step blocks must stay within.
    declared: Option<Permissions>,
    /// Every pipeline text whose stages were checked against the registry
    /// (pointer, owner, text): what [`validate_shared`] checks again.
    stages: Vec<(String, String, String)>,
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
    validate_recording(source, doc, registry).map(|(wf, _)| wf)
}

/// Validated workflows by file (its canonical path and how messages name
/// it) and content digest, with the pipeline texts their validation looked
/// up in the registry. `lobster serve` runs the same catalog file many
/// times; validating it anew each time was wasted work.
///
/// What validation reads: the document (a function of the file's bytes,
/// hence of the digest, and of its extension, hence of the path), the
/// source (`shown`, `path`, `digest`) that the workflow carries and its
/// messages name, and the registry — only to look up pipeline stages
/// (`pipeline::check_pipeline_text`), which changes no part of the
/// workflow. So an entry is reused only for the same path, name and
/// digest (a changed file is validated anew), and its stage lookups are
/// made again against the run's own registry (each tenant's steps, its
/// policy, a step file added or removed since): any problem there and the
/// whole file is validated again, so the message is the one a fresh
/// validation gives.
type PlanMemo = Mutex<HashMap<(PathBuf, String, String), Memoised>>;

/// A validated workflow and the pipeline texts to look up again.
type Memoised = (Arc<Workflow>, Arc<Vec<(String, String, String)>>);

/// Most validated workflows remembered; past it the memo starts afresh.
const PLAN_MEMO_ENTRIES: usize = 1024;

fn plan_memo() -> &'static PlanMemo {
    static MEMO: OnceLock<PlanMemo> = OnceLock::new();
    MEMO.get_or_init(Default::default)
}

/// [`validate`] through the memo of validated workflows (see [`PlanMemo`]):
/// the same file (path, name, digest) is validated once per process and
/// only its pipeline stages are looked up again, in `registry`.
pub fn validate_shared(
    source: Source,
    doc: &Doc,
    registry: Option<&Registry>,
) -> Result<Arc<Workflow>> {
    let key = (
        source.path.clone(),
        source.shown.clone(),
        source.digest.clone(),
    );
    let known = plan_memo().lock().ok().and_then(|m| m.get(&key).cloned());
    if let Some((wf, stages)) = known {
        let mut v = V {
            doc,
            registry,
            shown: &key.1,
            errors: Vec::new(),
            declared: None,
            stages: Vec::new(),
        };
        for (ptr, id, text) in stages.iter() {
            pipeline::check_pipeline_text(&mut v, ptr, id, text);
        }
        if v.errors.is_empty() {
            return Ok(wf);
        }
    }
    let (wf, stages) = validate_recording(source, doc, registry)?;
    let wf = Arc::new(wf);
    if let Ok(mut memo) = plan_memo().lock() {
        if memo.len() >= PLAN_MEMO_ENTRIES && !memo.contains_key(&key) {
            memo.clear();
        }
        memo.insert(key, (wf.clone(), Arc::new(stages)));
    }
    Ok(wf)
}

/// [`validate`], with the pipeline texts it looked up in the registry.
#[allow(clippy::type_complexity)]
fn validate_recording(
    source: Source,
    doc: &Doc,
    registry: Option<&Registry>,
) -> Result<(Workflow, Vec<(String, String, String)>)> {
    let shown = source.shown.clone();
    let mut v = V {
        doc,
        registry,
        shown: &shown,
        errors: Vec::new(),
        declared: None,
        stages: Vec::new(),
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
    Ok((
        Workflow {
            source,
            name,
            description,
            args,
            env,
            cwd,
            steps,
            permissions,
        },
        v.stages,
    ))
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
            suggest("timout_ms", step::STEP_KEYS.iter().copied()),
            Some("timeout_ms")
        );
        assert_eq!(suggest("zzzzzz", ["plan"]), None);
    }

    /// The memo of validated workflows: the same file (path, name, digest)
    /// is validated once, a changed one anew, and the stage lookups are
    /// made again in each run's registry.
    #[test]
    fn a_validated_workflow_is_reused_only_for_the_same_file_and_registry_lookups() {
        let memo = |text: &str, path: &str, registry: Option<&Registry>| {
            let doc = parse_text(text, false, "m.lobster").unwrap();
            let source = Source {
                shown: "m.lobster".into(),
                path: PathBuf::from(path),
                digest: blake3::hash(text.as_bytes()).to_hex().to_string(),
            };
            validate_shared(source, &doc, registry)
        };
        let builtin = crate::commands::builtin();
        let path = "/memo-test/a.lobster";
        let text = "steps:\n  - id: a\n    pipeline: nosuchstage --x 1\n";
        // No registry: stages are not looked up, and the result is kept.
        let first = memo(text, path, None).unwrap();
        let again = memo(text, path, None).unwrap();
        assert!(Arc::ptr_eq(&first, &again), "validated once");
        // A registry without the stage: refused with a fresh validation's
        // message, although the file was remembered as valid.
        let e = memo(text, path, Some(&builtin)).unwrap_err().to_string();
        assert_eq!(
            e,
            "m.lobster:3:15: Workflow step a pipeline references unknown command: nosuchstage"
        );
        assert!(Arc::ptr_eq(&memo(text, path, None).unwrap(), &first));
        // A changed file (another digest) is validated anew.
        let changed = "steps:\n  - id: b\n    pipeline: head --n 1\n";
        let other = memo(changed, path, Some(&builtin)).unwrap();
        assert_eq!(other.steps[0].id, "b");
        assert!(Arc::ptr_eq(
            &memo(changed, path, Some(&builtin)).unwrap(),
            &other
        ));
        // The same text at another path is another entry.
        let elsewhere = memo(changed, "/memo-test/b.lobster", None).unwrap();
        assert!(!Arc::ptr_eq(&elsewhere, &other));
        assert_eq!(elsewhere.source.path, PathBuf::from("/memo-test/b.lobster"));
    }
}
