//! The operator policy over workflow files: this room walks a workflow
//! (and every sub-workflow it names by a literal path) and asks the run's
//! [`Authority`] about each capability it finds, before any step runs, so
//! refusals come early and with `file:line:col`. The same questions are
//! asked again when the capability is used (a sub-workflow loaded by
//! `workflow:`, a `uses:` component loaded, a step's `cwd` chosen, a step's
//! `env:` expanded), where templated values are known: see
//! [`check_sub_workflow`], [`resolve_cwd`] and [`super::steps`].
//!
//! Under `untrusted`, host `run:`/`command:` steps and pipeline steps whose
//! stages run host processes (`exec`) are refused, and so are components
//! importing interfaces the host never grants; everywhere, a `cwd:` is
//! relative to the workflow's directory and stays inside the run's working
//! directory. What depends on values only the run knows (a templated
//! sub-workflow path, `cwd`, or component) is listed as decided at run time.
//!
//! `permissions:` blocks (the workflow's, and a step's own) narrow what
//! steps get: `host_exec: false` refuses host steps the same way; run
//! grants outside the declared `read`/`write`/`env` are dropped (write
//! inside a read-only declaration becomes read); declared `limits` lower
//! the run's ([`narrow`]). A WebAssembly step then gets only what its
//! `describe` asks for of that ([`crate::sandbox::WasmStep::granted`]).

use super::model::{Action, Permissions, Step, Workflow};
use super::template::{render, Scope, Style};
use crate::error::{Error, Result};
use crate::kernel::{Access, Authority, Context, Registry, Request};
use crate::policy::enforce::run_excesses;
use crate::policy::recovery::After;
use crate::sandbox::ArtifactCache;
use std::path::{Path, PathBuf};

/// What a walk found: refusals, and what only the run can decide.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Walk {
    /// `file:line:col: message` for each thing the run would refuse.
    pub refused: Vec<String>,
    /// `file:line:col: message` for each capability the run judges when it
    /// knows the value (templated paths and directories).
    pub deferred: Vec<String>,
    /// `file:line:col: message` for what the run would fail on that is not
    /// the policy's to judge: a literal `uses:` component that is missing,
    /// or a `with:` flag its `describe` does not declare (`lobster check`
    /// reports them; a run meets them in `steps::wasm::prepare`).
    pub broken: Vec<String>,
}

/// Refuse the workflow `wf` when the context's policy, or a `permissions:`
/// block in it or in a sub-workflow, forbids any part of it.
pub fn check_workflow(wf: &Workflow, ctx: &Context) -> Result<()> {
    let cache = ArtifactCache::in_state_dir(ctx.state.dir());
    let mut out = walk(wf, &ctx.registry, ctx.authority(), &cache).refused;
    out.extend(run_excesses(ctx.authority(), &ctx.grants, &ctx.limits));
    if out.is_empty() {
        return check_workflow_pins(wf, ctx);
    }
    Err(refusal(&out))
}

/// What the policy refuses in `wf` (the walk), without the pins of
/// `lobster.lock`: for `lobster lock`, which pins anew.
pub fn check_workflow_refusals(wf: &Workflow, ctx: &Context) -> Result<()> {
    let cache = ArtifactCache::in_state_dir(ctx.state.dir());
    let out = walk(wf, &ctx.registry, ctx.authority(), &cache).refused;
    if out.is_empty() {
        Ok(())
    } else {
        Err(refusal(&out))
    }
}

/// Judge a sub-workflow loaded while the run goes (its path templated, or
/// its file rewritten since the plan was checked) exactly as the top file
/// was judged: the same walk, before any of its steps runs.
pub fn check_sub_workflow(wf: &Workflow, ctx: &Context) -> Result<()> {
    let cache = ArtifactCache::in_state_dir(ctx.state.dir());
    let out = walk(wf, &ctx.registry, ctx.authority(), &cache).refused;
    if out.is_empty() {
        return check_workflow_pins(wf, ctx);
    }
    Err(refusal(&out))
}

fn refusal(out: &[String]) -> Error {
    Error::runtime(format!("policy refuses this run: {}", out.join("; ")))
        .with_hint("nothing ran; ask the operator to widen the policy or change the workflow")
}

/// The working directory of a step: `raw` (a template) rendered with
/// `scope`, relative to the directory of `wf`, judged by the authority
/// (inside the run's working directory, not absolute). `what` names the
/// step for the message.
pub fn resolve_cwd(
    wf: &Workflow,
    what: &str,
    raw: &str,
    scope: &dyn Scope,
    ctx: &Context,
) -> Result<PathBuf> {
    let rendered = render(raw, scope, Style::Raw, None).text;
    ctx.authority()
        .resolve_cwd(&rendered, workflow_dir(wf))
        .map_err(|r| {
            let shown = if rendered == raw {
                raw.to_string()
            } else {
                format!("{raw} (= {rendered})")
            };
            Error::runtime(format!("{what} cwd {shown} {r}")).with_hint(
                "nothing ran in that directory; use a directory inside the run's working directory",
            )
        })
}

/// The directory a workflow's relative paths start from.
pub fn workflow_dir(wf: &Workflow) -> &Path {
    wf.source.path.parent().unwrap_or(Path::new("/"))
}

/// Every way `wf` and the sub-workflows it names by a literal path exceed
/// what `authority` allows or their own `permissions:` (see [`Walk`]).
/// Commands and pipeline stages are looked up in `registry`; `uses:`
/// components are loaded through `cache`.
pub fn walk(
    wf: &Workflow,
    registry: &Registry,
    authority: &Authority,
    cache: &ArtifactCache,
) -> Walk {
    let mut w = Walker {
        registry,
        authority,
        cache,
        seen: Vec::new(),
        out: Walk::default(),
    };
    w.workflow(wf);
    w.out
}

/// The state of one [`walk`].
struct Walker<'a> {
    registry: &'a Registry,
    authority: &'a Authority,
    cache: &'a ArtifactCache,
    /// Files already walked (a sub-workflow named twice is checked once).
    seen: Vec<PathBuf>,
    out: Walk,
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
        if let Some(c) = &wf.cwd {
            let at = format!("{}:1:1", wf.source.shown);
            self.cwd(wf, &at, "workflow", c);
        }
        for step in &wf.steps {
            if let Some(p) = &step.permissions {
                self.declared(wf, p);
            }
            let at = format!("{}:{}:{}", wf.source.shown, step.pos.line, step.pos.col);
            if let Some(c) = &step.cwd {
                self.cwd(wf, &at, &format!("step {}", step.id), c);
            }
            let mut actions: Vec<(&str, &Action)> = vec![(&step.id, &step.action)];
            let branches = match &step.action {
                Action::Parallel(p) => p.branches.as_slice(),
                Action::ForEach(f) => f.steps.as_slice(),
                _ => &[],
            };
            for b in branches {
                actions.push((b.id.as_str(), &b.action));
                if let Some(c) = &b.cwd {
                    self.cwd(wf, &at, &format!("step {} branch {}", step.id, b.id), c);
                }
            }
            let forbidder = self.forbidder(wf, step);
            for (id, action) in actions {
                self.action(id, action, &at, forbidder.as_deref(), wf);
            }
        }
    }

    /// A `cwd:`: judged now when literal, else at run time.
    fn cwd(&mut self, wf: &Workflow, at: &str, what: &str, raw: &str) {
        if raw.contains('$') {
            self.out.deferred.push(format!(
                "{at}: {what} cwd {raw} is templated: decided at run time (it must stay inside the run's working directory)"
            ));
            return;
        }
        if let Err(r) = self.authority.resolve_cwd(raw, workflow_dir(wf)) {
            self.out.refused.push(format!("{at}: {what} cwd {raw} {r}"));
        }
    }

    /// A `permissions:` block asking for more than the policy allows.
    fn declared(&mut self, wf: &Workflow, p: &Permissions) {
        let at = format!("{}:{}:{}", wf.source.shown, p.pos.line, p.pos.col);
        let policy = self.authority.policy();
        for (key, dirs, access) in [
            ("read", &p.read, Access::Read),
            ("write", &p.write, Access::ReadWrite),
        ] {
            for dir in dirs {
                let asked = Request::Dir {
                    dir: Path::new(dir),
                    access,
                };
                if let Err(r) = self.authority.judge(&asked) {
                    self.out
                        .refused
                        .push(format!("{at}: permissions.{key} {dir} {r}"));
                }
            }
        }
        for name in &p.env {
            if let Err(r) = self.authority.judge(&Request::EnvName {
                name: name.as_str(),
            }) {
                self.out
                    .refused
                    .push(format!("{at}: permissions.env {name} {r}"));
            }
        }
        for tool in &p.tools {
            let allowed = if tool == crate::policy::broker::LLM_PERMISSION {
                crate::policy::broker::policy_allows_llm(policy)
            } else {
                crate::policy::broker::policy_allows_tool(policy, tool)
            };
            if !allowed {
                let list = policy.tools.as_deref().unwrap_or_default().join(", ");
                self.out.refused.push(format!(
                    "{at}: permissions.tools {tool} is not allowed by the policy (tools [{list}], llm = {})",
                    crate::policy::broker::policy_allows_llm(policy)
                ));
            }
        }
        if p.host_exec == Some(true) {
            if let Err(r) = self.authority.judge(&Request::HostProcess) {
                self.out.refused.push(format!(
                    "{at}: permissions.host_exec: true asks for host processes, which {r}"
                ));
            }
        }
        for (key, asked, cap) in p.limits.above(&policy.max) {
            self.out.refused.push(format!(
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
                    self.out.refused.push(format!(
                        "{at}: step {id} runs a host shell command, which {why}"
                    ))
                }
            }
            Action::Pipeline(text) => self.pipeline(id, text, at, forbidder),
            Action::Wasm { uses, with, pos } => {
                let at = format!("{}:{}:{}", wf.source.shown, pos.line, pos.col);
                if uses.contains('$') {
                    self.out.deferred.push(format!(
                        "{at}: step {id} uses a templated component {uses}: decided at run time (its imports are checked when it loads)"
                    ));
                    return;
                }
                let full = workflow_dir(wf).join(uses);
                // A tenant's components come from its roots only: judged
                // before anything reads the file, with one answer for
                // missing and outside (as the run gives it).
                if self.authority.confinement().tenant && !uses.contains("://") {
                    if let Err(why) = self.authority.open_file(&full) {
                        self.out.refused.push(format!(
                            "{at}: step {id} component {uses} {}",
                            why.toward_tenant()
                        ));
                        return;
                    }
                }
                let loaded = match crate::sandbox::resolver_of(self.registry) {
                    Some(steps) => steps.load_uses(uses, workflow_dir(wf)).map(|(_, c)| c),
                    None => crate::sandbox::load_file(&full, self.cache),
                };
                match loaded {
                    Ok(c) => {
                        let asked = Request::Component {
                            imports: c.imports(),
                        };
                        if let Err(r) = self.authority.judge(&asked) {
                            self.out
                                .refused
                                .push(format!("{at}: step {id} component {uses} {r}"));
                        }
                        let name = c.meta().map_or_else(|| id.to_string(), |m| m.name.clone());
                        let step = crate::sandbox::WasmStep::intern(&name, full.clone(), c);
                        if let Err(e) = super::steps::wasm::check_with(id, step, with) {
                            self.out.broken.push(format!("{at}: {e}"));
                        }
                    }
                    // The run refuses a component that does not link (an
                    // import the host lacks): so does the check. A missing
                    // file is the loader's error, reported by validation.
                    // An admission refusal (signature, registry) says
                    // what to do about it.
                    Err(e @ crate::sandbox::SandboxError::Refused { .. }) => {
                        self.out.refused.push(format!("{at}: step {id}: {e}"))
                    }
                    Err(_) if !uses.contains("://") && !full.exists() => {
                        self.out.broken.push(format!(
                            "{at}: Workflow step {id} component not found: {uses} (looked for {})",
                            full.display()
                        ))
                    }
                    Err(e) if full.is_file() => self
                        .out
                        .refused
                        .push(format!("{at}: step {id} component {uses}: {e}")),
                    Err(_) => {}
                }
            }
            Action::Workflow { path, pos, .. } => {
                let at = format!("{}:{}:{}", wf.source.shown, pos.line, pos.col);
                if path.contains('$') {
                    self.out.deferred.push(format!(
                        "{at}: step {id} runs a templated sub-workflow {path}: decided at run time (the file is checked by the same rules when it loads)"
                    ));
                    return;
                }
                let full = workflow_dir(wf).join(path);
                // Opened as the run opens it (beneath its roots when
                // confined); a missing file is load_plan's to report
                // (toward a tenant it is refused like an outside one).
                // Validation proper (stage names included) is load_plan's;
                // here the file only has to parse.
                let refusal = std::cell::RefCell::new(None);
                let opened = super::open_sub_workflow(&full, None, self.authority, |r| {
                    let e = crate::error::Error::runtime(r.reason.clone());
                    *refusal.borrow_mut() = Some(r);
                    e
                });
                match (opened, refusal.into_inner()) {
                    (_, Some(r)) => self
                        .out
                        .refused
                        .push(format!("{at}: step {id} workflow file {path} {r}")),
                    (Ok(Some(child)), None) => self.workflow(&child),
                    _ => {}
                }
            }
            _ => {}
        }
    }

    /// A pipeline step: host-process stages where they are forbidden, and
    /// components on the step path that import what the policy refuses.
    fn pipeline(&mut self, id: &str, text: &str, at: &str, forbidder: Option<&str>) {
        // Templates fill in quoted arguments only, so the stages are
        // known now, except a templated stage name: that is refused
        // here, since nothing may run before the whole plan is known.
        let Ok(p) = crate::dsl::parse(text) else {
            if let Some(why) = forbidder {
                self.out.refused.push(format!(
                    "{at}: step {id} has a pipeline that cannot be checked before it runs, which {why}"
                ));
            }
            return;
        };
        for (i, stage) in p.stages.iter().enumerate() {
            if stage.name.contains('$') {
                if let Some(why) = forbidder {
                    self.out.refused.push(format!(
                        "{at}: step {id} stage {} takes its command name from a template ({}), which {why}",
                        i + 1,
                        stage.name,
                    ));
                }
                continue;
            }
            let exec = self
                .registry
                .get(&stage.name)
                .is_some_and(|c| c.signature().side_effects.contains(&"local_exec"));
            if exec {
                if let Some(why) = forbidder {
                    self.out.refused.push(format!(
                        "{at}: step {id} stage {} ({}) runs host processes, which {why}",
                        i + 1,
                        stage.name,
                    ));
                }
                continue;
            }
            match self.registry.resolve(&stage.name) {
                Ok(Some(cmd)) if cmd.digest().is_some() => {
                    let asked = Request::Component {
                        imports: cmd.imports(),
                    };
                    if let Err(r) = self.authority.judge(&asked) {
                        self.out.refused.push(format!(
                            "{at}: step {id} stage {} ({}) {r}",
                            i + 1,
                            stage.name
                        ));
                    }
                }
                // A component the run cannot load (e.g. it does not link)
                // is refused by the run: the check says so too.
                Err(e) => self.out.refused.push(format!(
                    "{at}: step {id} stage {} ({}): {e}",
                    i + 1,
                    stage.name
                )),
                _ => {}
            }
        }
    }

    /// Why host processes are refused in `step` of `wf`; `None`: they are not.
    fn forbidder(&self, wf: &Workflow, step: &Step) -> Option<String> {
        let refuses = |p: &Option<Permissions>| p.as_ref().is_some_and(Permissions::forbids_exec);
        if let Err(r) = self.authority.judge(&Request::HostProcess) {
            Some(r.reason)
        } else if refuses(&step.permissions) {
            Some("the step's permissions forbid (host_exec: false)".into())
        } else if refuses(&wf.permissions) {
            Some("the workflow's permissions forbid (host_exec: false)".into())
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
    let mut out = super::run::derive(ctx, None, None, None);
    let workdir = ctx.authority().workdir();
    let inside = |dir: &Path, list: &[String]| {
        list.iter()
            .any(|r| crate::policy::enforce::inside_root(workdir, dir, r))
    };
    out.grants.dirs.retain_mut(|d| {
        if d.access == Access::ReadWrite && !inside(&d.host, &p.write) {
            d.access = Access::Read;
        }
        inside(&d.host, &p.write) || inside(&d.host, &p.read)
    });
    out.grants.env.retain(|e| p.env.contains(e));
    out.grants.tools.retain(|t| p.tools.contains(t));
    out.grants.llm &= p
        .tools
        .iter()
        .any(|t| t == crate::policy::broker::LLM_PERMISSION);
    let as_policy = crate::kernel::Policy {
        max: p.limits.clone(),
        ..crate::policy::Policy::default()
    };
    crate::policy::clamp_defaults(
        &as_policy,
        &mut out.limits,
        crate::policy::enforce::Requested::default(),
    );
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
                    if let Some(call) = crate::policy::broker::brokered_call_text(stage) {
                        out.push(format!("{label} ({}): {call}", stage.name));
                    }
                    if sig.is_some_and(|s| s.side_effects.contains(&"local_exec")) {
                        out.push(format!("{label} ({}): runs host processes", stage.name));
                    } else if sig.is_none() {
                        if let Some(step) = crate::sandbox::resolver_of(&ctx.registry)
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
                let reqs = uses_component(wf, uses, ctx)
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

/// The compiled-component cache a `uses:` step loads through
/// (`steps/wasm.rs`): a component the plan did not load yet is compiled
/// once, not again when it runs.
fn step_cache(ctx: &Context) -> crate::sandbox::ArtifactCache {
    crate::sandbox::ArtifactCache::in_state_dir(ctx.state.dir())
}

/// The component of a `uses:` step, through the run's resolver (an
/// `oci://` reference is fetched; every component is admitted first).
fn uses_component(
    wf: &Workflow,
    uses: &str,
    ctx: &Context,
) -> std::result::Result<
    std::sync::Arc<crate::sandbox::LoadedComponent>,
    crate::sandbox::SandboxError,
> {
    match crate::sandbox::resolver_of(&ctx.registry) {
        Some(steps) => steps.load_uses(uses, workflow_dir(wf)).map(|(_, c)| c),
        None => crate::sandbox::load_file(
            &super::steps::compose::resolve_path(&wf.source.path, uses),
            &step_cache(ctx),
        ),
    }
}

/// What runs after step `index` (its top-level steps), as the recovery
/// rule sees it ([`crate::policy::recovery::recoverable`]): whether a
/// resume of this gate whose resumer died may run again instead of
/// stopping for a human.
pub fn after_gate(wf: &Workflow, index: usize, ctx: &Context) -> Vec<After> {
    wf.steps
        .iter()
        .skip(index + 1)
        .map(|step| after_of(wf, &step.action, ctx))
        .collect()
}

fn after_of(wf: &Workflow, action: &Action, ctx: &Context) -> After {
    match action {
        Action::None => After::Nothing,
        Action::Pipeline(text) => {
            crate::dsl::parse(text).map_or(After::Other, |p| After::Pipeline(p, 0))
        }
        // A templated path is judged by nothing it could name.
        Action::Wasm { uses, .. } if uses.contains('$') => After::Other,
        Action::Wasm { uses, .. } => uses_component(wf, uses, ctx)
            .map_or(After::Other, |c| After::Component(c.imports().to_vec())),
        Action::Parallel(p) => After::AtOnce(
            p.branches
                .iter()
                .map(|b| after_of(wf, &b.action, ctx))
                .collect(),
        ),
        Action::ForEach(f) => After::InOrder(
            f.steps
                .iter()
                .map(|b| after_of(wf, &b.action, ctx))
                .collect(),
        ),
        Action::Shell(_) | Action::Workflow { .. } => After::Other,
    }
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
                    if let Ok(step) = super::steps::wasm::load(&wf.source.path, &step.id, uses, ctx)
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
    let path = ctx
        .authority()
        .workdir()
        .join(crate::policy::lock::LOCK_FILE);
    if !path.is_file() {
        return Ok(());
    }
    let lock = crate::policy::LockFile::load(&path)?;
    let problems: Vec<String> = workflow_steps(wf, ctx)
        .into_iter()
        .filter_map(|(name, digest)| {
            let pinned = lock.pin(&name)?;
            (pinned != digest).then(|| {
                format!(
                    "step {name} does not match its pin in {} (pinned blake3 {}, the component now is {})",
                    crate::policy::lock::LOCK_FILE,
                    crate::policy::enforce::short(pinned),
                    crate::policy::enforce::short(&digest)
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
