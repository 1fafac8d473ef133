//! `lobster help [--steps DIR]... [topic]`: the main help with the steps
//! on the step path, a subcommand's or a built-in's help, or a step's
//! `describe` with who signed it; and the hint for a word that is neither.

use super::output::write_once;
use super::{help, subcommands};
use crate::kernel::Registry;
use crate::sandbox::StepPath;
use crate::state::StateStore;
use std::path::PathBuf;

/// `lobster help [--steps DIR]... [topic]`: the main help (with the steps on
/// the step path), a CLI subcommand's, a built-in's, or a step's `describe`.
pub(super) fn print_help(argv: &[String]) -> i32 {
    let mut extra = Vec::new();
    let mut topic = None;
    let mut i = 0;
    while i < argv.len() {
        match (argv[i].as_str(), argv.get(i + 1)) {
            ("--steps", Some(dir)) => {
                extra.push(PathBuf::from(dir));
                i += 1;
            }
            (t, _) if topic.is_none() => topic = Some(t),
            _ => {}
        }
        i += 1;
    }
    let cwd = std::env::current_dir().unwrap_or_default();
    let steps = crate::sandbox::StepResolver::new(
        StepPath::from_env(&cwd, &extra),
        crate::sandbox::ArtifactCache::in_state_dir(StateStore::from_env().dir()),
    );
    let registry = crate::commands::builtin();
    let text = match topic {
        None => {
            let found = crate::sandbox::survey::list_steps(&steps);
            help::main_help(&registry) + &help::steps_section(&found)
        }
        Some(name) if registry.get(name).is_none() && !help_topic(name) => {
            match steps.resolve(name) {
                Ok(Some(step)) => {
                    // Who signed it, judged by the operator's policy
                    // (LOBSTER_POLICY) when there is one.
                    let policy =
                        crate::policy::Policy::from_flag_or_env(None, &cwd).unwrap_or_default();
                    let digest = crate::commands::Command::digest(step)
                        .unwrap_or_default()
                        .to_string();
                    format!(
                        "{}\nSignature: {}\n",
                        crate::commands::Command::help(step).trim_end(),
                        crate::signing::sidecar::describe(step.path(), &digest, &policy.signers)
                    )
                }
                Ok(None) => {
                    let hint = word_hint(name, &registry);
                    write_once("", &format!("Unknown command: {name}\n  hint: {hint}\n"));
                    return 2;
                }
                Err(e) => {
                    write_once("", &format!("Error: {e}\n"));
                    return 1;
                }
            }
        }
        Some(topic) => return print_topic(&registry, topic),
    };
    write_once(&text, "");
    0
}

/// Whether `name` is a CLI subcommand with its own help text.
fn help_topic(name: &str) -> bool {
    subcommands::find(name).is_some()
}

/// The help of a CLI subcommand or a built-in command.
fn print_topic(registry: &Registry, topic: &str) -> i32 {
    let text = match subcommands::find(topic) {
        Some(sub) => sub.help,
        None => registry.get(topic).map_or("", |cmd| cmd.help()),
    };
    write_once(text, "");
    0
}

/// A lone unknown word may be a mistyped subcommand or a mistyped pipeline
/// command: the hint suggests from both.
pub(super) fn word_hint(word: &str, registry: &Registry) -> String {
    let sub = crate::executor::suggest(word, subcommands::SUBCOMMANDS.iter().map(|s| s.name));
    let cmd = crate::executor::suggest(word, registry.names());
    match (sub, cmd) {
        (Some(s), Some(c)) => format!(
            "did you mean the subcommand `lobster {s}` or the command `{c}`? (`lobster help` lists both)"
        ),
        (Some(s), None) => {
            format!("did you mean `lobster {s}`? (`lobster help` lists the subcommands)")
        }
        (None, Some(c)) => format!("did you mean `{c}`? (`lobster help` lists every command)"),
        (None, None) => "`lobster help` lists the subcommands and every command".into(),
    }
}
