//! The operator policy over a workflow file, before any of its steps runs:
//! under `untrusted`, host `run:`/`command:` steps and pipeline steps whose
//! stages run host processes (`exec`) are refused, in the file and in every
//! sub-workflow named by a literal path; grants and limits are checked as
//! for pipelines. Every excess is named, with `file:line:col`.
//!
//! `permissions:` blocks (the workflow's, and a step's own) narrow what
//! steps get: `host_exec: false` refuses host steps the same way; run
//! grants outside the declared `read`/`write`/`env` are dropped (write
//! inside a read-only declaration becomes read); declared `limits` lower
//! the run's ([`narrow`]). A WebAssembly step then gets only what its
//! `describe` asks for of that ([`crate::sandbox::WasmStep::granted`]).

use super::enforce::run_excesses;
use super::Policy;
use crate::commands::Registry;
use crate::error::{Error, Result};
use crate::executor::Context;
use crate::sandbox::Access;
use crate::workflow::model::{Action, Permissions, Step, Workflow};
use std::path::{Path, PathBuf};

/// Refuse the workflow `wf` when the context's policy, or a `permissions:`
/// block in it or in a sub-workflow, forbids any part of it.
pub fn check_workflow(wf: &Workflow, ctx: &Context) -> Result<()> {
    let mut out = workflow_excesses(wf, &ctx.registry, &ctx.policy, &ctx.cwd);
    out.extend(run_excesses(&ctx.policy, ctx));
    if out.is_empty() {
        return check_workflow_pins(wf, ctx);
    }
    Err(
        Error::runtime(format!("policy refuses this run: {}", out.join("; ")))
            .with_hint("nothing ran; ask the operator to widen the policy or change the workflow"),
    )
}

/// Every way `wf` and the sub-workflows it names by a literal path exceed
/// `policy` or their own `permissions:`, each as `file:line:col: message`:
/// host steps where they are forbidden, and declared permissions beyond
/// the policy's roots, variables, maxima or trust. Commands are looked up
/// in `registry`; directories are relative to `cwd`.
pub fn workflow_excesses(
    wf: &Workflow,
    registry: &Registry,
    policy: &Policy,
    cwd: &Path,
) -> Vec<String> {
    let mut w = Walker {
        registry,
        policy,
        cwd,
        seen: Vec::new(),
        out: Vec::new(),
    };
    w.workflow(wf);
    w.out
}

/// The state of one [`workflow_excesses`] walk.
struct Walker<'a> {
    registry: &'a Registry,
    policy: &'a Policy,
    cwd: &'a Path,
    /// Files already walked (a sub-workflow named twice is checked once).
    seen: Vec<PathBuf>,
    out: Vec<String>,
}

impl Walker<'_> {
    fn workflow(&mut self, wf: &Workflow) {
        if self.seen.contains(&wf.source.path) {
            return;
        }
        self.seen.push(wf.source.path.clone());
        if let Some(p) = &wf.permissions {
            self.declared(wf, p);
        }
        for step in &wf.steps {
            if let Some(p) = &step.permissions {
                self.declared(wf, p);
            }
            let at = format!("{}:{}:{}", wf.source.shown, step.pos.line, step.pos.col);
            let mut actions: Vec<(&str, &Action)> = vec![(&step.id, &step.action)];
            match &step.action {
                Action::Parallel(p) => {
                    actions.extend(p.branches.iter().map(|b| (b.id.as_str(), &b.action)))
                }
                Action::ForEach(f) => {
                    actions.extend(f.steps.iter().map(|b| (b.id.as_str(), &b.action)))
                }
                _ => {}
            }
            let forbidder = self.forbidder(wf, step);
            for (id, action) in actions {
                self.action(id, action, &at, forbidder, wf);
            }
        }
    }

    /// A `permissions:` block asking for more than the policy allows.
    fn declared(&mut self, wf: &Workflow, p: &Permissions) {
        let at = format!("{}:{}:{}", wf.source.shown, p.pos.line, p.pos.col);
        if let Some(roots) = self.policy.allowed_roots() {
            for (key, dirs) in [("read", &p.read), ("write", &p.write)] {
                for dir in dirs {
                    if !roots
                        .iter()
                        .any(|r| super::enforce::inside_root(self.cwd, Path::new(dir), r))
                    {
                        self.out.push(format!(
                            "{at}: permissions.{key} {dir} is outside the allowed roots [{}]",
                            roots.join(", ")
                        ));
                    }
                }
            }
        }
        for name in p.env.iter().filter(|n| !self.policy.allows_env(n)) {
            let allowed = self.policy.env.as_deref().unwrap_or_default().join(", ");
            self.out.push(format!(
                "{at}: permissions.env {name} is not among the allowed variables [{allowed}]"
            ));
        }
        for tool in &p.tools {
            let allowed = if tool == super::broker::LLM_PERMISSION {
                super::broker::policy_allows_llm(self.policy)
            } else {
                super::broker::policy_allows_tool(self.policy, tool)
            };
            if !allowed {
                let list = self.policy.tools.as_deref().unwrap_or_default().join(", ");
                self.out.push(format!(
                    "{at}: permissions.tools {tool} is not allowed by the policy (tools [{list}], llm = {})",
                    super::broker::policy_allows_llm(self.policy)
                ));
            }
        }
        if p.host_exec == Some(true) && self.policy.untrusted() {
            self.out.push(format!(
                "{at}: permissions.host_exec: true asks for host processes, which the untrusted policy forbids"
            ));
        }
        for (key, asked, cap) in p.limits.above(&self.policy.max) {
            self.out.push(format!(
                "{at}: permissions.limits.{key} {asked} is above the maximum {cap}"
            ));
        }
    }

    fn action(
        &mut self,
        id: &str,
        action: &Action,
        at: &str,
        forbidder: Option<&str>,
        wf: &Workflow,
    ) {
        match action {
            Action::Shell(_) => {
                if let Some(why) = forbidder {
                    self.out.push(format!(
                        "{at}: step {id} runs a host shell command, which {why}"
                    ))
                }
            }
            Action::Pipeline(text) => {
                let Some(why) = forbidder else {
                    return;
                };
                // Templates fill in quoted arguments only, so the stages are
                // known now, except a templated stage name: that is refused
                // here, since nothing may run before the whole plan is known.
                let Ok(p) = crate::dsl::parse(text) else {
                    self.out.push(format!(
                        "{at}: step {id} has a pipeline that cannot be checked before it runs, which {why}"
                    ));
                    return;
                };
                for (i, stage) in p.stages.iter().enumerate() {
                    if stage.name.contains('$') {
                        self.out.push(format!(
                            "{at}: step {id} stage {} takes its command name from a template ({}), which {why}",
                            i + 1,
                            stage.name,
                        ));
                        continue;
                    }
                    let exec = self
                        .registry
                        .get(&stage.name)
                        .is_some_and(|c| c.signature().side_effects.contains(&"local_exec"));
                    if exec {
                        self.out.push(format!(
                            "{at}: step {id} stage {} ({}) runs host processes, which {why}",
                            i + 1,
                            stage.name,
                        ));
                    }
                }
            }
            Action::Workflow { path, .. } if !path.contains('$') => {
                let full = crate::workflow::steps::compose::resolve_path(&wf.source.path, path);
                // Validation proper (stage names included) is load_plan's;
                // here the file only has to parse.
                if let Ok(child) = crate::workflow::load_workflow(&full, None) {
                    self.workflow(&child);
                }
            }
            _ => {}
        }
    }

    /// Why host processes are refused in `step` of `wf`; `None`: they are not.
    fn forbidder(&self, wf: &Workflow, step: &Step) -> Option<&'static str> {
        let refuses = |p: &Option<Permissions>| p.as_ref().is_some_and(Permissions::forbids_exec);
        if self.policy.untrusted() {
            Some("the untrusted policy forbids")
        } else if refuses(&step.permissions) {
            Some("the step's permissions forbid (host_exec: false)")
        } else if refuses(&wf.permissions) {
            Some("the workflow's permissions forbid (host_exec: false)")
        } else {
            None
        }
    }
}

/// The context the workflow's steps run with when it declares
/// `permissions:`; `None` without a block.
pub fn permissions_context(wf: &Workflow, ctx: &Context) -> Option<Context> {
    wf.permissions.as_ref().map(|p| narrow(p, ctx))
}

/// The context `step` runs with when it declares its own `permissions:`
/// (within its workflow's, which `ctx` already reflects); `None` without.
pub fn step_context(step: &Step, ctx: &Context) -> Option<Context> {
    step.permissions.as_ref().map(|p| narrow(p, ctx))
}

/// `ctx` with its grants narrowed to the `read`/`write`/`env` that `p`
/// declares (write inside a read-only declaration becomes read) and its
/// limits lowered to `p`'s.
pub fn narrow(p: &Permissions, ctx: &Context) -> Context {
    let mut out = crate::workflow::run::derive(ctx, None, None, None);
    let inside = |dir: &Path, list: &[String]| {
        list.iter()
            .any(|r| super::enforce::inside_root(&ctx.cwd, dir, r))
    };
    out.grants.dirs.retain_mut(|d| {
        if d.access == Access::ReadWrite && !inside(&d.host, &p.write) {
            d.access = Access::Read;
        }
        inside(&d.host, &p.write) || inside(&d.host, &p.read)
    });
    out.grants.env.retain(|e| p.env.contains(e));
    out.grants.tools.retain(|t| p.tools.contains(t));
    out.grants.llm &= p.tools.iter().any(|t| t == super::broker::LLM_PERMISSION);
    let as_policy = super::Policy {
        max: p.limits.clone(),
        ..super::Policy::default()
    };
    super::clamp_defaults(&as_policy, &mut out, super::enforce::Requested::default());
    out
}

/// One line per host effect or capability of the top-level steps after
/// step `index` (and per step's own `permissions:`), for
/// `requiresApproval.capabilities`.
pub fn capabilities_after(wf: &Workflow, index: usize, ctx: &Context) -> Vec<String> {
    let mut out = Vec::new();
    for step in wf.steps.iter().skip(index + 1) {
        let label = format!("step {}", step.id);
        if let Some(p) = &step.permissions {
            out.push(format!("{label}: within its permissions: {}", p.summary()));
        }
        match &step.action {
            Action::Shell(_) => out.push(format!("{label}: runs a host shell command")),
            Action::Pipeline(text) => {
                let Ok(p) = crate::dsl::parse(text) else {
                    continue;
                };
                for stage in &p.stages {
                    let sig = ctx.registry.get(&stage.name).map(|c| c.signature());
                    if let Some(call) = super::broker::brokered_call_text(stage) {
                        out.push(format!("{label} ({}): {call}", stage.name));
                    }
                    if sig.is_some_and(|s| s.side_effects.contains(&"local_exec")) {
                        out.push(format!("{label} ({}): runs host processes", stage.name));
                    } else if sig.is_none() {
                        if let Some(step) = ctx
                            .registry
                            .steps()
                            .and_then(|r| r.resolve(&stage.name).ok().flatten())
                        {
                            for r in step
                                .component()
                                .meta()
                                .map(|m| m.requires.clone())
                                .unwrap_or_default()
                            {
                                out.push(format!("{label} ({}): {}", stage.name, r.describe().0));
                            }
                        }
                    }
                }
            }
            Action::Wasm { uses, .. } => {
                let full = crate::workflow::steps::compose::resolve_path(&wf.source.path, uses);
                let reqs =
                    crate::sandbox::load_file(&full, &crate::sandbox::ArtifactCache::disabled())
                        .ok()
                        .and_then(|c| c.meta().map(|m| m.requires.clone()))
                        .unwrap_or_default();
                for r in reqs {
                    out.push(format!("{label}: {}", r.describe().0));
                }
            }
            Action::Workflow { path, .. } => out.push(format!("{label}: runs workflow {path}")),
            Action::Parallel(_) | Action::ForEach(_) => {
                out.push(format!("{label}: runs {}", step.action.kind()))
            }
            Action::None => {}
        }
    }
    out
}

/// Every WebAssembly step the workflow names literally, as (lock key,
/// blake3), in order: pipeline stages by stage name, `uses:` components by
/// their path as written in the file.
pub fn workflow_steps(wf: &Workflow, ctx: &Context) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut add = |name: String, digest: &str| {
        if !out.iter().any(|(n, _): &(String, String)| *n == name) {
            out.push((name, digest.to_string()));
        }
    };
    for step in &wf.steps {
        let mut actions = vec![&step.action];
        match &step.action {
            Action::Parallel(p) => actions.extend(p.branches.iter().map(|b| &b.action)),
            Action::ForEach(f) => actions.extend(f.steps.iter().map(|b| &b.action)),
            _ => {}
        }
        for action in actions {
            match action {
                Action::Pipeline(text) => {
                    let Ok(p) = crate::dsl::parse(text) else {
                        continue;
                    };
                    for stage in p.stages.iter().filter(|s| !s.name.contains('$')) {
                        if let Ok(Some(cmd)) = ctx.registry.resolve(&stage.name) {
                            if let Some(d) = cmd.digest() {
                                add(stage.name.clone(), d);
                            }
                        }
                    }
                }
                Action::Wasm { uses, .. } if !uses.contains('$') => {
                    // Keyed by the path as written: a swapped component
                    // cannot escape its pin by describing another name.
                    if let Ok(step) =
                        crate::workflow::steps::wasm::load(&wf.source.path, &step.id, uses, ctx)
                    {
                        add(uses.clone(), step.digest());
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// Refuse a workflow whose WebAssembly steps do not match their pins in
/// `./lobster.lock` (when it exists).
fn check_workflow_pins(wf: &Workflow, ctx: &Context) -> Result<()> {
    let path = ctx.cwd.join(super::lock::LOCK_FILE);
    if !path.is_file() {
        return Ok(());
    }
    let lock = super::LockFile::load(&path)?;
    let problems: Vec<String> = workflow_steps(wf, ctx)
        .into_iter()
        .filter_map(|(name, digest)| {
            let pinned = lock.pin(&name)?;
            (pinned != digest).then(|| {
                format!(
                    "step {name} does not match its pin in {} (pinned blake3 {}, the component now is {})",
                    super::lock::LOCK_FILE,
                    super::enforce::short(pinned),
                    super::enforce::short(&digest)
                )
            })
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Error::runtime(problems.join("; "))
            .with_hint("nothing ran; review the new component, then run `lobster lock` to pin it"))
    }
}
