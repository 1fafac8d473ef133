//! The set of built-in commands, looked up by exact name.

use super::Command;

/// All built-in commands, sorted by name (UTF-16 order, as the reference).
pub struct Registry {
    commands: Vec<Box<dyn Command>>,
}

impl Registry {
    /// The standard library.
    pub fn builtin() -> Self {
        let mut commands: Vec<Box<dyn Command>> = super::all();
        commands.sort_by(|a, b| a.signature().name.cmp(b.signature().name));
        Registry { commands }
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
