//! The [`Context`] of one run, built the same way for every front door:
//! state store from the environment, limits (defaults, clamps, policy
//! maxima), working directory, operator policy, sandbox grants.

use crate::broker::endpoints::{Endpoints, Sources};
use crate::broker::Broker;
use crate::cli::limits::{self, LimitArgs};
use crate::cli::run_args::SandboxArgs;
use crate::error::{Error, Result};
use crate::executor::{Context, Mode};
use crate::sandbox::{Grants, StepPath};
use crate::state::StateStore;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

/// Variables a `lobster serve` tenant's runs see from the server's
/// environment whatever their policy says (none of them a credential).
pub const TENANT_BASE_ENV: &[&str] = &[
    "PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "USER", "LOGNAME",
];

/// The environment of a `lobster serve` tenant's runs (host processes,
/// `$NAME` expansion in trusted `env:` values, grants): [`TENANT_BASE_ENV`]
/// and the names the tenant's policy lists in `env` (explicitly; a trusted
/// policy without a list adds nothing), never a variable that holds a
/// credential ([`crate::policy::credential::secret_env_names`]) — the
/// server's environment holds other tenants' tokens and the operator's keys.
pub fn tenant_env(
    policy: &crate::policy::Policy,
    server: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let secrets = crate::policy::credential::secret_env_names(policy);
    let listed = |name: &str| {
        policy
            .env
            .iter()
            .flatten()
            .any(|p| match p.strip_suffix('*') {
                Some(prefix) => name.starts_with(prefix),
                None => p == name,
            })
    };
    server
        .iter()
        .filter(|(k, _)| TENANT_BASE_ENV.contains(&k.as_str()) || listed(k))
        .filter(|(k, _)| !secrets.contains(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The context of one run: state store from the environment, limits,
/// working directory (relative to the process's, and inside it), the
/// operator policy, and whether a human can answer prompts (only in human
/// mode on a terminal).
pub fn build_context(mode: Mode, limits: &LimitArgs, cwd: Option<&str>) -> Result<Context> {
    build_context_in(
        mode,
        limits,
        cwd,
        StateStore::from_env(),
        None,
        Sources::Process,
    )
}

/// [`build_context`] over `state`, and under `fixed` when given (a policy
/// the front door loaded and checked itself; `limits.policy` and
/// `LOBSTER_POLICY` are then not read). `sources` says where the run's
/// endpoints and credentials come from ([`Endpoints::resolve`]); for a
/// `lobster serve` tenant ([`Sources::Tenant`]) the run's environment is
/// also cut down to [`tenant_env`].
pub fn build_context_in(
    mode: Mode,
    limits: &LimitArgs,
    cwd: Option<&str>,
    state: StateStore,
    fixed: Option<&crate::policy::Policy>,
    sources: Sources,
) -> Result<Context> {
    // A store that cannot be reached refuses the run before its first step.
    state.ping()?;
    let mut ctx = Context::from_process(mode, state);
    ctx.limits = limits.resolve(mode)?;
    if let Some(requested) = cwd {
        let dir = limits::resolve_cwd(&ctx.cwd, requested)?;
        ctx.set_run_dir(dir);
        let path = StepPath::from_env(&ctx.cwd, &[]);
        ctx.use_step_path(path);
    }
    let policy = match fixed {
        Some(p) => p.clone(),
        None => {
            if limits.policy.is_some()
                && std::env::var_os("LOBSTER_POLICY").is_some_and(|v| !v.is_empty())
            {
                return Err(Error::parse(
                    "--policy cannot replace the operator's policy (LOBSTER_POLICY is set)",
                ));
            }
            crate::policy::Policy::from_flag_or_env(
                limits.policy.as_deref(),
                &std::env::current_dir().unwrap_or_default(),
            )?
        }
    };
    crate::policy::clamp_defaults(
        &policy,
        &mut ctx,
        crate::policy::enforce::Requested {
            timeout: limits.timeout_ms.is_some(),
            output: limits.max_stdout_bytes.is_some(),
        },
    );
    if !policy.fuel {
        crate::sandbox::engine::disable_fuel();
    }
    // The operator's endpoints and credentials, once, from the environment
    // as the process has it now (before any step adds to it).
    ctx.broker = Arc::new(Broker::new(Endpoints::resolve(&policy, &ctx.env, sources)));
    if sources == Sources::Tenant {
        ctx.env = Arc::new(tenant_env(&policy, &ctx.env));
    }
    ctx.set_policy(policy);
    // SAFETY: isatty only inspects file descriptor 0.
    ctx.interactive = mode == Mode::Human && unsafe { libc::isatty(0) } == 1;
    Ok(ctx)
}

/// Apply `--steps`, `--allow-read`, `--allow-write`, `--allow-env`,
/// `--allow-tool` and `--allow-llm`: the
/// grants get a fresh clock and random seed, recorded with any pause.
pub fn apply_sandbox_args(ctx: &mut Context, args: &SandboxArgs) -> Result<()> {
    let mut builder = Grants::builder();
    for spec in &args.allow_read {
        builder = builder.allow_read(spec);
    }
    for spec in &args.allow_write {
        builder = builder.allow_write(spec);
    }
    for name in &args.allow_env {
        builder = builder.allow_env(name);
    }
    for name in &args.allow_tool {
        builder = builder.allow_tool(name);
    }
    builder = builder.allow_llm(args.allow_llm);
    let grants = builder
        .fresh_run()
        .build()
        .map_err(|e| Error::parse(e.to_string()))?;
    ctx.set_grants(grants);
    if !args.steps.is_empty() {
        let extra: Vec<PathBuf> = args.steps.iter().map(PathBuf::from).collect();
        let path = StepPath::from_env(&ctx.cwd, &extra);
        ctx.use_step_path(path);
    }
    Ok(())
}
