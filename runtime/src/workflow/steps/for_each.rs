//! `for_each:` steps: sub-steps run once per item, in order, with the item
//! and index as scoped refs (`$item.json`, `$index.stdout`).

use crate::error::{Error, Result};
use crate::kernel::Context;
use crate::value::{to_js_json, Item};
use crate::workflow::args::js_type;
use crate::workflow::model::{Action, ForEach, Step};
use crate::workflow::policy::resolve_cwd;
use crate::workflow::run::{allowed, extend_env, resolve_stdin, sleep_checked, Runner};
use crate::workflow::template::MapScope;
use serde_json::{json, Map};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Iterate `f` over its list.
pub fn run(
    runner: &mut Runner,
    step: &Step,
    f: &ForEach,
    (env, lookup): (BTreeMap<String, String>, BTreeMap<String, String>),
    cwd: PathBuf,
    ctx: &Context,
) -> Result<Item> {
    let wf = runner.wf.clone();
    let list = {
        let scope = runner.scope();
        resolve_stdin(Some(&Item::String(f.expr.clone())), &scope)?
    };
    let items = match list {
        Some(Item::Array(a)) => a,
        other => {
            let t = other.as_ref().map_or("undefined", js_type);
            return Err(Error::runtime(format!(
                "Workflow step {} for_each: expected array, got {t}",
                step.id
            )));
        }
    };
    let mut rows = Vec::new();
    for (i, item) in items.into_iter().enumerate() {
        ctx.cancel.check()?;
        if i > 0 && f.pause_ms > 0 && (i as u64) % f.batch_size == 0 {
            sleep_checked(Duration::from_millis(f.pause_ms), &ctx.cancel)?;
        }
        let mut extra = Map::new();
        let item_stdout = match &item {
            Item::String(s) => s.clone(),
            other => to_js_json(other),
        };
        extra.insert(
            f.item_var.clone(),
            json!({"json": item, "stdout": item_stdout}),
        );
        extra.insert(
            f.index_var.clone(),
            json!({"json": i, "stdout": i.to_string()}),
        );
        let mut row = Map::new();
        row.insert(f.item_var.clone(), item.clone());
        row.insert(f.index_var.clone(), json!(i));
        for sub in &f.steps {
            let scope = MapScope {
                args: &runner.args,
                results: &runner.results,
                extra: Some(&extra),
            };
            if !allowed(sub.when.as_ref(), &scope)? {
                extra.insert(sub.id.clone(), json!({"id": sub.id, "skipped": true}));
                continue;
            }
            let mut senv = env.clone();
            extend_env(&mut senv, &mut lookup.clone(), &sub.env, &scope);
            let scwd = match &sub.cwd {
                Some(c) => {
                    let what = format!("Workflow step {} sub-step {}", step.id, sub.id);
                    resolve_cwd(&wf, &what, c, &scope, ctx)?
                }
                None => cwd.clone(),
            };
            let stdin = resolve_stdin(sub.stdin.as_ref(), &scope)?;
            let r = match &sub.action {
                Action::Shell(line) => {
                    super::shell::run(&sub.id, line, stdin, senv, scwd, &scope, ctx)?
                }
                Action::Pipeline(text) => {
                    super::pipeline::run(&sub.id, text, stdin, senv, scwd, &scope, ctx)?
                }
                _ => return Err(Error::runtime("unsupported for_each sub-step")),
            };
            let value = r
                .get("json")
                .or_else(|| r.get("stdout"))
                .cloned()
                .unwrap_or(Item::Null);
            row.insert(sub.id.clone(), value);
            extra.insert(sub.id.clone(), r);
        }
        rows.push(Item::Object(row));
    }
    let json = Item::Array(rows);
    Ok(json!({"id": step.id, "stdout": to_js_json(&json), "json": json}))
}
