//! Unknown `--flags` are refused when the plan is checked, before anything
//! runs: `head --nn 1` would otherwise keep ten items and exit 0, a wrong
//! answer that looks right. A stage accepts the flags its signature declares
//! (for a `lobster:step` component: those its `describe` lists) and the
//! reference's spellings of them ([`Command::flag_aliases`]); `exec` passes
//! flags after its command on, and a `wasi:cli/command` step, which declares
//! nothing, gets its arguments as written ([`OtherFlags`]). The reference
//! ignores unknown flags (docs/COMPATIBILITY.md).

use super::plan::suggest_flag;
use crate::commands::{Command, OtherFlags};
use crate::dsl::Stage;
use crate::error::{Error, Result};

/// Refuse the first flag of `stage` that `cmd` does not accept, pointing at
/// it, with the nearest declared flag when one is close.
pub fn check_flags(cmd: &dyn Command, stage: &Stage) -> Result<()> {
    let rule = cmd.other_flags();
    if rule == OtherFlags::Pass {
        return Ok(());
    }
    let sig = cmd.signature();
    let aliases = cmd.flag_aliases();
    let accepted = |name: &str| sig.flags.iter().any(|f| f.name == name) || aliases.contains(&name);
    for (name, _) in &stage.args.flags {
        if accepted(name) {
            continue;
        }
        if rule == OtherFlags::RefuseBeforeCommand && stage.flag_spans.after_positional(name) {
            continue;
        }
        let span = stage
            .flag_spans
            .of(name)
            .cloned()
            .unwrap_or_else(|| stage.span.clone());
        let near = suggest_flag(name, sig.flags.iter().map(|f| f.name))
            .or_else(|| suggest_flag(name, aliases.iter().copied()));
        let mut message = format!("Unknown flag --{name} for {}", sig.name);
        if let Some(near) = near {
            message.push_str(&format!(" (did you mean --{near}?)"));
        }
        let takes = if sig.flags.is_empty() {
            format!("{} takes no flags", sig.name)
        } else {
            let list: Vec<String> = sig.flags.iter().map(|f| format!("--{}", f.name)).collect();
            format!("{} takes {}", sig.name, list.join(", "))
        };
        let hint = format!("{takes} (`lobster help {}`)", sig.name);
        return Err(Error::parse_at(message, span).with_hint(hint));
    }
    Ok(())
}
