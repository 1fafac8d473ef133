//! What `lobster doctor` examines: it proves tool mode works end to end by
//! running `exec --json --shell 'echo [1]'` (or, under an untrusted policy,
//! a pure pipeline), then checks what the sandbox depends on: the state
//! store, the wasm engine, the step path, the compiled cache and the policy
//! in force. Each [`Check`] is `{check, ok, detail}`, plus `fix` when it
//! found a problem. The door parses the flags, builds the run's context
//! and renders the report.

use crate::error::Result;
use crate::kernel::{Context, Mode};
use crate::sandbox::{survey, StepPath};
use serde_json::{json, Map, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// One finding.
#[derive(Debug, Clone)]
pub struct Check {
    /// What was checked (`state directory`, `wasm engine`, …).
    pub name: &'static str,
    /// Whether it passed.
    pub ok: bool,
    /// What was found.
    pub detail: String,
    /// How to fix it, when it did not pass.
    pub fix: Option<String>,
}

impl Check {
    /// A check that passed.
    pub fn ok(name: &'static str, detail: String) -> Self {
        Check {
            name,
            ok: true,
            detail,
            fix: None,
        }
    }

    /// A problem, with its fix.
    pub fn problem(name: &'static str, detail: String, fix: String) -> Self {
        Check {
            name,
            ok: false,
            detail,
            fix: Some(fix),
        }
    }

    /// `{check, ok, detail}`, plus `fix` when it found a problem.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("check".into(), json!(self.name));
        m.insert("ok".into(), json!(self.ok));
        m.insert("detail".into(), json!(self.detail));
        if let Some(fix) = &self.fix {
            m.insert("fix".into(), json!(fix));
        }
        Value::Object(m)
    }
}

/// Examine this installation with the context `built` for the probe run
/// (with `steps`, the `--steps` directories): the checks, in order, or why
/// tool mode does not work. A policy that cannot be read is a problem to
/// report, not a reason to skip the other checks; the probe then runs
/// without any trust (it stays pure).
pub fn examine(
    built: Result<Context>,
    steps: &[String],
) -> std::result::Result<Vec<Check>, String> {
    let mut policy_problem = None;
    let ctx = match built {
        Ok(ctx) => ctx,
        Err(e) if e.kind() == "parse_error" && e.to_string().contains("policy") => {
            policy_problem = Some(e.to_string());
            let untrusted = std::sync::Arc::new(crate::kernel::Policy {
                trust: crate::policy::Trust::Untrusted,
                ..Default::default()
            });
            let state = crate::state::StateStore::from_env();
            let cwd = std::env::current_dir().unwrap_or_default();
            let extra: Vec<PathBuf> = steps.iter().map(PathBuf::from).collect();
            let registry = crate::executor::registry(
                StepPath::from_env(&cwd, &extra),
                &state,
                untrusted.clone(),
                cwd.clone(),
            );
            Context::builder(Mode::Tool, state)
                .run_dir(cwd)
                .registry(registry)
                .shared_policy(untrusted)
                .build()
        }
        Err(e) => return Err(e.to_string()),
    };
    // The reference's probe runs a host process; an untrusted policy forbids
    // that, so a pure pipeline proves tool mode instead.
    let (probe, expected) = if ctx.policy().untrusted() {
        (
            "commands.list | head --n 1 | pick name",
            json!({"name": "approve"}),
        )
    } else {
        ("exec --json --shell 'echo [1]'", json!(1))
    };
    match super::start::run_text(probe, &ctx) {
        Ok(result)
            if result.envelope.status == crate::envelope::Status::Ok
                && result.envelope.output == vec![expected] =>
        {
            Ok(vec![
                if ctx.state.is_files() {
                    check_state_dir(ctx.state.dir())
                } else {
                    check_store(&ctx.state)
                },
                check_engine(),
                check_step_path(&ctx),
                check_cache(&ctx),
                match &policy_problem {
                    None => check_policy(&ctx),
                    Some(e) => Check::problem(
                        "policy",
                        e.clone(),
                        "fix the policy file (or unset LOBSTER_POLICY / drop --policy); until then every run is refused".into(),
                    ),
                },
            ])
        }
        Ok(other) => Err(format!(
            "unexpected result from the exec check: {:?}",
            other.envelope.output
        )),
        Err(e) => Err(e.to_string()),
    }
}

/// A database store: reachable, schema up to date (migrating it if not).
fn check_store(store: &crate::state::StateStore) -> Check {
    const NAME: &str = "state store";
    match super::store::migrate(store) {
        Ok(text) => Check::ok(NAME, text.lines().take(2).collect::<Vec<_>>().join("; ")),
        Err(e) => Check::problem(
            NAME,
            e.to_string(),
            "start the database or fix the URL (--store / LOBSTER_STORE); until then every run is refused".into(),
        ),
    }
}

/// Writable, 0700, and the token key (0600, 64 hex digits) when one exists.
fn check_state_dir(dir: &Path) -> Check {
    const NAME: &str = "state directory";
    let shown = dir.display();
    let Ok(meta) = std::fs::metadata(dir) else {
        return Check::ok(
            NAME,
            format!("{shown} does not exist yet; it is created (0700) by the first pause"),
        );
    };
    if !meta.is_dir() {
        return Check::problem(
            NAME,
            format!("{shown} is not a directory"),
            format!("remove {shown} or set LOBSTER_STATE_DIR to a directory"),
        );
    }
    let probe = dir.join(format!(".doctor-{}", crate::state::random_hex(6)));
    if let Err(e) = std::fs::write(&probe, b"") {
        return Check::problem(
            NAME,
            format!("{shown} is not writable: {e}"),
            format!("make {shown} writable by this user, or set LOBSTER_STATE_DIR"),
        );
    }
    let _ = std::fs::remove_file(&probe);
    let mode = meta.permissions().mode() & 0o777;
    if mode != 0o700 {
        return Check::problem(
            NAME,
            format!("{shown} has mode {mode:o}; resume states must not be readable by others"),
            format!("chmod 700 {shown}"),
        );
    }
    let key = dir.join(".token-key");
    let Ok(m) = std::fs::metadata(&key) else {
        return Check::ok(
            NAME,
            format!("{shown}: writable, 0700; no token key yet (created by the first pause)"),
        );
    };
    // The key is 32 random bytes written as 64 hex digits, mode 0600.
    let text = std::fs::read_to_string(&key).unwrap_or_default();
    let well_formed = text.trim().len() == 64 && text.trim().bytes().all(|b| b.is_ascii_hexdigit());
    let key_mode = m.permissions().mode() & 0o777;
    if !well_formed || key_mode != 0o600 {
        return Check::problem(
            NAME,
            format!(
                "{} is not a 0600 file of 64 hex digits (mode {key_mode:o})",
                key.display()
            ),
            format!(
                "remove {} (a new key is made by the next pause; paused runs become unresumable)",
                key.display()
            ),
        );
    }
    Check::ok(NAME, format!("{shown}: writable, 0700, token key present"))
}

/// The allocator in use and whether the default 4 GiB reservation is granted.
fn check_engine() -> Check {
    const NAME: &str = "wasm engine";
    // One linear memory: 4 GiB plus a 2 GiB guard region.
    let reservation = survey::can_reserve(6 << 30);
    match crate::sandbox::engine() {
        Err(e) => Check::problem(
            NAME,
            format!("the engine cannot start: {e}"),
            "unset LOBSTER_WASM_ALLOCATOR or set it to reserved, compact or pooling".into(),
        ),
        Ok(engine) => {
            let mode = engine.allocation().name();
            let detail = format!(
                "allocator {mode}; a 4 GiB memory reservation is {}",
                if reservation { "granted" } else { "refused" }
            );
            if !reservation && mode != "compact" {
                Check::problem(
                    NAME,
                    detail,
                    "set LOBSTER_WASM_ALLOCATOR=compact (bounds-checked memories, no reservation) or raise `ulimit -v`".into(),
                )
            } else {
                Check::ok(NAME, detail)
            }
        }
    }
}

/// Every directory of the step path and every component in it.
fn check_step_path(ctx: &Context) -> Check {
    const NAME: &str = "step path";
    let Some(resolver) = crate::sandbox::resolver_of(&ctx.registry) else {
        return Check::ok(NAME, "no step path".into());
    };
    let mut lines = Vec::new();
    let mut broken = Vec::new();
    for dir in resolver.path().dirs() {
        if !dir.is_dir() {
            lines.push(format!("{}: absent", dir.display()));
            continue;
        }
        let files = survey::wasm_files(dir);
        lines.push(format!("{}: {} component(s)", dir.display(), files.len()));
        for file in files {
            let found = survey::inspect_file(&file, resolver.cache());
            let cached = if found.cached {
                "cached"
            } else {
                "compiled now, cached for next time"
            };
            match found.world() {
                Some(world) => lines.push(format!(
                    "  {} ({}): {world}, blake3 {}, {cached}; {}",
                    found.name(),
                    file_name(&file),
                    &found.digest[..16.min(found.digest.len())],
                    crate::signing::sidecar::describe(&file, &found.digest, &ctx.policy().signers)
                )),
                None => {
                    let e = found.loaded.as_ref().err().cloned().unwrap_or_default();
                    lines.push(format!("  {}: does not load: {e}", file_name(&file)));
                    broken.push(file.clone());
                }
            }
        }
    }
    let detail = lines.join("\n");
    if broken.is_empty() {
        Check::ok(NAME, detail)
    } else {
        let list: Vec<String> = broken.iter().map(|p| p.display().to_string()).collect();
        Check::problem(
            NAME,
            detail,
            format!(
                "rebuild {} for wasm32-wasip2 as a lobster:step or wasi:cli/command component, or move it off the step path",
                list.join(", ")
            ),
        )
    }
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Where compiled artefacts live, how many and how big.
fn check_cache(ctx: &Context) -> Check {
    const NAME: &str = "compiled cache";
    let Some(dir) = crate::sandbox::resolver_of(&ctx.registry).and_then(|s| s.cache().dir()) else {
        return Check::ok(NAME, "disabled: every run compiles its steps".into());
    };
    let dir: PathBuf = dir.to_path_buf();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Check::ok(
            NAME,
            format!("{}: empty (filled by the first wasm step)", dir.display()),
        );
    };
    let (mut count, mut bytes) = (0u64, 0u64);
    for e in entries.flatten() {
        if e.path().extension().is_some_and(|x| x == "cwasm") {
            count += 1;
        }
        bytes += e.metadata().map(|m| m.len()).unwrap_or(0);
    }
    Check::ok(
        NAME,
        format!(
            "{}: {count} compiled component(s), {:.1} MiB",
            dir.display(),
            bytes as f64 / (1024.0 * 1024.0)
        ),
    )
}

/// The policy in force.
fn check_policy(ctx: &Context) -> Check {
    const NAME: &str = "policy";
    let p = ctx.policy();
    let Some(source) = &p.source else {
        return Check::ok(
            NAME,
            "none: the caller is trusted (exec runs host processes), as in the reference; set --policy FILE or LOBSTER_POLICY to restrict runs".into(),
        );
    };
    let list = |v: &Option<Vec<String>>| match v {
        None if p.untrusted() => "none".to_string(),
        None => "any".to_string(),
        Some(v) => format!("[{}]", v.join(", ")),
    };
    let max: Vec<String> = p
        .max
        .entries()
        .iter()
        .filter_map(|(k, v)| v.map(|v| format!("{k}={v}")))
        .collect();
    // The operator's CA bundle is read only when an https call is made;
    // say here, before any run, when it cannot be used.
    if let Some(ca) = p.ca_file() {
        if let Err(e) = crate::broker::tls::client_config(Some(&ca)) {
            return Check::problem(
                NAME,
                e.to_string(),
                "point [gateway] ca_file at a readable PEM file of CA certificates (or remove it); until then every brokered https call fails".into(),
            );
        }
    }
    if let Some(ca) = p.registry_ca_file() {
        if let Err(e) = crate::registry::tls::roots(Some(&ca)) {
            return Check::problem(
                NAME,
                e,
                "point registry_ca_file at a readable PEM file of CA certificates (or remove it); until then every https registry is refused".into(),
            );
        }
    }
    // Registries and signers, when the policy says anything about them.
    let mut shipping = String::new();
    if p.registries.is_some() {
        shipping.push_str(&format!(", registries {}", list(&p.registries)));
    }
    if !p.insecure_registries.is_empty() {
        shipping.push_str(&format!(
            ", insecure registries [{}]",
            p.insecure_registries.join(", ")
        ));
    }
    if !p.signers.keys.is_empty() || p.signers.require_signed {
        let ids = p.signers.key_ids();
        shipping.push_str(&format!(
            ", signers [{}]{}",
            ids.join(", "),
            if p.signers.require_signed {
                " required"
            } else {
                ""
            }
        ));
    }
    Check::ok(
        NAME,
        format!(
            "{}: trust {}, roots {}, env {}{shipping}, max {}",
            source.display(),
            if p.untrusted() {
                "untrusted"
            } else {
                "trusted"
            },
            list(&p.roots),
            list(&p.env),
            if max.is_empty() {
                "none".to_string()
            } else {
                max.join(", ")
            }
        ),
    )
}
