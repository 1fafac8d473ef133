//! The stages a run can name: the built-in commands, looked up by exact
//! name, and the WebAssembly steps of a [`StepSource`] (the sandbox's step
//! path), asked for names that are not built-ins.

use super::Command;
use crate::error::Result;
use std::path::PathBuf;

/// Where stage names that are not built-ins are found: the WebAssembly
/// steps on a step path. The sandbox implements it (`StepResolver`); the
/// registry, and so every room below the sandbox, knows only this.
pub trait StepSource: Send + Sync + std::fmt::Debug {
    /// The step called `name`: loaded, hashed, admitted and described the
    /// first time the source is asked, then the same step for the rest of
    /// the source's life (one run: the sandbox's resolver pins it);
    /// `Ok(None)` when nothing on the path matches, `Err` when a matching
    /// component cannot be loaded.
    fn resolve(&self, name: &str) -> Result<Option<&dyn Command>>;

    /// The directories searched, in order (recorded in a resume state).
    fn dirs(&self) -> &[PathBuf];

    /// The stage name of every step on the path that loads, in path order
    /// (a name found twice is listed once): what `commands.list` shows.
    fn names(&self) -> Vec<String>;

    /// The concrete source, for the rooms that know it (the sandbox's own
    /// helpers).
    fn as_any(&self) -> &dyn std::any::Any;
}

/// All built-in commands, sorted by name (UTF-16 order, as the reference),
/// and optionally a source of WebAssembly steps.
pub struct Registry {
    commands: Vec<Box<dyn Command>>,
    steps: Option<Box<dyn StepSource>>,
}

impl Registry {
    /// A registry of `commands` (sorted here), without steps. The built-in
    /// set is `crate::commands::builtin()`.
    pub fn new(mut commands: Vec<Box<dyn Command>>) -> Self {
        commands.sort_by(|a, b| a.signature().name.cmp(b.signature().name));
        Registry {
            commands,
            steps: None,
        }
    }

    /// Also resolve names that are not built-ins to steps of `steps`.
    pub fn with_steps(mut self, steps: impl StepSource + 'static) -> Self {
        self.steps = Some(Box::new(steps));
        self
    }

    /// The step source, if any.
    pub fn steps(&self) -> Option<&dyn StepSource> {
        self.steps.as_deref()
    }

    /// A built-in called `name`, else a step of the step source (loaded,
    /// hashed and described the first time this run asks, pinned after). `Ok(None)` when neither exists; `Err`
    /// when a matching component cannot be loaded.
    pub fn resolve(&self, name: &str) -> Result<Option<&dyn Command>> {
        if let Some(cmd) = self.get(name) {
            return Ok(Some(cmd));
        }
        match &self.steps {
            Some(steps) => steps.resolve(name),
            None => Ok(None),
        }
    }

    /// The command called `name` (exact, case-sensitive).
    pub fn get(&self, name: &str) -> Option<&dyn Command> {
        self.commands
            .iter()
            .find(|c| c.signature().name == name)
            .map(|c| c.as_ref())
    }

    /// Every command, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = &dyn Command> {
        self.commands.iter().map(|c| c.as_ref())
    }

    /// Names, for "did you mean" suggestions.
    pub fn names(&self) -> Vec<&'static str> {
        self.commands.iter().map(|c| c.signature().name).collect()
    }
}
