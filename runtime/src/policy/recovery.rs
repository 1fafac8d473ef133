//! Which paused runs may be run again after their resumer died.
//!
//! A resume claims its run exactly once. When the claimer dies (or hangs past
//! its lease), nobody knows how far it got. If every step after the gate is
//! *pure* — it cannot act on anything outside the run — running the rest
//! again cannot do anything twice, so the run goes back to its gate and can
//! be resumed anew. Otherwise the run stops for a human (`interrupted`).
//!
//! Pure, as judged here at the moment of the pause:
//! - built-in commands that declare no side effect, or only `reads_state`;
//! - WebAssembly steps that import no Lobster host interface (plain
//!   `wasi:cli/command` components: no state writes, no broker), when the
//!   run grants them no writable directory, no gateway tool and no model: a
//!   component can act only through what it imports and is granted, so
//!   without those it computes.
//!
//! Not pure: host processes (`exec`, workflow `run:` lines), state writes
//! (`state.set`, `diff.last`, and any step importing `lobster:step/host`,
//! which can write its own state), brokered tool and model calls, sub-workflows,
//! a stage whose command name comes from a template, anything unknown.
//! Brokered answers recorded before the gate replay on any resume.
//!
//! Recoverable ([`recoverable`], the one rule, for pipelines and
//! workflows alike): pure, or acting only through brokered calls when the
//! run keeps a journal — a built-in brokered call (`openclaw.invoke`,
//! `clawd.invoke`, `llm.invoke`, `llm_task.invoke`), or a WebAssembly step
//! whose only Lobster import is the broker (`lobster:step/broker`, no
//! `lobster:step/host`) while the run grants no writable directory. Each
//! call's intent is journaled before the request leaves and its answer as
//! it arrives, so a run claimed again after its resumer died runs its
//! steps again — the same pinned components, with the recorded clock and
//! seed, asking the same calls in the same order — and its broker replays
//! the answered calls from the journal instead of sending them again,
//! matching each by position and request digest; a call asked and not
//! answered, or one that is not the call the dead resumer asked at that
//! position, stops the run for a human (`interrupted`, naming the call:
//! `resume::recovered`, `kernel::recorded`). Branches that run at the same
//! time (`parallel:`) ask in no fixed order: at most one of them may make
//! calls. Host processes, sub-workflows and state writes never recover.

use crate::dsl::Pipeline;
use crate::kernel::{Access, Context, Grants};

/// The side effects a pure stage may declare.
const PURE_EFFECTS: &[&str] = &["wasm_step", "reads_state"];

/// What runs after a gate, as the recovery rule sees it: the engine
/// describes its steps in these terms (policy cannot see a workflow).
#[derive(Debug, Clone)]
pub enum After {
    /// Nothing that acts (a gate, an empty step).
    Nothing,
    /// A pipeline, from its stage `1` on (0-based).
    Pipeline(Pipeline, usize),
    /// A WebAssembly component (a `uses:` step), by its imports.
    Component(Vec<String>),
    /// Steps run one after another (a `for_each:` body).
    InOrder(Vec<After>),
    /// Branches run at the same time (`parallel:`).
    AtOnce(Vec<After>),
    /// A host process, a sub-workflow, anything that cannot be judged.
    Other,
}

/// How a run may go on after its resumer died, worst last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Recovery {
    /// Nothing acts outside the run: run it again.
    Pure,
    /// Acts only through journaled brokered calls: run it again, replaying
    /// the calls the dead resumer made.
    Journaled,
    /// Stop for a human.
    Stop,
}

/// Whether a run whose steps after its gate are `after` may be claimed
/// again after its resumer died (see the module docs): the rule every
/// pause records ([`crate::state::RERUN_SAFE`]).
pub fn recoverable(after: &[After], ctx: &Context) -> bool {
    recovery_of(after, ctx) != Recovery::Stop
}

/// The worst of `after`'s steps.
pub fn recovery_of(after: &[After], ctx: &Context) -> Recovery {
    after
        .iter()
        .map(|a| one(a, ctx))
        .max()
        .unwrap_or(Recovery::Pure)
}

fn one(after: &After, ctx: &Context) -> Recovery {
    match after {
        After::Nothing => Recovery::Pure,
        After::Pipeline(p, from) => p
            .stages
            .iter()
            .skip(*from)
            .map(|s| stage_recovery(s, ctx))
            .max()
            .unwrap_or(Recovery::Pure),
        After::Component(imports) => component_recovery(imports, ctx),
        After::InOrder(steps) => recovery_of(steps, ctx),
        After::AtOnce(branches) => {
            let each: Vec<Recovery> = branches.iter().map(|b| one(b, ctx)).collect();
            let calling = each.iter().filter(|r| **r == Recovery::Journaled).count();
            match each.iter().max() {
                Some(Recovery::Stop) => Recovery::Stop,
                // Two branches calling at once ask in no fixed order.
                _ if calling > 1 => Recovery::Stop,
                Some(worst) => *worst,
                None => Recovery::Pure,
            }
        }
        After::Other => Recovery::Stop,
    }
}

/// Whether WebAssembly steps of a run with `grants` are pure: no writable
/// directory, no tool, no model.
pub fn wasm_steps_pure(grants: &Grants) -> bool {
    grants.tools.is_empty() && !grants.llm && no_writable_dir(grants)
}

fn no_writable_dir(grants: &Grants) -> bool {
    grants.dirs.iter().all(|d| d.access == Access::Read)
}

/// A component with `imports` in this run: pure when it imports nothing of
/// Lobster's and may call nothing; journaled when its only Lobster import
/// is the broker (and the types it uses), the run writes no directory and
/// keeps a journal.
fn component_recovery(imports: &[String], ctx: &Context) -> Recovery {
    if wasm_steps_pure(&ctx.grants) && imports_are_pure(imports) {
        Recovery::Pure
    } else if ctx.journal.is_on() && no_writable_dir(&ctx.grants) && imports_only_broker(imports) {
        Recovery::Journaled
    } else {
        Recovery::Stop
    }
}

/// Whether a component's Lobster imports are at most the broker and the
/// types: it can act outside its run only through brokered calls.
fn imports_only_broker(imports: &[String]) -> bool {
    imports
        .iter()
        .filter_map(|i| i.strip_prefix("lobster:step/"))
        .all(|i| i.starts_with("broker@") || i.starts_with("types@"))
}

/// Whether one pipeline stage is pure (see the module docs).
pub fn stage_is_pure(stage: &crate::dsl::Stage, ctx: &Context) -> bool {
    stage_recovery(stage, ctx) == Recovery::Pure
}

/// How one pipeline stage recovers (see the module docs).
pub fn stage_recovery(stage: &crate::dsl::Stage, ctx: &Context) -> Recovery {
    if stage_is_journaled_call(stage, ctx) {
        return Recovery::Journaled;
    }
    if stage.name.contains('$') || super::broker::brokered_call_text(stage).is_some() {
        return Recovery::Stop;
    }
    let Ok(Some(cmd)) = ctx.registry.resolve(&stage.name) else {
        return Recovery::Stop;
    };
    let sig = cmd.signature();
    if !sig.side_effects.iter().all(|e| PURE_EFFECTS.contains(e)) {
        return Recovery::Stop;
    }
    if cmd.digest().is_none() {
        return Recovery::Pure;
    }
    component_recovery(cmd.imports(), ctx)
}

/// Whether a component's imports give it no way to act outside its run:
/// nothing of `lobster:step` (the host interface writes state, the broker
/// calls tools and models).
pub fn imports_are_pure(imports: &[String]) -> bool {
    !imports.iter().any(|i| i.starts_with("lobster:step/"))
}

/// Whether `stage` is a built-in brokered call whose intent and answer the
/// run's journal keeps (see the module docs).
pub fn stage_is_journaled_call(stage: &crate::dsl::Stage, ctx: &Context) -> bool {
    ctx.journal.is_on()
        && !stage.name.contains('$')
        && matches!(
            stage.name.as_str(),
            "openclaw.invoke" | "clawd.invoke" | "llm.invoke" | "llm_task.invoke"
        )
}

/// Whether every stage of `pipeline` from index `from` on is pure or acts
/// only through journaled brokered calls: [`recoverable`] for a pipeline.
pub fn pipeline_recoverable_from(pipeline: &Pipeline, from: usize, ctx: &Context) -> bool {
    recoverable(&[After::Pipeline(pipeline.clone(), from)], ctx)
}

/// Whether every stage of `pipeline` from index `from` on is pure.
pub fn pipeline_pure_from(pipeline: &Pipeline, from: usize, ctx: &Context) -> bool {
    pipeline
        .stages
        .iter()
        .skip(from)
        .all(|s| stage_is_pure(s, ctx))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::DirGrant;
    use crate::kernel::Mode;

    fn ctx(dir: &std::path::Path) -> Context {
        crate::executor::process_context(Mode::Tool, crate::state::StateStore::new(dir)).build()
    }

    #[test]
    fn pure_built_ins_pass_and_anything_with_an_effect_does_not() {
        let tmp = tempfile::tempdir().unwrap();
        let ctx = ctx(tmp.path());
        let pure = |text: &str| pipeline_pure_from(&crate::dsl::parse(text).unwrap(), 1, &ctx);
        assert!(pure(
            "approve --prompt x | head --n 1 | pick a | sort --key a"
        ));
        assert!(pure("approve --prompt x | state.get k"));
        assert!(pure("approve --prompt x")); // nothing after the gate
        assert!(!pure("approve --prompt x | exec --shell 'echo hi'"));
        assert!(!pure("approve --prompt x | state.set k"));
        assert!(!pure("approve --prompt x | diff.last --key k"));
        assert!(!pure("approve --prompt x | llm.invoke --prompt hi"));
        assert!(!pure("approve --prompt x | openclaw.invoke --tool t"));
        assert!(!pure("approve --prompt x | no.such.command"));
        // Only what runs after the gate counts.
        let p = crate::dsl::parse("exec --shell 'echo [1]' | approve --prompt x | head").unwrap();
        assert!(pipeline_pure_from(&p, 2, &ctx));
        assert!(!pipeline_pure_from(&p, 0, &ctx));
    }

    #[test]
    fn brokered_calls_are_recoverable_only_when_journaled() {
        let tmp = tempfile::tempdir().unwrap();
        let mut ctx = ctx(tmp.path());
        let p = crate::dsl::parse(
            "approve --prompt x | openclaw.invoke --tool t | llm.invoke --prompt hi | head",
        )
        .unwrap();
        assert!(!pipeline_pure_from(&p, 1, &ctx));
        assert!(!pipeline_recoverable_from(&p, 1, &ctx), "no journal");
        journaled(&mut ctx);
        assert!(pipeline_recoverable_from(&p, 1, &ctx));
        let host = crate::dsl::parse(
            "approve --prompt x | openclaw.invoke --tool t | exec --shell 'echo [1]'",
        )
        .unwrap();
        assert!(!pipeline_recoverable_from(&host, 1, &ctx));
    }

    fn journaled(ctx: &mut Context) {
        ctx.journal = crate::journal::Journal::start(
            &ctx.state,
            crate::journal::RunStarted {
                run_id: "r1".into(),
                ..Default::default()
            },
        )
        .unwrap();
    }

    fn component(imports: &[&str]) -> After {
        After::Component(imports.iter().map(|i| i.to_string()).collect())
    }

    #[test]
    fn components_calling_only_through_the_broker_recover_with_a_journal() {
        let tmp = tempfile::tempdir().unwrap();
        let mut ctx = ctx(tmp.path());
        let broker = || component(&["lobster:step/broker@0.2.0", "lobster:step/types@0.2.0"]);
        let host = || component(&["lobster:step/host@0.2.0", "lobster:step/broker@0.2.0"]);
        let plain = || component(&["wasi:cli/stdin@0.2.0"]);
        assert_eq!(recovery_of(&[plain()], &ctx), Recovery::Pure);
        assert_eq!(recovery_of(&[broker()], &ctx), Recovery::Stop, "no journal");
        journaled(&mut ctx);
        assert_eq!(recovery_of(&[broker()], &ctx), Recovery::Journaled);
        assert_eq!(recovery_of(&[host()], &ctx), Recovery::Stop, "state writes");
        assert_eq!(recovery_of(&[broker(), After::Other], &ctx), Recovery::Stop);
        // A run that grants a tool: a plain component still acts on nothing
        // outside the run, and is judged with the calling ones.
        ctx.grants.tools.push("echo".into());
        assert_eq!(recovery_of(&[plain()], &ctx), Recovery::Journaled);
        assert!(recoverable(&[plain(), broker()], &ctx));
        // A writable directory: a component may write it, twice.
        ctx.grants.dirs.push(DirGrant {
            host: "out".into(),
            guest: "/out".into(),
            access: Access::ReadWrite,
        });
        assert!(!recoverable(&[broker()], &ctx));
        assert!(!recoverable(&[plain()], &ctx));
    }

    #[test]
    fn branches_at_once_may_hold_one_calling_branch_and_steps_in_order_any() {
        let tmp = tempfile::tempdir().unwrap();
        let mut ctx = ctx(tmp.path());
        journaled(&mut ctx);
        let calls = || component(&["lobster:step/broker@0.2.0"]);
        let one = After::AtOnce(vec![calls(), After::Nothing, component(&[])]);
        assert_eq!(recovery_of(&[one], &ctx), Recovery::Journaled);
        let two = After::AtOnce(vec![calls(), calls()]);
        assert_eq!(recovery_of(&[two], &ctx), Recovery::Stop);
        let in_order = After::InOrder(vec![calls(), calls()]);
        assert_eq!(recovery_of(&[in_order], &ctx), Recovery::Journaled);
        let host = After::AtOnce(vec![After::Nothing, After::Other]);
        assert_eq!(recovery_of(&[host], &ctx), Recovery::Stop);
        assert_eq!(recovery_of(&[], &ctx), Recovery::Pure);
        let p = crate::dsl::parse("approve --prompt x | openclaw.invoke --tool t | head").unwrap();
        assert_eq!(
            recovery_of(&[After::Pipeline(p.clone(), 1)], &ctx),
            Recovery::Journaled
        );
        assert_eq!(recovery_of(&[After::Pipeline(p, 2)], &ctx), Recovery::Pure);
    }

    #[test]
    fn components_importing_lobster_interfaces_are_not_pure() {
        let plain = [
            "wasi:cli/stdin@0.2.0".to_string(),
            "wasi:io/streams@0.2.0".to_string(),
        ];
        assert!(imports_are_pure(&plain));
        assert!(!imports_are_pure(&["lobster:step/host@0.1.0".to_string()]));
        assert!(!imports_are_pure(
            &["lobster:step/broker@0.2.0".to_string()]
        ));
    }

    #[test]
    fn wasm_steps_are_pure_only_without_write_tool_or_model_grants() {
        let mut g = Grants::default();
        assert!(wasm_steps_pure(&g));
        g.dirs.push(DirGrant {
            host: "in".into(),
            guest: "/in".into(),
            access: Access::Read,
        });
        assert!(wasm_steps_pure(&g));
        g.dirs.push(DirGrant {
            host: "out".into(),
            guest: "/out".into(),
            access: Access::ReadWrite,
        });
        assert!(!wasm_steps_pure(&g));
        let tools = Grants {
            tools: vec!["web.search".into()],
            ..Grants::default()
        };
        assert!(!wasm_steps_pure(&tools));
        let llm = Grants {
            llm: true,
            ..Grants::default()
        };
        assert!(!wasm_steps_pure(&llm));
    }
}
