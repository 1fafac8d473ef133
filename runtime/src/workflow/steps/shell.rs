//! `run:`/`command:` steps: a host shell line via [`Invocation::shell`].
//!
//! `${arg}` and `$step.path` in the line are never pasted into it: each
//! becomes a quoted reference to a `LOBSTER_REF_<n>` environment variable
//! holding the value (see [`crate::workflow::template`]).

use crate::error::{Error, Result};
use crate::executor::Context;
use crate::process::Invocation;
use crate::value::Item;
use crate::workflow::run::{stdin_bytes, stdout_result};
use crate::workflow::template::{render, Scope, Style};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Run `line` for step `id`; the result is `{id, stdout, json?}`.
pub fn run(
    id: &str,
    line: &str,
    stdin: Option<Item>,
    mut env: BTreeMap<String, String>,
    cwd: PathBuf,
    scope: &dyn Scope,
    ctx: &Context,
) -> Result<Item> {
    let rendered = render(line, scope, Style::Shell, None);
    for (k, v) in rendered.env {
        env.insert(k, v);
    }
    let mut inv = Invocation::shell(rendered.text.clone())
        .env(env)
        .cwd(cwd)
        .not_found("workflow shell not found; check LOBSTER_SHELL");
    if let Some(bytes) = stdin_bytes(stdin.as_ref()) {
        inv = inv.stdin(bytes);
    }
    let done = inv.run(ctx)?;
    if !done.success() {
        let detail = [done.stderr.trim(), done.stdout.trim(), line]
            .into_iter()
            .find(|s| !s.is_empty())
            .unwrap_or_default()
            .to_string();
        return Err(Error::runtime(format!(
            "workflow command failed ({}): {detail}",
            done.code_text()
        )));
    }
    let _ = id;
    Ok(stdout_result(id, done.stdout))
}
