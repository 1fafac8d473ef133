//! Run-wide judgements: the run's grants and limits against the operator
//! policy (asked of the [`super::Authority`]; every excess collected, so one
//! refusal names all of them), and default limits lowered to the maxima.
//! The walk over a pipeline's stages lives with the planner
//! (`executor::policy_check`), the walk over workflow files in
//! `workflow::policy`; both ask the same authority.

use crate::kernel::{Access, Authority, Grants, Limits, Policy, Request};
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

/// Lower every default limit in `limits` that is above the policy's
/// maximum. Explicitly requested limits are left alone: the plan check
/// refuses them ([`run_excesses`]).
pub fn clamp_defaults(policy: &Policy, limits: &mut Limits, requested: Requested) {
    let max = &policy.max;
    if let Some(m) = max.timeout_ms {
        let cap = Duration::from_millis(m);
        if !requested.timeout && limits.timeout.is_none_or(|t| t > cap) {
            limits.timeout = Some(cap);
        }
    }
    if let Some(m) = max.output_bytes {
        let cap = usize::try_from(m).unwrap_or(usize::MAX);
        if !requested.output && limits.max_output_bytes.is_none_or(|b| b > cap) {
            limits.max_output_bytes = Some(cap);
        }
        if limits.steps.output_bytes.is_some_and(|b| b > cap) {
            limits.steps.output_bytes = Some(cap);
        }
    }
    if let Some(m) = max.fuel {
        limits.steps.fuel = limits.steps.fuel.min(m);
    }
    if let Some(m) = max.memory_bytes {
        let cap = usize::try_from(m).unwrap_or(usize::MAX);
        limits.steps.memory_bytes = limits.steps.memory_bytes.min(cap);
    }
}

/// Run-wide excesses: `grants` outside the allowed roots and env names of
/// `authority`'s policy, and `limits` above its maxima.
pub fn run_excesses(authority: &Authority, grants: &Grants, limits: &Limits) -> Vec<String> {
    let mut out = Vec::new();
    for d in &grants.dirs {
        let flag = match d.access {
            Access::Read => "--allow-read",
            Access::ReadWrite => "--allow-write",
        };
        let asked = Request::Dir {
            dir: &d.host,
            access: d.access,
        };
        if let Err(r) = authority.judge(&asked) {
            out.push(format!("{flag} {} {r}", d.host.display()));
        }
    }
    for name in &grants.env {
        if let Err(r) = authority.judge(&Request::EnvName {
            name: name.as_str(),
        }) {
            out.push(format!("--allow-env {name} {r}"));
        }
    }
    out.extend(limit_excesses(authority.policy(), limits));
    out
}

fn limit_excesses(policy: &Policy, limits: &Limits) -> Vec<String> {
    let max = &policy.max;
    let mut out = Vec::new();
    let mut over = |what: String, value: u64, cap: Option<u64>| {
        if let Some(cap) = cap.filter(|c| value > *c) {
            out.push(format!("{what} {value} is above the maximum {cap}"));
        }
    };
    if let Some(t) = limits.timeout {
        over("--timeout-ms".into(), t.as_millis() as u64, max.timeout_ms);
    }
    if let Some(b) = limits.max_output_bytes {
        over("--max-stdout-bytes".into(), b as u64, max.output_bytes);
    }
    if let Some(b) = limits.steps.output_bytes {
        over("step output bytes".into(), b as u64, max.output_bytes);
    }
    over("step fuel".into(), limits.steps.fuel, max.fuel);
    over(
        "step memory bytes".into(),
        limits.steps.memory_bytes as u64,
        max.memory_bytes,
    );
    out
}

pub use crate::kernel::authority::{inside_root, lexically_inside};

/// The first 12 hex digits of a digest.
pub fn short(digest: &str) -> &str {
    digest.get(..12).unwrap_or(digest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

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
        let policy = Policy::parse(
            "[max]\nfuel = 7\nmemory_bytes = 1024\ntimeout_ms = 1000\noutput_bytes = 2000\n",
            Path::new("p.toml"),
        )
        .unwrap();
        let mut limits = Limits {
            timeout: Some(Duration::from_millis(20_000)),
            max_output_bytes: Some(512_000),
            ..Limits::default()
        };
        clamp_defaults(&policy, &mut limits, Requested::default());
        assert_eq!(limits.timeout, Some(Duration::from_millis(1000)));
        assert_eq!(limits.max_output_bytes, Some(2000));
        assert_eq!(limits.steps.fuel, 7);
        assert_eq!(limits.steps.memory_bytes, 1024);
        assert!(limit_excesses(&policy, &limits).is_empty());

        limits.timeout = Some(Duration::from_millis(5000));
        clamp_defaults(
            &policy,
            &mut limits,
            Requested {
                timeout: true,
                output: false,
            },
        );
        assert_eq!(
            limit_excesses(&policy, &limits),
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
