//! What a step says about itself: [`StepInfo`] and its parts.

use crate::bindings::lobster::step::types as wit;

/// The type of a flag's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlagKind {
    /// A bare switch (`--apply`).
    Switch,
    /// Any text.
    Text,
    /// A number.
    Number,
}

/// One accepted flag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flag {
    /// Name without `--`.
    pub name: String,
    /// Type of the value.
    pub kind: FlagKind,
    /// Default value as text.
    pub default: Option<String>,
    /// One line of help.
    pub description: String,
}

impl Flag {
    fn new(name: &str, kind: FlagKind, description: &str) -> Flag {
        Flag {
            name: name.to_string(),
            kind,
            default: None,
            description: description.to_string(),
        }
    }

    /// A bare switch such as `--apply`.
    pub fn switch(name: &str, description: &str) -> Flag {
        Flag::new(name, FlagKind::Switch, description)
    }

    /// A flag taking text.
    pub fn text(name: &str, description: &str) -> Flag {
        Flag::new(name, FlagKind::Text, description)
    }

    /// A flag taking a number.
    pub fn number(name: &str, description: &str) -> Flag {
        Flag::new(name, FlagKind::Number, description)
    }

    /// Set the default shown in help.
    pub fn default(mut self, value: &str) -> Flag {
        self.default = Some(value.to_string());
        self
    }
}

/// How a step uses a directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Read only.
    Read,
    /// Read and write.
    ReadWrite,
}

/// A capability the run must grant before the step may run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Capability {
    /// A preopened directory at this guest path (`/mail`).
    Dir(String, Access),
    /// An environment variable.
    Env(String),
    /// A gateway tool, called with [`crate::tools::invoke`] (`--allow-tool NAME`).
    Tool(String),
    /// Model calls with [`crate::llm::json`] (`--allow-llm`).
    Llm,
}

/// What [`crate::Step::describe`] returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepInfo {
    /// Pipeline name, e.g. `inbox.list`.
    pub name: String,
    /// The step's version.
    pub version: String,
    /// One line of help.
    pub summary: String,
    /// Accepted flags.
    pub flags: Vec<Flag>,
    /// Required capabilities.
    pub capabilities: Vec<Capability>,
}

impl StepInfo {
    /// A step with no flags and no capabilities.
    pub fn new(name: &str, version: &str, summary: &str) -> StepInfo {
        StepInfo {
            name: name.to_string(),
            version: version.to_string(),
            summary: summary.to_string(),
            flags: Vec::new(),
            capabilities: Vec::new(),
        }
    }

    /// Add a flag.
    pub fn flag(mut self, flag: Flag) -> StepInfo {
        self.flags.push(flag);
        self
    }

    /// Require a directory at `guest_path` (e.g. `/mail`). The host refuses
    /// to run the step unless the run grants it, and gives the step no
    /// directory it did not ask for (and at most the access asked for).
    pub fn needs_dir(mut self, guest_path: &str, access: Access) -> StepInfo {
        self.capabilities
            .push(Capability::Dir(guest_path.to_string(), access));
        self
    }

    /// Require the environment variable `name`. As with directories, the
    /// step sees no variable it did not ask for.
    pub fn needs_env(mut self, name: &str) -> StepInfo {
        self.capabilities.push(Capability::Env(name.to_string()));
        self
    }

    /// Require gateway tool `name` (for [`crate::tools::invoke`]). The
    /// host refuses a call to any tool not listed here, and refuses to run
    /// the step unless the run grants it (`--allow-tool NAME`).
    pub fn needs_tool(mut self, name: &str) -> StepInfo {
        self.capabilities.push(Capability::Tool(name.to_string()));
        self
    }

    /// Ask for gateway tool `name` without requiring it (described as
    /// `tool("NAME?")`): the step runs whether or not the run grants the
    /// tool, and [`crate::tools::invoke`] returns the host's refusal as an
    /// error when it does not, so the step can carry on without it.
    pub fn may_use_tool(mut self, name: &str) -> StepInfo {
        self.capabilities.push(Capability::Tool(format!("{name}?")));
        self
    }

    /// Require model calls (for [`crate::llm::json`]); granted by `--allow-llm`.
    pub fn needs_llm(mut self) -> StepInfo {
        self.capabilities.push(Capability::Llm);
        self
    }

    pub(crate) fn into_wit(self) -> wit::StepInfo {
        wit::StepInfo {
            name: self.name,
            version: self.version,
            summary: self.summary,
            flags: self
                .flags
                .into_iter()
                .map(|f| wit::FlagSpec {
                    name: f.name,
                    kind: match f.kind {
                        FlagKind::Switch => wit::FlagKind::Switch,
                        FlagKind::Text => wit::FlagKind::Text,
                        FlagKind::Number => wit::FlagKind::Number,
                    },
                    default_value: f.default,
                    description: f.description,
                })
                .collect(),
            capabilities: self
                .capabilities
                .into_iter()
                .map(|c| match c {
                    Capability::Dir(path, access) => wit::Capability::Dir((
                        path,
                        match access {
                            Access::Read => wit::Access::Read,
                            Access::ReadWrite => wit::Access::ReadWrite,
                        },
                    )),
                    Capability::Env(name) => wit::Capability::Env(name),
                    Capability::Tool(name) => wit::Capability::Tool(name),
                    Capability::Llm => wit::Capability::Llm,
                })
                .collect(),
        }
    }
}
