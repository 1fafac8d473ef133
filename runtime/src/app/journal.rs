//! The journal's run start and end, written here for every door: what was
//! asked (the pipeline text or the workflow file's content, its args), under
//! which policy, trust and grants, with which components; then how it ended.
//! The engine records the steps, gates, decisions and brokered calls in
//! between through the same handle (`Context::journal`).
//!
//! A serve tenant reads its runs' journals (`GET /v1/runs/{id}/journal`, the
//! run pages), so a tenant's journal names no path on the server: its
//! working directory, workflow file and granted directories are recorded
//! relative to the tenant's root they lie under (`Authority::shown`), and an
//! error's text has the tenant's roots and the state directory taken out
//! ([`masked`]). That is done as the events are written, not when they are
//! shown, so the one chain the tenant reads is the one the operator exports
//! and `lobster verify` checks. The operator's own runs keep their paths.

use crate::error::{Error, Result};
use crate::executor::Context;
use crate::journal::{
    items_digest, now_rfc3339, ComponentRecord, ErrorEvent, Event, GrantsRecord, RequestRecord,
    RunStarted,
};
use crate::policy::Trust;
use crate::resume::Paused;
use crate::sandbox::Access;
use serde_json::Value;
use std::path::Path;

/// Begin `ctx`'s planned journal for `request` (nothing when it is off).
pub fn begin(
    ctx: &Context,
    request: RequestRecord,
    components: Vec<ComponentRecord>,
) -> Result<()> {
    if ctx.journal.door().is_empty() {
        return Ok(());
    }
    let started = RunStarted {
        run_id: String::new(),
        at: now_rfc3339(),
        door: String::new(),
        tenant: ctx.state.tenant(),
        trust: match ctx.policy().trust {
            Trust::Trusted => "trusted",
            Trust::Untrusted => "untrusted",
        }
        .into(),
        policy_digest: ctx.policy().digest(),
        request,
        grants: grants_record(ctx),
        components,
        env_names: ctx.env.keys().cloned().collect(),
        cwd: shown_cwd(ctx),
        // The journal fills in its run's rule.
        digests: Default::default(),
    };
    let mut started = started;
    if let Some(file) = &started.request.file {
        if Path::new(file).is_absolute() {
            started.request.file = Some(ctx.authority().shown(Path::new(file)));
        }
    }
    ctx.journal
        .begin(&ctx.state, started)
        .map_err(|e| Error::runtime(format!("cannot start the run's journal: {e}")))
}

/// The run's working directory as its journal names it
/// ([`crate::policy::Authority::shown`]): a tenant's run in its own root
/// (every serve run without a `cwd:`) is `.`, said without walking the
/// path's components against each root.
fn shown_cwd(ctx: &Context) -> String {
    let authority = ctx.authority();
    if authority.confinement().tenant && ctx.cwd.as_os_str() == authority.workdir().as_os_str() {
        debug_assert_eq!(authority.shown(&ctx.cwd), ".");
        return ".".into();
    }
    authority.shown(&ctx.cwd)
}

/// The request record of a pipeline run.
pub fn pipeline_request(text: &str) -> RequestRecord {
    RequestRecord::new("pipeline", None, text, Value::Null)
}

/// The request record of a workflow file run: its content `text` (the
/// bytes the run's loader read and plans from, never read again here), in
/// full up to the cap, its digest (`None`: taken here; the loader has it
/// when it read the file), and its args.
pub fn workflow_request(
    path: &Path,
    text: &str,
    text_digest: Option<String>,
    args_json: Option<&str>,
) -> RequestRecord {
    let args = args_json
        .and_then(|a| serde_json::from_str::<Value>(a).ok())
        .unwrap_or(Value::Null);
    let file = Some(path.to_string_lossy().into_owned());
    match text_digest {
        Some(d) => RequestRecord::digested("workflow", file, text, d, args),
        None => RequestRecord::new("workflow", file, text, args),
    }
}

/// The components of a pipeline's wasm stages, by digest.
pub fn pipeline_components(pipeline: &crate::dsl::Pipeline, ctx: &Context) -> Vec<ComponentRecord> {
    crate::resume::pause::step_digests(pipeline, ctx)
        .unwrap_or_default()
        .into_iter()
        .map(|d| ComponentRecord {
            name: d.name,
            digest: d.digest,
        })
        .collect()
}

/// Record how the run (or this leg of it) ended: an error event for a
/// failure, then `run_ended` with the status and the output's digest.
pub fn finish(ctx: &Context, result: &Result<Paused>) {
    if !ctx.journal.is_on() {
        return;
    }
    let (status, output) = match result {
        Ok(p) => {
            let status = p.envelope.status.as_str();
            // (Taken by the run's steps when they could; see `Paused`.)
            let output = (status == "ok").then(|| match &p.output_digest {
                Some(d) => {
                    debug_assert_eq!(*d, items_digest(&p.envelope.output), "the steps' digest");
                    d.clone()
                }
                None => items_digest(&p.envelope.output),
            });
            (status.to_string(), output)
        }
        Err(e) => {
            let _ = ctx.journal.append(Event::Error(ErrorEvent {
                step: String::new(),
                message: masked(ctx, &e.to_string()),
            }));
            let status = match e {
                Error::Signal { .. } => "cancelled",
                _ if ctx.cancel.is_cancelled() => "cancelled",
                _ => "error",
            };
            (status.to_string(), None)
        }
    };
    // A journal that cannot be written does not change the run's answer;
    // its summary then still says `running` (see `lobster runs list`).
    let _ = ctx.journal.end(&status, output);
}

fn grants_record(ctx: &Context) -> GrantsRecord {
    let g = &ctx.grants;
    let dirs = |a: Access| -> Vec<String> {
        g.dirs
            .iter()
            .filter(|d| d.access == a)
            .map(|d| format!("{}:{}", ctx.authority().shown(&d.host), d.guest))
            .collect()
    };
    GrantsRecord {
        read: dirs(Access::Read),
        write: dirs(Access::ReadWrite),
        env: g.env.clone(),
        tools: g.tools.clone(),
        models: if g.llm { vec!["*".into()] } else { Vec::new() },
        clock_ms: Some(g.wall_clock_ms),
        seed: Some(g.random_seed),
    }
}

/// `text` as a tenant's journal records it: each of the tenant's roots (its
/// working directory, catalog and step directories) and the state
/// directory taken out of it — a path beneath a root reads `./` and the
/// rest of it, the state directory `<state>`. The operator's own runs' text
/// is left as it is.
pub fn masked(ctx: &Context, text: &str) -> String {
    let authority = ctx.authority();
    let confinement = authority.confinement();
    if !confinement.tenant {
        return text.to_string();
    }
    let mut prefixes: Vec<(String, &str)> = Vec::new();
    let mut add = |p: &Path, label: &'static str| {
        let s = p.to_string_lossy().trim_end_matches('/').to_string();
        if s.len() > 1 && !prefixes.iter().any(|(q, _)| *q == s) {
            prefixes.push((s, label));
        }
    };
    for root in std::iter::once(authority.workdir())
        .chain(std::iter::once(ctx.cwd.as_path()))
        .chain(confinement.read_only.iter().map(|p| p.as_path()))
    {
        add(root, ".");
    }
    add(ctx.state.dir(), "<state>");
    if let Ok(real) = ctx.state.dir().canonicalize() {
        add(&real, "<state>");
    }
    // The longest first: a root inside another is taken out whole.
    prefixes.sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));
    let mut out = text.to_string();
    for (prefix, label) in prefixes {
        out = replace_path(&out, &prefix, label);
    }
    out
}

/// `text` with each whole occurrence of the path `prefix` (followed by `/`
/// or anything that cannot continue a file name) replaced by `label`.
fn replace_path(text: &str, prefix: &str, label: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(prefix) {
        let after = &rest[i + prefix.len()..];
        let whole = after
            .chars()
            .next()
            .is_none_or(|c| !(c.is_alphanumeric() || "-_.".contains(c)));
        out.push_str(&rest[..i]);
        out.push_str(if whole { label } else { prefix });
        rest = after;
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::replace_path;

    #[test]
    fn a_root_is_replaced_only_where_it_is_a_whole_path() {
        assert_eq!(
            replace_path(
                "read /srv/t/acme/x and /srv/t/acme: /srv/t/acme2/y",
                "/srv/t/acme",
                "."
            ),
            "read ./x and .: /srv/t/acme2/y"
        );
    }
}
