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
//! Recoverable ([`pipeline_recoverable_from`]): pure, or a built-in
//! brokered call (`openclaw.invoke`, `clawd.invoke`, `llm.invoke`,
//! `llm_task.invoke`) when the run keeps a journal. Its intent is journaled
//! before the request leaves and its answer as it arrives, so a run claimed
//! again after its resumer died replays the answered calls from the journal
//! instead of sending them again, and stops for a human (`interrupted`,
//! naming the call) when one was asked and not answered
//! (`resume::recovered`). Pipelines only for now: a workflow after its gate
//! is judged by purity alone.

use crate::dsl::Pipeline;
use crate::kernel::{Access, Context, Grants};

/// The side effects a pure stage may declare.
const PURE_EFFECTS: &[&str] = &["wasm_step", "reads_state"];

/// Whether WebAssembly steps of a run with `grants` are pure: no writable
/// directory, no tool, no model.
pub fn wasm_steps_pure(grants: &Grants) -> bool {
    grants.tools.is_empty() && !grants.llm && grants.dirs.iter().all(|d| d.access == Access::Read)
}

/// Whether one pipeline stage is pure (see the module docs).
pub fn stage_is_pure(stage: &crate::dsl::Stage, ctx: &Context) -> bool {
    if stage.name.contains('$') || super::broker::brokered_call_text(stage).is_some() {
        return false;
    }
    let Ok(Some(cmd)) = ctx.registry.resolve(&stage.name) else {
        return false;
    };
    let sig = cmd.signature();
    if !sig.side_effects.iter().all(|e| PURE_EFFECTS.contains(e)) {
        return false;
    }
    if cmd.digest().is_none() {
        return true;
    }
    wasm_steps_pure(&ctx.grants) && imports_are_pure(cmd.imports())
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

/// Whether every stage of `pipeline` from index `from` on is pure or a
/// journaled brokered call: a run that may be claimed again after its
/// resumer died.
pub fn pipeline_recoverable_from(pipeline: &Pipeline, from: usize, ctx: &Context) -> bool {
    pipeline
        .stages
        .iter()
        .skip(from)
        .all(|s| stage_is_pure(s, ctx) || stage_is_journaled_call(s, ctx))
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
        ctx.journal = crate::journal::Journal::start(
            &ctx.state,
            crate::journal::RunStarted {
                run_id: "r1".into(),
                ..Default::default()
            },
        )
        .unwrap();
        assert!(pipeline_recoverable_from(&p, 1, &ctx));
        let host = crate::dsl::parse(
            "approve --prompt x | openclaw.invoke --tool t | exec --shell 'echo [1]'",
        )
        .unwrap();
        assert!(!pipeline_recoverable_from(&host, 1, &ctx));
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
