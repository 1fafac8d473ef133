//! `parallel:` steps: branches run concurrently on threads, each with its
//! own cancellation handle (a child of the step's), so `wait: any` and
//! `timeout_ms` can stop the others.

use crate::error::{Error, Result};
use crate::kernel::{CancelReason, Context};
use crate::value::{to_js_json, Item};
use crate::workflow::model::{Action, Parallel, Step};
use crate::workflow::policy::resolve_cwd;
use crate::workflow::run::{derive, extend_env, resolve_stdin, Runner};
use crate::workflow::template::MapScope;
use serde_json::{json, Map};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Run the branches of `p`; store each kept branch result under its own id.
pub fn run(
    runner: &mut Runner,
    step: &Step,
    p: &Parallel,
    (env, lookup): (BTreeMap<String, String>, BTreeMap<String, String>),
    cwd: PathBuf,
    ctx: &Context,
) -> Result<Item> {
    let wf = runner.wf.clone();
    let scope = MapScope {
        args: &runner.args,
        results: &runner.results,
        extra: None,
    };
    let cancels: Vec<_> = p.branches.iter().map(|_| ctx.cancel.child()).collect();
    let deadline = p
        .timeout_ms
        .map(|ms| Instant::now() + Duration::from_millis(ms));
    let (tx, rx) = mpsc::channel::<(usize, Result<Item>)>();
    let mut settled: Vec<Option<Result<Item>>> = p.branches.iter().map(|_| None).collect();
    let mut order = Vec::new();
    let mut timed_out = false;
    std::thread::scope(|s| {
        for (i, b) in p.branches.iter().enumerate() {
            let tx = tx.clone();
            let mut benv = env.clone();
            extend_env(&mut benv, &mut lookup.clone(), &b.env, &scope);
            let what = format!("Workflow step {} branch {}", step.id, b.id);
            let bcwd = match &b.cwd {
                Some(c) => resolve_cwd(&wf, &what, c, &scope, ctx),
                None => Ok(cwd.clone()),
            };
            let bctx = derive(ctx, None, None, Some(cancels[i].clone()));
            let scope = &scope;
            s.spawn(move || {
                let r = (|| {
                    let bcwd = bcwd?;
                    let stdin = resolve_stdin(b.stdin.as_ref(), scope)?;
                    match &b.action {
                        Action::Shell(line) => {
                            super::shell::run(&b.id, line, stdin, benv, bcwd, scope, &bctx)
                        }
                        Action::Pipeline(text) => {
                            super::pipeline::run(&b.id, text, stdin, benv, bcwd, scope, &bctx)
                        }
                        _ => Err(Error::runtime("unsupported parallel branch")),
                    }
                })();
                let _ = tx.send((i, r));
            });
        }
        drop(tx);
        let mut pending = p.branches.len();
        while pending > 0 {
            let msg = match deadline {
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    match rx.recv_timeout(left) {
                        Ok(m) => m,
                        Err(mpsc::RecvTimeoutError::Timeout) => {
                            timed_out = true;
                            cancels
                                .iter()
                                .for_each(|c| c.trigger(CancelReason::Timeout));
                            // Drain: every branch settles once killed.
                            for m in rx.iter() {
                                settled[m.0] = Some(m.1);
                            }
                            break;
                        }
                        Err(_) => break,
                    }
                }
                None => match rx.recv() {
                    Ok(m) => m,
                    Err(_) => break,
                },
            };
            pending -= 1;
            order.push(msg.0);
            let first = order.len() == 1;
            settled[msg.0] = Some(msg.1);
            if p.wait_any && first {
                for (j, c) in cancels.iter().enumerate() {
                    if j != msg.0 {
                        c.trigger(CancelReason::Timeout);
                    }
                }
            }
        }
    });
    ctx.cancel.check()?;
    if timed_out {
        return Err(Error::runtime(format!(
            "Parallel step {} timed out after {}ms",
            step.id,
            p.timeout_ms.unwrap_or(0)
        )));
    }
    let mut merged = Map::new();
    let stdout;
    let lost = || Error::runtime(format!("Parallel step {} lost a branch", step.id));
    if p.wait_any {
        let winner = *order.first().ok_or_else(lost)?;
        let r = settled[winner].take().ok_or_else(lost)??;
        if let Some(j) = r.get("json") {
            merged.insert(p.branches[winner].id.clone(), j.clone());
        }
        stdout = r
            .get("stdout")
            .and_then(Item::as_str)
            .unwrap_or_default()
            .to_string();
        runner.results.insert(p.branches[winner].id.clone(), r);
    } else {
        if let Some(e) = order
            .iter()
            .find_map(|&i| settled[i].as_ref().and_then(|r| r.as_ref().err()))
        {
            return Err(Error::runtime(format!("Parallel branch failed: {e}")));
        }
        for (i, b) in p.branches.iter().enumerate() {
            let r = settled[i].take().ok_or_else(lost)??;
            if let Some(j) = r.get("json") {
                merged.insert(b.id.clone(), j.clone());
            }
            runner.results.insert(b.id.clone(), r);
        }
        stdout = to_js_json(&Item::Object(merged.clone()));
    }
    Ok(json!({"id": step.id, "stdout": stdout, "json": Item::Object(merged)}))
}
