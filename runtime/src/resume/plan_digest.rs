//! What you approve is what runs: the digest of everything after a gate.
//!
//! The digest is blake3 over a canonical JSON document holding, for every
//! stage after the gate, its text, its component digest (wasm steps) and
//! what it declares (side effects, required capabilities); the run's grants
//! (directories and env names); and the gated items. It is shown in
//! `requiresApproval.planDigest`, stored with the pause, and recomputed on
//! resume before the state is claimed.

use crate::dsl::Pipeline;
use crate::error::Result;
use crate::executor::check_pipeline;
use crate::kernel::Context;
use crate::sandbox::Requirement;
use crate::value::{to_js_json, Item};
use serde_json::json;

/// The plan after a gate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanSummary {
    /// 64 hex digits of blake3.
    pub digest: String,
    /// One human-readable line per capability or side effect of the stages
    /// after the gate, e.g. `stage 4 (inbox.apply): write access to /mail`.
    pub capabilities: Vec<String>,
}

fn requirements(name: &str, ctx: &Context) -> Vec<Requirement> {
    if ctx.registry.get(name).is_some() {
        return Vec::new();
    }
    crate::sandbox::resolver_of(&ctx.registry)
        .and_then(|s| s.resolve(name).ok().flatten())
        .and_then(|step| step.component().meta().map(|m| m.requires.clone()))
        .unwrap_or_default()
}

fn effect_text(effect: &str) -> Option<&'static str> {
    match effect {
        "local_exec" => Some("runs host processes"),
        "writes_state" => Some("writes Lobster state"),
        "writes_files" => Some("writes files"),
        _ => None,
    }
}

/// The plan of `pipeline_text` from stage `from` on, with `items` at the gate.
pub fn plan_summary(
    pipeline: &Pipeline,
    from: usize,
    items: &[Item],
    ctx: &Context,
) -> Result<PlanSummary> {
    let commands = check_pipeline(pipeline, from, &ctx.registry)?;
    let mut stages = Vec::new();
    let mut lines = Vec::new();
    for (offset, cmd) in commands.iter().enumerate() {
        let index = from + offset;
        let stage = &pipeline.stages[index];
        let sig = cmd.signature();
        let requires = requirements(&stage.name, ctx);
        let label = format!("stage {} ({})", index + 1, stage.name);
        for effect in sig.side_effects.iter().filter_map(|e| effect_text(e)) {
            if effect != "writes files" || requires.is_empty() {
                lines.push(format!("{label}: {effect}"));
            }
        }
        for r in &requires {
            lines.push(format!("{label}: {}", r.describe().0));
        }
        if let Some(call) = crate::policy::broker::brokered_call_text(stage) {
            lines.push(format!("{label}: {call}"));
        }
        stages.push(json!({
            "text": stage.raw,
            "digest": cmd.digest(),
            "sideEffects": sig.side_effects,
            "requires": requires,
        }));
    }
    let grants = json!({
        "dirs": ctx.grants.dirs.iter().map(|d| json!({
            "host": d.host.to_string_lossy(),
            "guest": d.guest,
            "access": d.access,
        })).collect::<Vec<_>>(),
        "env": ctx.grants.env,
    });
    // The items as the resume state stores them (JavaScript JSON): a number a
    // command produced as 1.0 is saved and read back as 1, and the digest
    // must not tell the two apart.
    let items: Vec<Item> = items
        .iter()
        .map(|i| serde_json::from_str(&to_js_json(i)).unwrap_or_else(|_| i.clone()))
        .collect();
    let doc = json!({
        "version": 1,
        "stages": stages,
        "grants": grants,
        "items": items,
    });
    let canonical = serde_json::to_vec(&doc).unwrap_or_default();
    Ok(PlanSummary {
        digest: blake3::hash(&canonical).to_hex().to_string(),
        capabilities: lines,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::Mode;
    use serde_json::json;

    #[test]
    fn digest_binds_stages_items_and_grants() {
        let tmp = tempfile::tempdir().unwrap();
        let mut ctx =
            crate::executor::process_context(Mode::Tool, crate::state::StateStore::new(tmp.path()))
                .build();
        let text =
            &crate::dsl::parse("approve --prompt x | exec --shell 'echo hi' | head --n 1").unwrap();
        let a = plan_summary(text, 1, &[json!(1)], &ctx).unwrap();
        assert_eq!(a, plan_summary(text, 1, &[json!(1)], &ctx).unwrap());
        assert_eq!(a.digest.len(), 64);
        assert_eq!(a.capabilities, ["stage 2 (exec): runs host processes"]);
        assert_ne!(
            a.digest,
            plan_summary(text, 1, &[json!(2)], &ctx).unwrap().digest
        );
        // A float that is a whole number digests as the integer it is saved as.
        assert_eq!(
            plan_summary(text, 1, &[json!({"n": 1.0})], &ctx)
                .unwrap()
                .digest,
            plan_summary(text, 1, &[json!({"n": 1})], &ctx)
                .unwrap()
                .digest
        );
        let other = &crate::dsl::parse("approve --prompt x | exec --shell 'echo bye' | head --n 1")
            .unwrap();
        assert_ne!(
            a.digest,
            plan_summary(other, 1, &[json!(1)], &ctx).unwrap().digest
        );
        ctx.grants = crate::sandbox::Grants::builder()
            .allow_env("X")
            .build()
            .unwrap();
        assert_ne!(
            a.digest,
            plan_summary(text, 1, &[json!(1)], &ctx).unwrap().digest
        );
    }
}
