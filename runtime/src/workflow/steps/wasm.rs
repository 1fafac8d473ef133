//! `uses:`/`with:` steps: a WebAssembly component (path relative to the
//! workflow file) run in the sandbox with the run's grants and limits.
//! `with` becomes the step's flags (`--key=value`; `true` is a bare flag,
//! `false` and `null` are left out; strings are templates, other values
//! JSON); `stdin` becomes its input items.

use crate::dsl::{Args, FlagValue};
use crate::error::{Error, Result};
use crate::kernel::{collect, stream_of, Command, Context, Output};
use crate::sandbox::file_memo::{load_admitted, load_admitted_file};
use crate::sandbox::{ArtifactCache, WasmStep};
use crate::value::{to_js_json, Item};
use crate::workflow::model::{Action, Workflow};
use crate::workflow::template::{render, Scope, Style};
use std::path::Path;

/// Load (compile or fetch from the cache) the component of a `uses:` step,
/// the first time this run asks for it: the run's resolver pins it, so its
/// preflight, its pin check and its run all see the component that was
/// admitted. Its imports are judged by the context's authority at every
/// call.
pub fn load(
    workflow_path: &Path,
    step_id: &str,
    uses: &str,
    ctx: &Context,
) -> Result<&'static WasmStep> {
    let resolver = crate::sandbox::resolver_of(&ctx.registry);
    let step = match resolver.and_then(|r| r.pinned_uses(workflow_path, step_id, uses)) {
        Some(pin) => pin.step,
        None => {
            let (path, step) = load_anew(workflow_path, step_id, uses, ctx)?;
            match resolver {
                Some(r) => r.pin_uses(workflow_path, step_id, uses, path, step).step,
                None => step,
            }
        }
    };
    // Judged here, where every `uses:` component is loaded (templated paths
    // too), as a pipeline stage's component is judged at plan time.
    ctx.authority()
        .judge(&crate::policy::Request::Component {
            imports: step.component().imports(),
        })
        .map_err(|r| {
            Error::runtime(format!(
                "policy refuses this run: step {step_id} component {uses} {r}"
            ))
            .with_hint("nothing ran; ask the operator to widen the policy or change the workflow")
        })?;
    Ok(step)
}

/// [`load`] without the pin: the file found (fetched, or opened beneath a
/// tenant's roots), admitted and loaded now.
fn load_anew(
    workflow_path: &Path,
    step_id: &str,
    uses: &str,
    ctx: &Context,
) -> Result<(std::path::PathBuf, &'static WasmStep)> {
    let at_step = |e: crate::sandbox::SandboxError| {
        Error::from(e).context(&format!("Workflow step {step_id}: "))
    };
    // The run's admission: fetches `oci://` components, and judges every
    // component (signatures) before it is compiled.
    let admission = crate::sandbox::resolver_of(&ctx.registry).and_then(|s| s.admission().cloned());
    // A tenant's component file, opened beneath its roots: loaded from
    // that handle, not by opening its path again.
    let mut opened_file = None;
    let full = match admission.as_ref().and_then(|a| a.fetch(uses)) {
        Some(fetched) => fetched.map_err(at_step)?,
        None => {
            let full = super::compose::resolve_path(workflow_path, uses);
            let authority = ctx.authority();
            if authority.confinement().tenant {
                // A tenant's components come from its roots only (its
                // working directory, catalog and step directories), opened
                // beneath them; missing and outside get one answer.
                match authority.open_file(&full) {
                    Ok(opened) => {
                        opened_file = Some(opened.file);
                        opened.path
                    }
                    Err(why) => {
                        return Err(Error::runtime(format!(
                            "Workflow step {step_id} component {uses} {}",
                            why.toward_tenant()
                        )))
                    }
                }
            } else if !full.is_file() {
                return Err(Error::runtime(format!(
                    "Workflow step {step_id} component not found: {}",
                    full.display()
                )));
            } else {
                full
            }
        }
    };
    let cache = ArtifactCache::in_state_dir(ctx.state.dir());
    let admitted = admission.as_deref().map(|a| (uses, a));
    let component = match opened_file {
        Some(file) => load_admitted_file(file, &full, &cache, admitted),
        None => load_admitted(&full, &cache, admitted),
    }
    .map_err(at_step)?;
    let name = component
        .meta()
        .map(|m| m.name.clone())
        .unwrap_or_else(|| step_id.to_string());
    Ok((full.clone(), WasmStep::intern(&name, full, component)))
}

/// The pipeline texts of a step (its own, its branches', its sub-steps').
fn pipelines(action: &Action) -> Vec<&str> {
    match action {
        Action::Pipeline(t) => vec![t.as_str()],
        Action::Parallel(p) => p
            .branches
            .iter()
            .flat_map(|b| pipelines(&b.action))
            .collect(),
        Action::ForEach(f) => f.steps.iter().flat_map(|b| pipelines(&b.action)).collect(),
        _ => Vec::new(),
    }
}

/// Before anything runs: every literal `uses:` component loads, and every
/// WebAssembly step (`uses:` or a pipeline stage) is granted what it
/// describes needing.
pub fn prepare(wf: &Workflow, ctx: &Context) -> Result<()> {
    for step in &wf.steps {
        let narrowed = crate::workflow::policy::step_context(step, ctx);
        let ctx = narrowed.as_ref().unwrap_or(ctx);
        for text in pipelines(&step.action) {
            // Templates only fill in quoted arguments, so a templated text
            // parses to the same stages; only a templated stage name waits
            // until the step runs (and is checked then).
            let Ok(p) = crate::dsl::parse(text) else {
                continue;
            };
            for stage in p.stages.iter().filter(|s| !s.name.contains('$')) {
                if let Some(cmd) = ctx.registry.resolve(&stage.name)? {
                    if cmd.digest().is_some() {
                        cmd.preflight(&stage.args, ctx).map_err(|e| {
                            Error::parse(format!(
                                "{}:{}:{}: Workflow step {}: {e}",
                                wf.source.shown, step.pos.line, step.pos.col, step.id
                            ))
                        })?;
                    }
                }
            }
        }
        if let Action::Wasm { uses, pos, .. } = &step.action {
            if uses.contains('$') {
                continue;
            }
            let at = |e: Error| {
                Error::parse(format!("{}:{}:{}: {e}", wf.source.shown, pos.line, pos.col))
            };
            let cmd = load(&wf.source.path, &step.id, uses, ctx).map_err(at)?;
            if let Action::Wasm { with, .. } = &step.action {
                check_with(&step.id, cmd, with).map_err(at)?;
            }
            cmd.preflight(&Args::default(), ctx)
                .map_err(|e| at(e.context(&format!("Workflow step {}: ", step.id))))?;
        }
    }
    Ok(())
}

/// Refuse a `with:` key that step `id`'s component does not declare as a
/// flag (as a pipeline stage's unknown flag is refused). Templated keys and
/// `wasi:cli/command` components (no `describe`) pass.
pub fn check_with(id: &str, cmd: &dyn Command, with: &Item) -> Result<()> {
    let Item::Object(m) = with else {
        return Ok(());
    };
    let mut stage = crate::dsl::Stage {
        name: cmd.signature().name.to_string(),
        args: Args::default(),
        raw: String::new(),
        span: 0..0,
        name_span: 0..0,
        flag_spans: Default::default(),
    };
    for k in m.keys().filter(|k| !k.contains('$')) {
        stage.args.flags.push((k.clone(), FlagValue::Bool(true)));
    }
    crate::executor::check_flags(cmd, &stage).map_err(|e| {
        let message = e
            .to_string()
            .replacen("Unknown flag --", "with: unknown key ", 1)
            .replace("(did you mean --", "(did you mean ");
        Error::parse(format!("Workflow step {id} {message}"))
    })
}

/// `with` as the step's arguments.
pub fn args_of(with: &Item, scope: &dyn Scope) -> Args {
    let mut args = Args::default();
    if let Item::Object(m) = with {
        for (k, v) in m {
            let value = match v {
                Item::Null | Item::Bool(false) => continue,
                Item::Bool(true) => FlagValue::Bool(true),
                Item::String(s) => FlagValue::Str(render(s, scope, Style::Raw, None).text),
                Item::Number(_) => FlagValue::Str(crate::value::js_to_string(Some(v))),
                other => FlagValue::Str(to_js_json(other)),
            };
            args.flags.push((k.clone(), value));
        }
    }
    args
}

/// Run the component of step `id`; the result is `{id, stdout, json?}`.
#[allow(clippy::too_many_arguments)]
pub fn run(
    workflow_path: &Path,
    id: &str,
    uses: &str,
    with: &Item,
    stdin: Option<Item>,
    scope: &dyn Scope,
    ctx: &Context,
) -> Result<(Item, super::pipeline::OutputText)> {
    let path = render(uses, scope, Style::Raw, None).text;
    let cmd = load(workflow_path, id, &path, ctx)?;
    // The pin, with the path as the run really uses it (a templated
    // `uses:` that renders to a pinned path must match its pin; literal
    // ones were checked with the plan).
    let lock_path = ctx
        .authority()
        .workdir()
        .join(crate::policy::lock::LOCK_FILE);
    if lock_path.is_file() {
        let lock = crate::policy::LockFile::load(&lock_path)?;
        if let Some(pinned) = lock.pin(&path).filter(|p| *p != cmd.digest()) {
            return Err(Error::runtime(format!(
                "step {path} does not match its pin in {} (pinned blake3 {}, the component now is {})",
                crate::policy::lock::LOCK_FILE,
                crate::policy::enforce::short(pinned),
                crate::policy::enforce::short(cmd.digest())
            ))
            .with_hint("nothing ran; review the new component, then run `lobster lock` to pin it"));
        }
    }
    let args = args_of(with, scope);
    // `WasmStep::run` narrows the grants to what the step describes.
    cmd.validate(&args)?;
    cmd.preflight(&args, ctx)?;
    let input = match stdin {
        None | Some(Item::Null) => Vec::new(),
        Some(Item::Array(a)) => a,
        Some(other) => vec![other],
    };
    let items = match cmd.run(&args, stream_of(input), ctx)? {
        Output::Items(s) => collect(s)?,
        Output::Lazy(s) => collect(crate::commands::parsed(s))?,
        Output::Rendered { items, .. } => items,
        Output::Halt(_) => {
            return Err(Error::runtime(format!(
                "Workflow step {id}: a WebAssembly step cannot pause the run"
            )))
        }
    };
    Ok(super::pipeline::result_text(id, items, None))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Map};

    #[test]
    fn with_becomes_flags() {
        let args = json!({"n": "${n}"}).as_object().unwrap().clone();
        let results = Map::new();
        let scope = crate::workflow::template::MapScope {
            args: &args,
            results: &results,
            extra: None,
        };
        let a = args_of(
            &json!({"limit": 5, "dry": true, "skip": false, "none": null, "tags": ["a"], "who": "x"}),
            &scope,
        );
        assert_eq!(
            WasmStep::argv(&a),
            ["--limit=5", "--dry", "--tags=[\"a\"]", "--who=x"]
        );
    }
}
