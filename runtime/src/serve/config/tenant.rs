//! One `[[tenant]]` table checked: its name, token, budgets, approvers,
//! notifier and workdir.

use super::raw::RawTenant;
use super::values::parse_sha256;
use super::TenantConfig;
use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// Check `t` (`rel` makes a path of the file absolute, `bad` words an
/// error of the file) against the tenants before it, `others`.
pub(super) fn check(
    t: RawTenant,
    state: &Path,
    rel: &dyn Fn(&str) -> PathBuf,
    others: &[TenantConfig],
    bad: &dyn Fn(String) -> Error,
) -> Result<TenantConfig> {
    if !crate::state::is_tenant_name(&t.name) {
        return Err(bad(format!(
            "tenant name {:?} must match [a-z0-9_-]{{1,64}}",
            t.name
        )));
    }
    if others.iter().any(|o| o.name == t.name) {
        return Err(bad(format!("tenant {} is configured twice", t.name)));
    }
    let token_sha256 = match (&t.token_sha256, &t.token_env) {
        (Some(hex), None) => parse_sha256(hex).ok_or_else(|| {
            bad(format!(
                "tenant {}: token_sha256 must be 64 hex digits (sha256 of the token)",
                t.name
            ))
        })?,
        (None, Some(var)) => {
            let token = std::env::var(var)
                .ok()
                .filter(|v| !v.is_empty())
                .ok_or_else(|| {
                    bad(format!(
                        "tenant {}: token_env {var} is not set (or empty)",
                        t.name
                    ))
                })?;
            crate::serve::auth::sha256(token.as_bytes())
        }
        _ => {
            return Err(bad(format!(
                "tenant {}: give exactly one of token_sha256 and token_env",
                t.name
            )))
        }
    };
    let max_concurrent_runs = t.max_concurrent_runs.unwrap_or(8);
    let requests_per_minute = t.requests_per_minute.unwrap_or(600);
    if max_concurrent_runs == 0 || requests_per_minute == 0 {
        return Err(bad(format!(
            "tenant {}: max_concurrent_runs and requests_per_minute must be at least 1",
            t.name
        )));
    }
    let mut approvers: Vec<crate::serve::approver::Approver> = Vec::new();
    for a in &t.approver {
        if !crate::serve::approver::valid_name(&a.name) {
            return Err(bad(format!(
                "tenant {}: approver name {:?} must be 1 to 64 of [A-Za-z0-9._@-]",
                t.name, a.name
            )));
        }
        if approvers.iter().any(|o| o.name == a.name) {
            return Err(bad(format!(
                "tenant {}: approver {} is configured twice",
                t.name, a.name
            )));
        }
        let credential = match (&a.token_sha256, &a.password_hash) {
            (Some(hex), None) => {
                let h = parse_sha256(hex).ok_or_else(|| {
                    bad(format!(
                        "tenant {}: approver {}: token_sha256 must be 64 hex digits",
                        t.name, a.name
                    ))
                })?;
                if h == token_sha256 {
                    return Err(bad(format!(
                        "tenant {}: approver {} has the tenant's own token: an approver signs in with a credential of their own, not the agent's",
                        t.name, a.name
                    )));
                }
                crate::serve::approver::Credential::TokenSha256(h)
            }
            (None, Some(phc)) => crate::serve::approver::Credential::password(phc).map_err(|e| {
                bad(format!(
                    "tenant {}: approver {}: password_hash is not an argon2 PHC string ({e}); make one with `lobster serve hash-password`",
                    t.name, a.name
                ))
            })?,
            _ => {
                return Err(bad(format!(
                    "tenant {}: approver {}: give exactly one of token_sha256 and password_hash",
                    t.name, a.name
                )))
            }
        };
        approvers.push(crate::serve::approver::Approver {
            name: a.name.clone(),
            credential,
        });
    }
    let self_approve = t.self_approve.unwrap_or(false);
    let elicitation_is_human = t.elicitation_is_human.unwrap_or(false);
    if !self_approve && approvers.is_empty() {
        return Err(bad(format!(
            "tenant {}: self_approve = false and no [[tenant.approver]]: nobody could approve its gates. Add an approver under the tenant (name = \"…\" and token_sha256 = \"…\" or password_hash from `lobster serve hash-password`), or set self_approve = true to let the tenant's token approve",
            t.name
        )));
    }
    let notify_url = match &t.notify_url {
        None => None,
        Some(u) => {
            crate::policy::credential::Origin::parse(u)
                .map_err(|e| bad(format!("tenant {}: notify_url: {e}", t.name)))?;
            Some(
                crate::broker::http::Url::parse(u)
                    .map_err(|e| bad(format!("tenant {}: notify_url: {e}", t.name)))?,
            )
        }
    };
    let workdir = match t.workdir.as_deref().map(str::trim) {
        Some("") => return Err(bad(format!("tenant {}: workdir is empty", t.name))),
        Some(w) => rel(w),
        None => state.join("work").join(&t.name),
    };
    check_workdir(&workdir, state, others).map_err(|why| {
        bad(format!(
            "tenant {}: workdir {}: {why}",
            t.name,
            workdir.display()
        ))
    })?;
    Ok(TenantConfig {
        approvers,
        elicitation_is_human,
        notify_url,
        policy: t.policy.as_deref().map(rel),
        workflows: t.workflows.iter().map(|p| rel(p)).collect(),
        steps: t.steps.iter().map(|p| rel(p)).collect(),
        workdir,
        max_concurrent_runs,
        requests_per_minute,
        self_approve,
        token_sha256,
        name: t.name,
    })
}

/// Why `workdir` cannot be a tenant's root: it holds (or lies inside) the
/// server's state stores or another tenant's root. Lexical, on absolute
/// paths; [`crate::serve::tenant::Tenant::new`] checks again once it exists.
pub fn check_workdir(
    workdir: &Path,
    state: &Path,
    others: &[TenantConfig],
) -> std::result::Result<(), String> {
    if state.starts_with(workdir) {
        return Err(format!(
            "holds the state directory {} (the tenants' stores); give the tenant a directory of its own",
            state.display()
        ));
    }
    if workdir.starts_with(state.join("tenants")) {
        return Err(
            "lies inside the tenants' stores; give the tenant a directory of its own".into(),
        );
    }
    if let Some(o) = others
        .iter()
        .find(|o| o.workdir.starts_with(workdir) || workdir.starts_with(&o.workdir))
    {
        return Err(format!(
            "overlaps tenant {}'s workdir {}; every tenant needs a root of its own",
            o.name,
            o.workdir.display()
        ));
    }
    Ok(())
}
