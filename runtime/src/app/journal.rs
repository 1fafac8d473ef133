//! The journal's run start and end, written here for every door: what was
//! asked (the pipeline text or the workflow file's content, its args), under
//! which policy, trust and grants, with which components; then how it ended.
//! The engine records the steps, gates, decisions and brokered calls in
//! between through the same handle (`Context::journal`).

use crate::error::{Error, Result};
use crate::executor::Context;
use crate::journal::{
    digest, now_rfc3339, ComponentRecord, ErrorEvent, Event, GrantsRecord, RequestRecord,
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
        cwd: ctx.cwd.to_string_lossy().into_owned(),
    };
    ctx.journal
        .begin(&ctx.state, started)
        .map_err(|e| Error::runtime(format!("cannot start the run's journal: {e}")))
}

/// The request record of a pipeline run.
pub fn pipeline_request(text: &str) -> RequestRecord {
    RequestRecord::new("pipeline", None, text, Value::Null)
}

/// The request record of a workflow file run: its content, in full up to
/// the cap, and its args.
pub fn workflow_request(path: &Path, args_json: Option<&str>) -> RequestRecord {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let args = args_json
        .and_then(|a| serde_json::from_str::<Value>(a).ok())
        .unwrap_or(Value::Null);
    RequestRecord::new(
        "workflow",
        Some(path.to_string_lossy().into_owned()),
        &text,
        args,
    )
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
            let env = p.envelope.to_json();
            let status = env
                .get("status")
                .and_then(Value::as_str)
                .unwrap_or("ok")
                .to_string();
            let output = env
                .get("output")
                .filter(|_| status == "ok")
                .map(|o| digest(crate::value::to_js_json(o).as_bytes()));
            (status, output)
        }
        Err(e) => {
            let _ = ctx.journal.append(Event::Error(ErrorEvent {
                step: String::new(),
                message: e.to_string(),
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
            .map(|d| format!("{}:{}", d.host.display(), d.guest))
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
