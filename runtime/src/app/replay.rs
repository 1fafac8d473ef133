//! `lobster replay`: run a finished run again, offline, from its journal,
//! and say whether it did the same thing.
//!
//! The replay runs the recorded request (the pipeline text, or the workflow
//! file when it is unchanged, else its recorded text) in the recorded
//! working directory (or `--cwd`), with the recorded clock, random seed and
//! grants, on the step path it is given (components are compared by digest
//! step by step). Brokered calls are answered from the journal and never
//! sent; host lines and `exec` stages get their recorded output unless
//! `--rerun-host`; each
//! gate gets the decision the run recorded. Its own state (and journal)
//! lives in a scratch store that is removed afterwards. A run that could
//! write a directory is replayed only elsewhere (`--cwd`, a copy): its
//! steps run again and write again. The replay's journal is then compared
//! with the run's ([`crate::journal::replay::compare`]).

use super::context::context_builder;
use super::options::LimitArgs;
use super::start::{Prepared, Work};
use crate::broker::endpoints::Sources;
use crate::error::{Error, Result};
use crate::journal::replay::{events_of, Divergence, Recorded};
use crate::journal::{digest, Journal};
use crate::kernel::{Access, Context, Grants, Mode};
use crate::resume::{Decider, Decision, Paused, ResumeRequest, ResumeTarget};
use crate::state::StateStore;
use crate::value::Item;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How to replay.
#[derive(Debug, Clone, Default)]
pub struct ReplayOptions {
    /// Run host processes again instead of answering them from the record.
    pub rerun_host: bool,
    /// `--steps DIR`: searched before `LOBSTER_STEP_PATH` and `./steps`.
    pub steps: Vec<String>,
    /// Replay in this directory instead of the run's (granted directories
    /// under the run's directory move with it).
    pub cwd: Option<PathBuf>,
    /// `--policy FILE` (refused when `LOBSTER_POLICY` is set).
    pub policy: Option<String>,
}

/// What a replay found.
#[derive(Debug, Clone)]
pub struct ReplayReport {
    /// The run replayed.
    pub run_id: String,
    /// Steps the run recorded (all compared).
    pub steps: usize,
    /// The first difference; `None`: identical.
    pub divergence: Option<Divergence>,
    /// The replay's own error, when it failed (the divergence says where).
    pub error: Option<String>,
}

/// The journal of run `id` in `store`, or of the journal file `arg`, read
/// and verified for a replay.
pub fn load(store: &StateStore, arg: &str) -> Result<Recorded> {
    let not_replayable = |e: crate::journal::replay::NotReplayable| Error::runtime(e.0);
    let path = Path::new(arg);
    if path.is_file() {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::runtime(format!(
                "cannot read {arg}: {e} (a journal is UTF-8 JSON lines)"
            ))
        })?;
        return Recorded::from_text(&text, None).map_err(|e| Error::runtime(format!("{arg}: {e}")));
    }
    if crate::state::journal::check_run_id(arg).is_err() {
        return Err(
            Error::parse(format!("{arg:?} is neither a journal file nor a run id")).with_hint(
                "lobster runs list shows run ids; lobster runs export ID > run.jsonl writes a file",
            ),
        );
    }
    let text = store.journal_text(arg)?.ok_or_else(|| {
        Error::runtime(format!("no journal for run {arg} in {}", store.describe()))
            .with_hint("lobster runs list shows the runs")
    })?;
    Recorded::from_text(&text, Some(arg)).map_err(not_replayable)
}

/// Replay `recorded` (see the module docs).
pub fn replay(mut recorded: Recorded, opts: &ReplayOptions) -> Result<ReplayReport> {
    if opts.rerun_host {
        recorded.forget_host_outputs();
    } else if let Some((s, why)) = recorded.unreplayable_host_steps().first() {
        return Err(Error::runtime(format!(
            "step {} ({} {}) of run {} is not replayable: {why}",
            s.id, s.step_kind, s.name, recorded.run_id
        ))
        .with_hint("--rerun-host runs host processes again instead"));
    }
    let recorded = Arc::new(recorded);
    let scratch = Scratch::new()?;
    let store = StateStore::new(scratch.0.join("state"));
    let started = &recorded.started;
    let cwd = match &opts.cwd {
        Some(dir) => dir.clone(),
        None => PathBuf::from(&started.cwd),
    };
    if !cwd.is_dir() {
        return Err(Error::runtime(format!(
            "the run's working directory {} is not a directory here",
            cwd.display()
        ))
        .with_hint("--cwd DIR replays in another directory"));
    }
    if !started.grants.write.is_empty() && opts.cwd.is_none() {
        return Err(Error::runtime(format!(
            "run {} could write {}: a replay runs its steps again and would write there again",
            recorded.run_id,
            started.grants.write.join(", ")
        ))
        .with_hint("replay in a copy of its working directory: --cwd DIR"));
    }
    let grants = recorded_grants(&recorded, Path::new(&started.cwd), &cwd)?;
    let limits = LimitArgs {
        policy: opts.policy.clone(),
        ..LimitArgs::default()
    };
    let base = context_builder(
        Mode::Tool,
        &limits,
        None,
        None,
        store.clone(),
        None,
        Sources::Process,
        None,
    )?
    .build();
    let step_path = crate::sandbox::StepPath::from_env(
        &cwd,
        &opts.steps.iter().map(PathBuf::from).collect::<Vec<_>>(),
    );
    let step_dirs: Vec<String> = step_path
        .dirs()
        .iter()
        .map(|d| d.to_string_lossy().into_owned())
        .collect();
    let mut ctx =
        crate::executor::resumed_context(&base, Some(&cwd.to_string_lossy()), &grants, &step_dirs);
    check_components(&recorded, &ctx, &step_dirs)?;
    ctx.journal = Journal::replay(recorded.clone());
    ctx.broker.attach_journal(ctx.journal.clone());
    let replay_id = ctx.journal.run_id().unwrap_or_default().to_string();

    let mut result = run_request(&recorded, &cwd, &scratch.0, ctx);
    let mut decisions = recorded.decisions.iter();
    while let Ok(paused) = &result {
        let Some(token) = resume_token(paused) else {
            break;
        };
        let Some(decision) = decisions.next() else {
            break;
        };
        let request = ResumeRequest {
            target: ResumeTarget::Token(token),
            decision: match decision.decision.as_str() {
                "approve" => Decision::Approve(true),
                "deny" => Decision::Approve(false),
                _ => Decision::Cancel,
            },
            decider: Decider::Operator(decision.approver.clone()),
        };
        let mut leg = base.rebuild().build();
        leg.journal = Journal::replay(recorded.clone());
        leg.broker.attach_journal(leg.journal.clone());
        result = Prepared::with_context(leg, Work::Resume(request)).run();
    }
    let text = store.journal_text(&replay_id)?.unwrap_or_default();
    let divergence = crate::journal::replay::compare(&recorded, &events_of(&text));
    Ok(ReplayReport {
        run_id: recorded.run_id.clone(),
        steps: recorded.steps.len(),
        error: result.err().map(|e| e.to_string()),
        divergence,
    })
}

/// Run the recorded request in `ctx`.
fn run_request(recorded: &Recorded, cwd: &Path, scratch: &Path, ctx: Context) -> Result<Paused> {
    let request = &recorded.started.request;
    if request.kind == "pipeline" {
        return Prepared::with_context(ctx, Work::Pipeline(request.text.clone())).run();
    }
    // The workflow file when it still holds what was run (its relative
    // `uses:` paths then resolve as they did), else the recorded text.
    let recorded_path = request.file.as_deref().map(|f| cwd.join(f));
    let path = match recorded_path {
        Some(p) if std::fs::read(&p).is_ok_and(|b| digest(&b) == request.digest) => p,
        _ => {
            let p = scratch.join("workflow.lobster");
            std::fs::write(&p, &request.text)
                .map_err(|e| Error::runtime(format!("cannot write {}: {e}", p.display())))?;
            p
        }
    };
    let args = (!request.args.is_null()).then(|| request.args.to_string());
    Prepared::with_context(
        ctx,
        Work::Workflow {
            path,
            args_json: args,
        },
    )
    .run()
}

fn resume_token(paused: &Paused) -> Option<String> {
    let env = paused.envelope.to_json();
    if env.get("status").and_then(Item::as_str) != Some("needs_approval") {
        return None;
    }
    env.pointer("/requiresApproval/resumeToken")
        .and_then(Item::as_str)
        .map(str::to_string)
}

/// Every recorded component must be found by its name on the step path
/// (a different build there is a divergence, found step by step).
fn check_components(recorded: &Recorded, ctx: &Context, dirs: &[String]) -> Result<()> {
    // A workflow names its components by path (`uses:`) and resolves them
    // itself; a pipeline's stages are found by name on the step path.
    if recorded.started.request.kind != "pipeline" {
        return Ok(());
    }
    for (name, want) in recorded.components() {
        if !matches!(ctx.registry.resolve(&name), Ok(Some(_))) {
            return Err(Error::runtime(format!(
                "component {name} (blake3 {want}) is not on the step path: looked in {}",
                if dirs.is_empty() {
                    "(no directories)".to_string()
                } else {
                    dirs.join(", ")
                }
            ))
            .with_hint("--steps DIR adds a directory holding it"));
        }
    }
    Ok(())
}

/// The run's grants with its clock and seed; absolute directories under
/// the run's directory move to `cwd` (relative ones resolve against it).
fn recorded_grants(recorded: &Recorded, was: &Path, cwd: &Path) -> Result<Grants> {
    let g = &recorded.started.grants;
    let moved = |host: &str| -> PathBuf {
        let p = Path::new(host);
        match p.strip_prefix(was) {
            Ok(rel) if p.is_absolute() && was != cwd => cwd.join(rel),
            _ => p.to_path_buf(),
        }
    };
    let mut b = Grants::builder();
    for (specs, access) in [(&g.read, Access::Read), (&g.write, Access::ReadWrite)] {
        for spec in specs {
            let (host, guest) = split_spec(spec);
            b = b.allow_dir(&format!("{}:{guest}", moved(host).display()), access);
        }
    }
    for name in &g.env {
        b = b.allow_env(name);
    }
    for name in &g.tools {
        b = b.allow_tool(name);
    }
    b = b.allow_llm(!g.models.is_empty());
    if let Some(ms) = g.clock_ms {
        b = b.wall_clock_ms(ms);
    }
    if let Some(seed) = g.seed {
        b = b.random_seed(seed);
    }
    b.build()
        .map_err(|e| Error::runtime(format!("the run's grants: {e}")))
}

/// `HOST:/GUEST` as the journal records a directory grant.
fn split_spec(spec: &str) -> (&str, String) {
    match spec.rsplit_once(":/") {
        Some((h, g)) => (h, format!("/{g}")),
        None => (spec, "/".into()),
    }
}

/// A directory of the replay's own, removed when it is dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Result<Scratch> {
        let dir =
            std::env::temp_dir().join(format!("lobster-replay-{}", crate::state::random_hex(8)));
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::runtime(format!("cannot make {}: {e}", dir.display())))?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::DigestRule;

    /// A run journaled under digest rule 1 (as lobster wrote journals
    /// before rule 2: no `digests` in its start, each WebAssembly step's
    /// items and each workflow step's whole result printed) replays
    /// identical, its replay following rule 1; the same journal read as
    /// rule 2 would not be, so the rule followed is the recorded one.
    #[test]
    fn a_rule_1_journal_replays_identical_under_its_own_rule() {
        let Some(guest) = crate::sandbox::test_guest("cmd-echo.wasm") else {
            return;
        };
        let steps = guest.parent().unwrap().to_string_lossy().into_owned();
        let tmp = tempfile::tempdir().unwrap();
        let cwd = tmp.path().join("work");
        std::fs::create_dir_all(&cwd).unwrap();
        let wf = cwd.join("wf.lobster");
        std::fs::write(
            &wf,
            "steps:\n  - id: echo\n    pipeline: cmd-echo --tag=1\n    stdin: [{\"b\": 1, \"a\": \"x\"}, 2]\n  - id: items\n    pipeline: pick item\n    stdin: $echo.json\n",
        )
        .unwrap();
        let store = StateStore::new(tmp.path().join("state"));
        let base = context_builder(
            Mode::Tool,
            &LimitArgs::default(),
            None,
            None,
            store.clone(),
            None,
            Sources::Process,
            None,
        )
        .unwrap()
        .build();
        let mut ctx = crate::executor::resumed_context(
            &base,
            Some(&cwd.to_string_lossy()),
            &Grants::default(),
            std::slice::from_ref(&steps),
        );
        ctx.journal = Journal::planned_with_rule("cli", DigestRule::V1);
        let id = ctx.journal.run_id().unwrap().to_string();
        let done = Prepared::with_context(
            ctx,
            Work::Workflow {
                path: wf,
                args_json: None,
            },
        )
        .run()
        .unwrap();
        assert_eq!(done.envelope.status.as_str(), "ok");
        let text = store.journal_text(&id).unwrap().unwrap();
        assert!(!text.contains("digests"), "{text}");
        let recorded = Recorded::from_text(&text, Some(&id)).unwrap();
        assert_eq!(recorded.started.digests, DigestRule::V1);
        let kinds: Vec<&str> = recorded
            .steps
            .iter()
            .map(|s| s.step_kind.as_str())
            .collect();
        assert_eq!(kinds, ["wasm", "pipeline", "builtin", "pipeline"], "{text}");

        let opts = ReplayOptions {
            steps: vec![steps.clone()],
            cwd: Some(cwd.clone()),
            ..ReplayOptions::default()
        };
        let report = replay(recorded, &opts).unwrap();
        assert_eq!(report.divergence, None, "{:?}", report.error);
        assert_eq!(report.error, None);

        let mut as_v2 = Recorded::from_text(&text, Some(&id)).unwrap();
        as_v2.started.digests = DigestRule::V2;
        // (The input text is the same under both rules here; the guest's
        // output ends in a newline that printing its items drops.)
        let d = replay(as_v2, &opts).unwrap().divergence.unwrap();
        assert_eq!(
            (d.step.as_str(), d.field.as_str()),
            ("cmd-echo", "output"),
            "{d}"
        );
    }
}
