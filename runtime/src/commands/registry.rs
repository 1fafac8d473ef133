//! The set of built-in commands, looked up by exact name, plus the wasm
//! steps found on the step path (see [`crate::sandbox::resolve`]).

use super::Command;
use crate::error::Result;
use crate::sandbox::StepResolver;

/// All built-in commands, sorted by name (UTF-16 order, as the reference),
/// and optionally a resolver for wasm steps.
pub struct Registry {
    commands: Vec<Box<dyn Command>>,
    steps: Option<StepResolver>,
}

impl Registry {
    /// The standard library.
    pub fn builtin() -> Self {
        let mut commands: Vec<Box<dyn Command>> = super::all();
        commands.sort_by(|a, b| a.signature().name.cmp(b.signature().name));
        Registry {
            commands,
            steps: None,
        }
    }

    /// Also resolve names that are not built-ins to wasm steps with `steps`.
    pub fn with_steps(mut self, steps: StepResolver) -> Self {
        self.steps = Some(steps);
        self
    }

    /// The wasm step resolver, if any.
    pub fn steps(&self) -> Option<&StepResolver> {
        self.steps.as_ref()
    }

    /// A built-in called `name`, else a wasm step on the step path (loaded,
    /// hashed and described now). `Ok(None)` when neither exists; `Err`
    /// when a matching component cannot be loaded.
    pub fn resolve(&self, name: &str) -> Result<Option<&dyn Command>> {
        if let Some(cmd) = self.get(name) {
            return Ok(Some(cmd));
        }
        match &self.steps {
            Some(steps) => Ok(steps.resolve(name)?.map(|s| s as &dyn Command)),
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
