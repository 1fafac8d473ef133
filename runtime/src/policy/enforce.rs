//! The plan-time check: a pipeline against the operator policy and the pins
//! of `./lobster.lock`, before any stage runs. Every excess is collected, so
//! one refusal names all of them.

use super::file::Policy;
use super::lock::{LockFile, LOCK_FILE};
use crate::commands::Command;
use crate::dsl::Pipeline;
use crate::error::{Error, Result};
use crate::executor::Context;
use crate::sandbox::Access;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

/// Which limits the caller set explicitly (flags); the others are defaults
/// that [`clamp_defaults`] may lower to the policy's maxima.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Requested {
    /// `--timeout-ms` was given.
    pub timeout: bool,
    /// `--max-stdout-bytes` was given.
    pub output: bool,
}

/// Lower every default limit of `ctx` that is above the policy's maximum.
/// Explicitly requested limits are left alone: [`check_plan`] refuses them.
pub fn clamp_defaults(policy: &Policy, ctx: &mut Context, requested: Requested) {
    let max = &policy.max;
    if let Some(m) = max.timeout_ms {
        let cap = Duration::from_millis(m);
        if !requested.timeout && ctx.limits.timeout.is_none_or(|t| t > cap) {
            ctx.limits.timeout = Some(cap);
        }
    }
    if let Some(m) = max.output_bytes {
        let cap = usize::try_from(m).unwrap_or(usize::MAX);
        if !requested.output && ctx.limits.max_output_bytes.is_none_or(|b| b > cap) {
            ctx.limits.max_output_bytes = Some(cap);
        }
        if ctx.sandbox.limits.output_bytes.is_some_and(|b| b > cap) {
            ctx.sandbox.limits.output_bytes = Some(cap);
        }
    }
    if let Some(m) = max.fuel {
        ctx.sandbox.limits.fuel = ctx.sandbox.limits.fuel.min(m);
    }
    if let Some(m) = max.memory_bytes {
        let cap = usize::try_from(m).unwrap_or(usize::MAX);
        ctx.sandbox.limits.memory_bytes = ctx.sandbox.limits.memory_bytes.min(cap);
    }
}

/// Check stages `from..` (already resolved to `commands`) against the
/// context's policy and `lobster.lock` in its working directory.
pub fn check_plan(
    pipeline: &Pipeline,
    from: usize,
    commands: &[&dyn Command],
    ctx: &Context,
) -> Result<()> {
    let excesses = policy_excesses(&ctx.policy, pipeline, from, commands, ctx);
    if !excesses.is_empty() {
        let source = ctx
            .policy
            .source
            .as_ref()
            .map_or_else(String::new, |p| format!(" ({})", p.display()));
        return Err(
            Error::runtime(format!("policy refuses this run: {}", excesses.join("; "))).with_hint(
                format!(
                    "nothing ran; ask the operator to widen the policy{source} or change the run"
                ),
            ),
        );
    }
    check_pins(pipeline, from, commands, &ctx.cwd)
}

/// Every way the run exceeds `policy`, in pipeline order then grants then limits.
pub fn policy_excesses(
    policy: &Policy,
    pipeline: &Pipeline,
    from: usize,
    commands: &[&dyn Command],
    ctx: &Context,
) -> Vec<String> {
    let mut out = Vec::new();
    if policy.untrusted() {
        for (offset, cmd) in commands.iter().enumerate() {
            let sig = cmd.signature();
            if sig.side_effects.contains(&"local_exec") {
                let index = from + offset;
                let name = pipeline
                    .stages
                    .get(index)
                    .map_or(sig.name, |s| s.name.as_str());
                out.push(format!(
                    "stage {} ({name}) runs host processes, which the untrusted policy forbids",
                    index + 1
                ));
            }
            if let Some(refused) = refused_imports(pipeline, from + offset, *cmd, ctx) {
                out.push(refused);
            }
        }
    }
    out.extend(run_excesses(policy, ctx));
    out
}

/// Run-wide excesses: grants outside the allowed roots and env names, and
/// limits above the maxima.
pub fn run_excesses(policy: &Policy, ctx: &Context) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(roots) = policy.allowed_roots() {
        for d in &ctx.grants.dirs {
            if !roots.iter().any(|r| inside_root(&ctx.cwd, &d.host, r)) {
                let flag = match d.access {
                    Access::Read => "--allow-read",
                    Access::ReadWrite => "--allow-write",
                };
                out.push(format!(
                    "{flag} {} is outside the allowed roots [{}]",
                    d.host.display(),
                    roots.join(", ")
                ));
            }
        }
    }
    for name in &ctx.grants.env {
        if !policy.allows_env(name) {
            let allowed = policy.env.as_deref().unwrap_or_default().join(", ");
            out.push(format!(
                "--allow-env {name} is not among the allowed variables [{allowed}]"
            ));
        }
    }
    out.extend(limit_excesses(policy, ctx));
    out
}

/// A wasm stage importing interfaces Lobster refuses (sockets, http,
/// unknown): named under the untrusted policy.
fn refused_imports(
    pipeline: &Pipeline,
    index: usize,
    cmd: &dyn Command,
    ctx: &Context,
) -> Option<String> {
    cmd.digest()?;
    let name = &pipeline.stages.get(index)?.name;
    let step = ctx.registry.steps()?.resolve(name).ok()??;
    let refused: Vec<&str> = step
        .component()
        .imports()
        .iter()
        .filter(|i| crate::sandbox::inspect::import_problem(i).is_some())
        .map(String::as_str)
        .collect();
    (!refused.is_empty()).then(|| {
        format!(
            "stage {} ({name}) imports {}, which the untrusted policy refuses",
            index + 1,
            refused.join(", ")
        )
    })
}

fn limit_excesses(policy: &Policy, ctx: &Context) -> Vec<String> {
    let max = &policy.max;
    let mut out = Vec::new();
    let mut over = |what: String, value: u64, cap: Option<u64>| {
        if let Some(cap) = cap.filter(|c| value > *c) {
            out.push(format!("{what} {value} is above the maximum {cap}"));
        }
    };
    if let Some(t) = ctx.limits.timeout {
        over("--timeout-ms".into(), t.as_millis() as u64, max.timeout_ms);
    }
    if let Some(b) = ctx.limits.max_output_bytes {
        over("--max-stdout-bytes".into(), b as u64, max.output_bytes);
    }
    if let Some(b) = ctx.sandbox.limits.output_bytes {
        over("step output bytes".into(), b as u64, max.output_bytes);
    }
    over("step fuel".into(), ctx.sandbox.limits.fuel, max.fuel);
    over(
        "step memory bytes".into(),
        ctx.sandbox.limits.memory_bytes as u64,
        max.memory_bytes,
    );
    out
}

/// Whether relative path `dir` names `root` or lies below it, by its
/// components alone (`./a` and `a/` are `a`; `.` holds everything).
pub fn lexically_inside(dir: &Path, root: &Path) -> bool {
    normal_parts(dir).starts_with(&normal_parts(root))
}

fn normal_parts(p: &Path) -> Vec<&std::ffi::OsStr> {
    p.components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s),
            _ => None,
        })
        .collect()
}

/// Whether granted directory `dir` lies inside `root` (both relative to
/// `cwd`): lexically, and also after following symlinks when both exist.
pub fn inside_root(cwd: &Path, dir: &Path, root: &str) -> bool {
    let root_path = PathBuf::from(root);
    if dir.is_absolute() || !lexically_inside(dir, &root_path) {
        return false;
    }
    match (
        cwd.join(dir).canonicalize(),
        cwd.join(&root_path).canonicalize(),
    ) {
        (Ok(d), Ok(r)) => d.starts_with(r),
        _ => true,
    }
}

/// Refuse a wasm stage whose component does not match its pin in
/// `cwd/lobster.lock` (when that file exists).
pub fn check_pins(
    pipeline: &Pipeline,
    from: usize,
    commands: &[&dyn Command],
    cwd: &Path,
) -> Result<()> {
    let path = cwd.join(LOCK_FILE);
    if !path.is_file() {
        return Ok(());
    }
    let lock = LockFile::load(&path)?;
    let mut problems = Vec::new();
    for (offset, cmd) in commands.iter().enumerate() {
        let Some(digest) = cmd.digest() else { continue };
        let Some(stage) = pipeline.stages.get(from + offset) else {
            continue;
        };
        if let Some(pinned) = lock.pin(&stage.name) {
            if pinned != digest {
                problems.push(format!(
                    "step {} does not match its pin in {LOCK_FILE} (pinned blake3 {}, the component now is {})",
                    stage.name,
                    short(pinned),
                    short(digest)
                ));
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Error::runtime(problems.join("; "))
            .with_hint("nothing ran; review the new component, then run `lobster lock` to pin it"))
    }
}

/// The first 12 hex digits of a digest.
pub fn short(digest: &str) -> &str {
    digest.get(..12).unwrap_or(digest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical_containment_ignores_dots_and_slashes() {
        let inside = |d: &str, r: &str| lexically_inside(Path::new(d), Path::new(r));
        assert!(inside("./data/", "data"));
        assert!(inside("data/sub", "./data"));
        assert!(inside("data", "."));
        assert!(!inside("data2", "data"));
        assert!(!inside("data", "data/sub"));
    }

    #[test]
    fn roots_are_component_prefixes() {
        let cwd = Path::new("/nonexistent-cwd");
        assert!(inside_root(cwd, Path::new("data"), "data"));
        assert!(inside_root(cwd, Path::new("./data/sub"), "data"));
        assert!(!inside_root(cwd, Path::new("database"), "data"));
        assert!(!inside_root(cwd, Path::new("secrets"), "data"));
        assert!(inside_root(cwd, Path::new("anything"), "."));
    }

    #[test]
    fn defaults_are_lowered_requests_refused() {
        use crate::executor::Mode;
        let tmp = tempfile::tempdir().unwrap();
        let policy = Policy::parse(
            "[max]\nfuel = 7\nmemory_bytes = 1024\ntimeout_ms = 1000\noutput_bytes = 2000\n",
            Path::new("p.toml"),
        )
        .unwrap();
        let mut ctx = Context::from_process(Mode::Tool, crate::state::StateStore::new(tmp.path()));
        ctx.limits.timeout = Some(Duration::from_millis(20_000));
        ctx.limits.max_output_bytes = Some(512_000);
        clamp_defaults(&policy, &mut ctx, Requested::default());
        assert_eq!(ctx.limits.timeout, Some(Duration::from_millis(1000)));
        assert_eq!(ctx.limits.max_output_bytes, Some(2000));
        assert_eq!(ctx.sandbox.limits.fuel, 7);
        assert_eq!(ctx.sandbox.limits.memory_bytes, 1024);
        assert!(limit_excesses(&policy, &ctx).is_empty());

        ctx.limits.timeout = Some(Duration::from_millis(5000));
        clamp_defaults(
            &policy,
            &mut ctx,
            Requested {
                timeout: true,
                output: false,
            },
        );
        assert_eq!(
            limit_excesses(&policy, &ctx),
            ["--timeout-ms 5000 is above the maximum 1000"]
        );
    }

    #[test]
    fn symlinks_out_of_a_root_are_outside() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("data")).unwrap();
        std::fs::create_dir_all(tmp.path().join("secrets")).unwrap();
        std::os::unix::fs::symlink(tmp.path().join("secrets"), tmp.path().join("data/link"))
            .unwrap();
        assert!(inside_root(tmp.path(), Path::new("data"), "data"));
        assert!(!inside_root(tmp.path(), Path::new("data/link"), "data"));
    }
}
