//! Whole-pipeline validation before any stage runs: every command must exist
//! and accept its arguments. (The reference ran stages 1–2 before noticing an
//! unknown command in stage 3.) Names that are not built-ins resolve to wasm
//! steps on the registry's step path here, so components are loaded and
//! hashed (see [`crate::commands::Command::digest`]) before anything runs.

use crate::dsl::Pipeline;
use crate::error::{Error, Result};
use crate::kernel::{Command, Registry};

/// Resolve every stage from `from` on and check its flags and arguments; the
/// first problem is returned with the span of the offending stage.
pub fn check_pipeline<'r>(
    pipeline: &Pipeline,
    from: usize,
    registry: &'r Registry,
) -> Result<Vec<&'r dyn Command>> {
    let mut resolved = Vec::with_capacity(pipeline.stages.len().saturating_sub(from));
    for stage in pipeline.stages.iter().skip(from) {
        let cmd = resolve_stage(stage, registry)?;
        super::flags::check_flags(cmd, stage)?;
        cmd.validate(&stage.args).map_err(|e| {
            if e.span().is_some() {
                e
            } else {
                e.at(stage.span.clone())
            }
        })?;
        resolved.push(cmd);
    }
    Ok(resolved)
}

/// Only resolve the stages from `from` on (names, not arguments): which
/// command or component each one is.
pub fn resolve_stages<'r>(
    pipeline: &Pipeline,
    from: usize,
    registry: &'r Registry,
) -> Result<Vec<&'r dyn Command>> {
    pipeline
        .stages
        .iter()
        .skip(from)
        .map(|stage| resolve_stage(stage, registry))
        .collect()
}

fn resolve_stage<'r>(stage: &crate::dsl::Stage, registry: &'r Registry) -> Result<&'r dyn Command> {
    let found = registry
        .resolve(&stage.name)
        .map_err(|e| e.at(stage.name_span.clone()))?;
    found.ok_or_else(|| {
        let err =
            Error::runtime(format!("Unknown command: {}", stage.name)).at(stage.name_span.clone());
        match suggest(&stage.name, registry.names()) {
            Some(near) => err.with_hint(format!(
                "did you mean `{near}`? (`lobster help` lists every command)"
            )),
            None => err.with_hint("`lobster help` lists every command"),
        }
    })
}

/// [`check_pipeline`], then the operator policy and the pins of
/// `./lobster.lock` ([`super::policy_check::check_plan`]): everything that must
/// hold before the first stage of `from..` runs.
pub fn plan<'r>(
    pipeline: &Pipeline,
    from: usize,
    ctx: &'r crate::executor::Context,
) -> Result<Vec<&'r dyn Command>> {
    let commands = check_pipeline(pipeline, from, &ctx.registry)?;
    super::policy_check::check_plan(pipeline, from, &commands, ctx)?;
    Ok(commands)
}

/// The closest known name to `name`, if one is close enough to suggest.
pub fn suggest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let lower = name.to_lowercase();
    candidates
        .into_iter()
        .filter(|c| *c != name)
        .map(|c| (edit_distance(&lower, &c.to_lowercase()), c))
        .filter(|(d, c)| {
            let len = c.chars().count();
            *d < len && *d <= (len / 3).max(2)
        })
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// The closest flag name to `name` (without `--`): as [`suggest`], but a
/// flag may be one letter (`--nn` → `--n`), and `-`/`_` and case are ignored
/// (`--dryrun` → `--dry-run`).
pub fn suggest_flag<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let norm = |s: &str| s.to_lowercase().replace(['-', '_'], "");
    let typed = norm(name);
    candidates
        .into_iter()
        .filter(|c| *c != name)
        .map(|c| (edit_distance(&typed, &norm(c)), c))
        .filter(|(d, c)| {
            let len = norm(c).chars().count();
            *d < len.max(typed.chars().count()) && *d <= (len / 3).max(1)
        })
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Edit distance counting a swap of two neighbours as one edit (optimal
/// string alignment), so `kye` is one edit from `key`.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut rows = vec![(0..=b.len()).collect::<Vec<usize>>()];
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let prev = &rows[i - 1];
            let mut d = (prev[j - 1] + usize::from(a[i - 1] != b[j - 1]))
                .min(prev[j] + 1)
                .min(cur[j - 1] + 1);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(rows[i - 2][j - 2] + 1);
            }
            cur[j] = d;
        }
        rows.push(cur);
    }
    rows[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_near_names() {
        let names = ["where", "sort", "groupBy", "head"];
        assert_eq!(suggest("wher", names), Some("where"));
        assert_eq!(suggest("groupby", names), Some("groupBy"));
        assert_eq!(suggest("zzzzzz", names), None);
        assert_eq!(suggest("sotr", names), Some("sort"));
    }

    #[test]
    fn suggests_near_flags() {
        assert_eq!(suggest_flag("nn", ["n"]), Some("n"));
        assert_eq!(suggest_flag("x", ["n"]), None);
        assert_eq!(suggest_flag("kye", ["key", "desc"]), Some("key"));
        assert_eq!(suggest_flag("limt", ["prompt", "limit"]), Some("limit"));
        assert_eq!(suggest_flag("dryrun", ["dry-run", "each"]), Some("dry-run"));
        assert_eq!(suggest_flag("verbose", ["key", "desc"]), None);
    }
}
