//! The [`Context`] of one run, built the same way for every front door:
//! state store from the environment, limits (defaults, clamps, policy
//! maxima), working directory, operator policy, sandbox grants.

use super::options::{self as limits, LimitArgs, StepOptions};
use crate::broker::endpoints::{Endpoints, Sources};
use crate::error::{Error, Result};
use crate::kernel::{Broker, Context, ContextBuilder, Grants, Mode};
use crate::sandbox::StepPath;
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
/// credential ([`crate::kernel::credential::secret_env_names`]) — the
/// server's environment holds other tenants' tokens and the operator's keys.
pub fn tenant_env(
    policy: &crate::kernel::Policy,
    server: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let secrets = crate::kernel::credential::secret_env_names(policy);
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

/// The operator's environment: the process's, read once — when the first
/// run's context is built — and shared by every run after it. The operator
/// owns the process environment at start, and nothing in lobster changes
/// its own environment once runs begin (a step's `env:` goes to its child
/// processes only), so reading it again per run (`lobster serve`) only
/// cost time.
pub fn operator_env() -> &'static Arc<BTreeMap<String, String>> {
    static ENV: std::sync::OnceLock<Arc<BTreeMap<String, String>>> = std::sync::OnceLock::new();
    ENV.get_or_init(|| Arc::new(std::env::vars().collect()))
}

/// The context of one run: state store from the environment, limits,
/// working directory (relative to the process's, and inside it), the
/// operator policy, the steps' grants and step path when given, the endpoints from this
/// process's environment, and whether a human can answer prompts (only in
/// human mode on a terminal).
pub fn build_context(
    mode: Mode,
    limits: &LimitArgs,
    cwd: Option<&str>,
    steps: Option<&StepOptions>,
) -> Result<Context> {
    Ok(context_builder(
        mode,
        limits,
        cwd,
        steps,
        StateStore::from_env(),
        None,
        Sources::Process,
        None,
    )?
    .build())
}

/// What [`build_context`] builds, over `state`, and under `fixed` when
/// given (a policy the front door loaded and checked itself;
/// `limits.policy` and `LOBSTER_POLICY` are then not read); the caller may
/// still set the cancellation handle and the steps' log and observer.
/// `sources` says where the run's endpoints and credentials come from
/// ([`Endpoints::resolve`]); for a `lobster serve` tenant
/// ([`Sources::Tenant`]) the run's environment is also cut down to
/// [`tenant_env`]. `root` (a serve tenant's) is where the run starts
/// instead of this process's directory, and what confines its files.
#[allow(clippy::too_many_arguments)]
pub fn context_builder(
    mode: Mode,
    limits: &LimitArgs,
    cwd: Option<&str>,
    steps: Option<&StepOptions>,
    state: StateStore,
    fixed: Option<&crate::kernel::Policy>,
    sources: Sources,
    root: Option<&crate::kernel::root::RunRoot>,
) -> Result<ContextBuilder> {
    // A store that cannot be reached refuses the run before its first step.
    state.ping()?;
    let process_dir = match root {
        Some(r) => r.workdir.clone(),
        None => std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
    };
    let run_dir = match cwd {
        Some(requested) => limits::resolve_cwd(&process_dir, requested)?,
        None => process_dir,
    };
    let mut run_limits = limits.resolve(mode)?;
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
            crate::kernel::Policy::from_flag_or_env(
                limits.policy.as_deref(),
                &std::env::current_dir().unwrap_or_default(),
            )?
        }
    };
    crate::policy::clamp_defaults(
        &policy,
        &mut run_limits,
        crate::policy::enforce::Requested {
            timeout: limits.timeout_ms.is_some(),
            output: limits.max_stdout_bytes.is_some(),
        },
    );
    if !policy.fuel {
        crate::sandbox::engine::disable_fuel();
    }
    let (grants, extra) = match steps {
        Some(s) => (s.grants_for_run(), s.steps.clone()),
        None => (Grants::default(), Vec::new()),
    };
    let policy = Arc::new(policy);
    let registry = crate::executor::registry(
        StepPath::from_env(&run_dir, &extra),
        &state,
        policy.clone(),
        run_dir.clone(),
    );
    // The operator's endpoints and credentials, from the environment as
    // the process had it when its first run was built.
    let env = operator_env();
    let broker = Broker::with_config(Endpoints::resolve(&policy, env, sources));
    let env = match sources {
        Sources::Tenant => Arc::new(tenant_env(&policy, env)),
        Sources::Process => env.clone(),
    };
    // SAFETY: isatty only inspects file descriptor 0.
    let interactive = mode == Mode::Human && unsafe { libc::isatty(0) } == 1;
    Ok(Context::builder(mode, state)
        .confinement(root.map(|r| r.confinement.clone()).unwrap_or_default())
        .run_dir(run_dir)
        .shared_env(env)
        .limits(run_limits)
        .shared_policy(policy)
        .grants(grants)
        .registry(registry)
        .broker(Arc::new(broker))
        .interactive(interactive))
}
