//! The typed form of a workflow file, produced by [`super::validate`].

use super::condition::Condition;
use super::load::{Pos, Source};
use crate::value::Item;
use serde_json::Map;

/// A validated workflow file.
#[derive(Debug, Clone)]
pub struct Workflow {
    pub source: Source,
    pub name: Option<String>,
    pub description: Option<String>,
    pub args: Vec<ArgDef>,
    /// Workflow-wide environment (values are templates).
    pub env: Vec<(String, String)>,
    pub cwd: Option<String>,
    pub steps: Vec<Step>,
    /// `permissions:`: the most the workflow's steps may use (see
    /// [`crate::workflow::policy`]); `None` when the file declares none.
    pub permissions: Option<Permissions>,
}

/// `permissions:`: directories, env names, host processes and limits a
/// workflow (or one of its steps) declares. A step gets the intersection of
/// the run's grants, the workflow's block, its own block and what its
/// component's `describe` asks for (see [`crate::workflow::policy`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Permissions {
    /// `read: [DIR…]`: directories steps may read (relative to the cwd).
    pub read: Vec<String>,
    /// `write: [DIR…]`: directories steps may read and write.
    pub write: Vec<String>,
    /// `env: [NAME…]`.
    pub env: Vec<String>,
    /// `tools: [NAME…]`: gateway tools (and `llm` for model calls) that
    /// steps may call through the host broker; narrows `--allow-tool` /
    /// `--allow-llm` like `read`/`write`/`env` narrow the other grants.
    pub tools: Vec<String>,
    /// `host_exec: false` refuses `run:` steps and `exec` stages; `true`
    /// asks for them; `None`: not said (allowed unless a policy or another
    /// block forbids them).
    pub host_exec: Option<bool>,
    /// `limits: {fuel, memory_bytes, timeout_ms, output_bytes}`.
    pub limits: crate::kernel::Maxima,
    /// Where the `permissions` key is, for messages.
    pub pos: Pos,
}

impl Permissions {
    /// Whether the block says `host_exec: false`.
    pub fn forbids_exec(&self) -> bool {
        self.host_exec == Some(false)
    }

    /// One line for plans: `read [a], write [b], env [], host_exec: false,
    /// limits: timeout_ms 2000` (keys left out of the block are left out).
    pub fn summary(&self) -> String {
        let list = |key: &str, l: &[String]| format!("{key} [{}]", l.join(", "));
        let mut parts = vec![
            list("read", &self.read),
            list("write", &self.write),
            list("env", &self.env),
        ];
        if let Some(b) = self.host_exec {
            parts.push(format!("host_exec: {b}"));
        }
        let limits: Vec<String> = self
            .limits
            .entries()
            .iter()
            .filter_map(|(k, v)| v.map(|v| format!("{k} {v}")))
            .collect();
        if !limits.is_empty() {
            parts.push(format!("limits: {}", limits.join(", ")));
        }
        parts.join(", ")
    }
}

/// The declared type of an arg.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgType {
    String,
    Number,
    Integer,
    Boolean,
    Object,
    Array,
}

impl ArgType {
    /// Parse a `type:` value.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "string" => ArgType::String,
            "number" => ArgType::Number,
            "integer" => ArgType::Integer,
            "boolean" => ArgType::Boolean,
            "object" => ArgType::Object,
            "array" => ArgType::Array,
            _ => return None,
        })
    }

    /// The name as written.
    pub fn name(self) -> &'static str {
        match self {
            ArgType::String => "string",
            ArgType::Number => "number",
            ArgType::Integer => "integer",
            ArgType::Boolean => "boolean",
            ArgType::Object => "object",
            ArgType::Array => "array",
        }
    }

    /// The name with its article: `an integer`, `a string`.
    pub fn with_article(self) -> &'static str {
        match self {
            ArgType::String => "a string",
            ArgType::Number => "a number",
            ArgType::Integer => "an integer",
            ArgType::Boolean => "a boolean",
            ArgType::Object => "an object",
            ArgType::Array => "an array",
        }
    }

    /// Whether `v` has this type.
    pub fn accepts(self, v: &Item) -> bool {
        match self {
            ArgType::String => v.is_string(),
            ArgType::Number => v.is_number(),
            ArgType::Integer => v
                .as_f64()
                .is_some_and(|f| f.fract() == 0.0 && f.is_finite()),
            ArgType::Boolean => v.is_boolean(),
            ArgType::Object => v.is_object(),
            ArgType::Array => v.is_array(),
        }
    }
}

/// One declared arg.
#[derive(Debug, Clone)]
pub struct ArgDef {
    pub name: String,
    pub default: Option<Item>,
    pub ty: Option<ArgType>,
    pub required: bool,
    pub description: Option<String>,
}

/// What a step does when it runs.
#[derive(Debug, Clone)]
pub enum Action {
    /// Only a gate (approval or input).
    None,
    /// `run`/`command`: a host shell line.
    Shell(String),
    /// `pipeline`: Lobster DSL, run in-process.
    Pipeline(String),
    /// `uses`/`with`: a WebAssembly component.
    Wasm {
        uses: String,
        with: Item,
        pos: Pos,
    },
    /// `workflow`/`workflow_args`: a sub-workflow.
    Workflow {
        path: String,
        args: Map<String, Item>,
        pos: Pos,
    },
    Parallel(Parallel),
    ForEach(ForEach),
}

impl Action {
    /// The dry-run/graph label: shell, pipeline, workflow, …
    pub fn kind(&self) -> &'static str {
        match self {
            Action::None => "no-op",
            Action::Shell(_) => "shell",
            Action::Pipeline(_) => "pipeline",
            Action::Wasm { .. } => "wasm",
            Action::Workflow { .. } => "workflow",
            Action::Parallel(_) => "parallel",
            Action::ForEach(_) => "for_each",
        }
    }
}

/// `on_error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnError {
    Stop,
    Continue,
    SkipRest,
}

impl OnError {
    /// The name as written.
    pub fn name(self) -> &'static str {
        match self {
            OnError::Stop => "stop",
            OnError::Continue => "continue",
            OnError::SkipRest => "skip_rest",
        }
    }
}

/// `retry`.
#[derive(Debug, Clone, PartialEq)]
pub struct Retry {
    /// Total attempts (≥ 1).
    pub max: u32,
    pub exponential: bool,
    pub delay_ms: u64,
    pub max_delay_ms: u64,
    pub jitter: bool,
}

impl Default for Retry {
    fn default() -> Self {
        Retry {
            max: 1,
            exponential: false,
            delay_ms: 1000,
            max_delay_ms: 30000,
            jitter: false,
        }
    }
}

/// `approval`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Approval {
    pub prompt: Option<String>,
    pub items: Option<Vec<Item>>,
    pub preview: Option<String>,
    pub initiated_by: Option<String>,
    pub required_approver: Option<String>,
    pub require_different_approver: Option<bool>,
}

/// `input`.
#[derive(Debug, Clone, PartialEq)]
pub struct InputSpec {
    pub prompt: String,
    pub schema: Item,
    pub defaults: Option<Item>,
}

/// `parallel`.
#[derive(Debug, Clone)]
pub struct Parallel {
    pub wait_any: bool,
    pub timeout_ms: Option<u64>,
    pub branches: Vec<Branch>,
}

/// One parallel branch (or one `for_each` sub-step).
#[derive(Debug, Clone)]
pub struct Branch {
    pub id: String,
    pub action: Action,
    pub when: Option<Condition>,
    pub env: Vec<(String, String)>,
    pub cwd: Option<String>,
    pub stdin: Option<Item>,
}

/// `for_each`.
#[derive(Debug, Clone)]
pub struct ForEach {
    pub expr: String,
    pub item_var: String,
    pub index_var: String,
    pub batch_size: u64,
    pub pause_ms: u64,
    pub steps: Vec<Branch>,
}

/// One top-level step.
#[derive(Debug, Clone)]
pub struct Step {
    pub id: String,
    pub pos: Pos,
    pub action: Action,
    pub stdin: Option<Item>,
    pub approval: Option<Approval>,
    pub input: Option<InputSpec>,
    pub when: Option<Condition>,
    pub env: Vec<(String, String)>,
    pub cwd: Option<String>,
    pub retry: Retry,
    pub timeout_ms: Option<u64>,
    pub on_error: OnError,
    /// The step's own `permissions:` (its branches and sub-steps share it);
    /// validation keeps it within the workflow's block.
    pub permissions: Option<Permissions>,
}
