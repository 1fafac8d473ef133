//! Built-in pipeline commands, one file each, and the registry that finds them.
//!
//! Every command declares its [`Signature`] (flags, positionals, side effects),
//! its help text (verbatim from the reference where one exists) and
//! [`Example`]s with their expected output; `cargo test` runs every example
//! (see [`examples::check_examples`]).

#[cfg(test)]
pub mod examples;
#[cfg(test)]
mod lazy_tests;

pub use crate::kernel::{
    collect, parsed, stream_of, Command, Example, FlagSpec, FlagType, Halt, ItemStream, LazyStream,
    OtherFlags, Output, Registry, Signature,
};

mod approve;
mod ask;
mod commands_list;
mod dedupe;
mod diff_last;
mod exec;
mod filters;
mod group_by;
mod head;
pub mod interactive;
mod js;
mod json;
mod llm_invoke;
mod map;
mod openclaw_invoke;
mod pick;
mod sort;
mod state_get;
mod state_set;
mod table;
mod template;
mod where_;

pub use approve::preview_of;

/// The registry of every built-in command (no WebAssembly steps: a run's
/// context adds its step path with [`Registry::with_steps`]).
pub fn builtin() -> Registry {
    Registry::new(all())
}

/// A context in `mode` over `state` with the built-in commands (tests).
#[cfg(test)]
pub(crate) fn test_context(
    mode: crate::kernel::Mode,
    state: crate::state::StateStore,
) -> crate::kernel::Context {
    crate::kernel::Context::builder(mode, state)
        .registry(std::sync::Arc::new(builtin()))
        .build()
}

/// Every built-in command (unsorted; the registry sorts).
pub(crate) fn all() -> Vec<Box<dyn Command>> {
    vec![
        Box::new(approve::Approve),
        Box::new(ask::Ask),
        Box::new(commands_list::CommandsList),
        Box::new(dedupe::Dedupe),
        Box::new(diff_last::DiffLast),
        Box::new(exec::Exec),
        Box::new(group_by::GroupBy),
        Box::new(head::Head),
        Box::new(json::Json),
        Box::new(llm_invoke::LLM),
        Box::new(llm_invoke::LLM_TASK),
        Box::new(map::MapCmd),
        Box::new(openclaw_invoke::OPENCLAW),
        Box::new(openclaw_invoke::CLAWD),
        Box::new(pick::Pick),
        Box::new(sort::Sort),
        Box::new(state_get::StateGet),
        Box::new(state_set::StateSet),
        Box::new(table::Table),
        Box::new(template::Template),
        Box::new(where_::Where),
    ]
}

#[cfg(test)]
mod tests {
    /// Every built-in — a new one too — has examples, and they run: here,
    /// except the two model commands, whose examples
    /// `tests/cli/broker/models.rs` runs against the loopback stubs.
    #[test]
    fn every_builtin_runs_its_examples() {
        for cmd in super::all() {
            let name = cmd.signature().name;
            if matches!(name, "llm.invoke" | "llm_task.invoke") {
                assert!(!cmd.examples().is_empty(), "{name} has no examples");
                continue;
            }
            super::examples::check_examples(cmd.as_ref());
        }
    }
}
