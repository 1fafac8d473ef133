//! Whole-pipeline validation before any stage runs: every command must exist
//! and accept its arguments. (The reference ran stages 1–2 before noticing an
//! unknown command in stage 3.) Names that are not built-ins resolve to wasm
//! steps on the registry's step path here, so components are loaded and
//! hashed (see [`crate::commands::Command::digest`]) before anything runs.

use crate::dsl::Pipeline;
use crate::error::{Error, Result};
use crate::kernel::{Command, Registry};

/// Resolve every stage from `from` on; the first problem is returned with the
/// span of the offending stage.
pub fn check_pipeline<'r>(
    pipeline: &Pipeline,
    from: usize,
    registry: &'r Registry,
) -> Result<Vec<&'r dyn Command>> {
    let mut resolved = Vec::with_capacity(pipeline.stages.len().saturating_sub(from));
    for stage in pipeline.stages.iter().skip(from) {
        let found = registry
            .resolve(&stage.name)
            .map_err(|e| e.at(stage.name_span.clone()))?;
        let Some(cmd) = found else {
            let err = Error::runtime(format!("Unknown command: {}", stage.name))
                .at(stage.name_span.clone());
            return Err(match suggest(&stage.name, registry.names()) {
                Some(near) => err.with_hint(format!(
                    "did you mean `{near}`? (`lobster help` lists every command)"
                )),
                None => err.with_hint("`lobster help` lists every command"),
            });
        };
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

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
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
    }
}
