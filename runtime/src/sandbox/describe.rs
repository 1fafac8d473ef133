//! What a step component says about itself (`describe`), in host types.

use super::bindings;
use crate::kernel::{Access, Grants};
use serde::Serialize;

/// Type of a step flag's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FlagKind {
    /// Bare switch.
    Switch,
    /// Text.
    Text,
    /// Number.
    Number,
}

/// One flag a step accepts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StepFlag {
    /// Name without `--`.
    pub name: String,
    /// Value type.
    pub kind: FlagKind,
    /// Default as text.
    pub default: Option<String>,
    /// One line of help.
    pub description: String,
}

/// A capability a step needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Requirement {
    /// A directory at a guest path.
    Dir {
        /// Guest path, e.g. `/mail`.
        path: String,
        /// Needed access.
        access: Access,
    },
    /// An environment variable.
    Env {
        /// Variable name.
        name: String,
    },
    /// A gateway tool through the broker (`lobster:step@0.2.0`).
    Tool {
        /// Tool name.
        name: String,
        /// Described as `tool("NAME?")`: the step runs without the grant,
        /// and a call to the tool is refused at the moment of use (the
        /// guest gets the refusal as `err` and may carry on without it).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        optional: bool,
    },
    /// Model calls through the broker (`lobster:step@0.2.0`).
    Llm,
}

impl Requirement {
    /// Human text (`read access to /mail`) and the flag that grants it.
    pub fn describe(&self) -> (String, String) {
        match self {
            Requirement::Dir { path, access } => match access {
                Access::Read => (
                    format!("read access to {path}"),
                    format!("--allow-read DIR:{path}"),
                ),
                Access::ReadWrite => (
                    format!("write access to {path}"),
                    format!("--allow-write DIR:{path}"),
                ),
            },
            Requirement::Env { name } => (
                format!("the environment variable {name}"),
                format!("--allow-env {name}"),
            ),
            Requirement::Tool { name, optional } => (
                if *optional {
                    format!("the gateway tool {name} (optional: without the grant its calls are refused)")
                } else {
                    format!("the gateway tool {name}")
                },
                format!("--allow-tool {name}"),
            ),
            Requirement::Llm => ("model calls".to_string(), "--allow-llm".to_string()),
        }
    }

    /// A `tool(NAME)` capability as described: a trailing `?` marks an
    /// optional tool (`tool("message?")`).
    pub fn tool(described: String) -> Requirement {
        match described.strip_suffix('?') {
            Some(name) => Requirement::Tool {
                name: name.to_string(),
                optional: true,
            },
            None => Requirement::Tool {
                name: described,
                optional: false,
            },
        }
    }

    /// Whether `grants` satisfy this requirement (an optional tool always
    /// does: its calls are judged when made).
    pub fn granted_by(&self, grants: &Grants) -> bool {
        match self {
            Requirement::Dir { path, access } => {
                grants.dir(path).is_some_and(|d| d.access >= *access)
            }
            Requirement::Env { name } => grants.allows_env(name),
            Requirement::Tool { optional: true, .. } => true,
            Requirement::Tool { name, .. } => grants.tools.iter().any(|t| t == name),
            Requirement::Llm => grants.llm,
        }
    }
}

/// The result of a step's `describe`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StepMeta {
    /// Pipeline name, e.g. `inbox.list`.
    pub name: String,
    /// The step's version.
    pub version: String,
    /// One line of help.
    pub summary: String,
    /// Accepted flags.
    pub flags: Vec<StepFlag>,
    /// Required capabilities.
    pub requires: Vec<Requirement>,
}

/// `StepMeta` from either world's `step-info`: 0.1 and 0.2 generate distinct
/// types of the same shape, named by `$types` (the module holding `FlagKind`,
/// `Capability` and `Access`, used as `t`); 0.2's extra capabilities come
/// as extra match arms.
macro_rules! step_meta_from {
    ($info:ty, $($types:ident)::+ $(, $cap:pat => $req:expr)* $(,)?) => {
        impl From<$info> for StepMeta {
            fn from(i: $info) -> Self {
                use $($types)::+ as t;
                StepMeta {
                    name: i.name,
                    version: i.version,
                    summary: i.summary,
                    flags: i
                        .flags
                        .into_iter()
                        .map(|f| StepFlag {
                            name: f.name,
                            kind: match f.kind {
                                t::FlagKind::Switch => FlagKind::Switch,
                                t::FlagKind::Text => FlagKind::Text,
                                t::FlagKind::Number => FlagKind::Number,
                            },
                            default: f.default_value,
                            description: f.description,
                        })
                        .collect(),
                    requires: i
                        .capabilities
                        .into_iter()
                        .map(|c| match c {
                            t::Capability::Dir((path, access)) => Requirement::Dir {
                                path,
                                access: match access {
                                    t::Access::Read => Access::Read,
                                    t::Access::ReadWrite => Access::ReadWrite,
                                },
                            },
                            t::Capability::Env(name) => Requirement::Env { name },
                            $($cap => $req,)*
                        })
                        .collect(),
                }
            }
        }
    };
}

step_meta_from!(bindings::StepInfo, bindings);
step_meta_from!(
    bindings::v02::StepInfo,
    bindings::v02::lobster::step::types,
    t::Capability::Tool(name) => Requirement::tool(name),
    t::Capability::Llm => Requirement::Llm,
);

/// Longest name, version, flag name, default, guest path or variable name
/// a `describe` answer may hold (a path as long as Linux's `PATH_MAX`).
pub const MAX_DESCRIBE_FIELD_BYTES: usize = 4096;
/// Most text a whole `describe` answer may hold.
pub const MAX_DESCRIBE_BYTES: usize = 64 * 1024;

impl StepMeta {
    /// Refuse an answer with a field longer than [`MAX_DESCRIBE_FIELD_BYTES`]
    /// or more than [`MAX_DESCRIBE_BYTES`] of text in all: everything in it
    /// ends up in help, plans and error messages.
    pub fn check_size(&self) -> Result<(), String> {
        let mut fields: Vec<(&str, &str)> = vec![
            ("name", &self.name),
            ("version", &self.version),
            ("summary", &self.summary),
        ];
        for f in &self.flags {
            fields.push(("flag name", &f.name));
            fields.push(("flag description", &f.description));
            if let Some(d) = &f.default {
                fields.push(("flag default", d));
            }
        }
        for r in &self.requires {
            match r {
                Requirement::Dir { path, .. } => fields.push(("directory path", path)),
                Requirement::Env { name } => fields.push(("environment variable name", name)),
                Requirement::Tool { name, .. } => fields.push(("tool name", name)),
                Requirement::Llm => {}
            }
        }
        let mut total = 0usize;
        for (what, text) in fields {
            if text.len() > MAX_DESCRIBE_FIELD_BYTES {
                return Err(format!(
                    "describe returned a {what} of {} bytes (limit {MAX_DESCRIBE_FIELD_BYTES})",
                    text.len()
                ));
            }
            total += text.len();
        }
        if total > MAX_DESCRIBE_BYTES {
            return Err(format!(
                "describe returned {total} bytes of text (limit {MAX_DESCRIBE_BYTES})"
            ));
        }
        Ok(())
    }

    /// The tools its `describe` asks for.
    pub fn tools(&self) -> Vec<String> {
        self.requires
            .iter()
            .filter_map(|r| match r {
                Requirement::Tool { name, .. } => Some(name.clone()),
                _ => None,
            })
            .collect()
    }

    /// Whether its `describe` asks for model calls.
    pub fn wants_llm(&self) -> bool {
        self.requires.contains(&Requirement::Llm)
    }

    /// The help text `lobster help <step>` prints.
    pub fn help(&self, digest: &str) -> String {
        let mut out = format!(
            "{} — {} (wasm step, version {})\n\nUsage:\n  {}",
            self.name, self.summary, self.version, self.name
        );
        let kind = |k: FlagKind| match k {
            FlagKind::Switch => "switch",
            FlagKind::Text => "text",
            FlagKind::Number => "number",
        };
        for f in &self.flags {
            match f.kind {
                FlagKind::Switch => out.push_str(&format!(" [--{}]", f.name)),
                k => out.push_str(&format!(" [--{} <{}>]", f.name, kind(k))),
            }
        }
        out.push('\n');
        if !self.flags.is_empty() {
            out.push_str("\nFlags:\n");
            for f in &self.flags {
                let default = f
                    .default
                    .as_ref()
                    .map(|d| format!(" (default {d})"))
                    .unwrap_or_default();
                out.push_str(&format!(
                    "  --{} ({})  {}{default}\n",
                    f.name,
                    kind(f.kind),
                    f.description
                ));
            }
        }
        if !self.requires.is_empty() {
            out.push_str("\nNeeds:\n");
            for r in &self.requires {
                let (what, flag) = r.describe();
                out.push_str(&format!("  {what} ({flag})\n"));
            }
        }
        out.push_str(&format!("\nComponent: blake3 {digest}\n"));
        out
    }
}

#[cfg(test)]
mod optional_tool_tests {
    use super::*;

    #[test]
    fn a_trailing_question_mark_makes_a_tool_optional() {
        let required = Requirement::tool("message".into());
        let optional = Requirement::tool("message?".into());
        assert_eq!(
            optional,
            Requirement::Tool {
                name: "message".into(),
                optional: true
            }
        );
        let none = Grants::default();
        assert!(!required.granted_by(&none));
        assert!(
            optional.granted_by(&none),
            "an optional tool never blocks the run"
        );
        assert!(optional.describe().0.contains("optional"));
        assert_eq!(optional.describe().1, "--allow-tool message");
        let meta = StepMeta {
            name: "s".into(),
            version: "0".into(),
            summary: String::new(),
            flags: vec![],
            requires: vec![optional.clone()],
        };
        // Still a described tool: calls to it are judged, not refused as undescribed.
        assert_eq!(meta.tools(), vec!["message".to_string()]);
        assert_eq!(
            serde_json::to_value(&optional).unwrap(),
            serde_json::json!({"tool": {"name": "message", "optional": true}})
        );
        assert_eq!(
            serde_json::to_value(&required).unwrap(),
            serde_json::json!({"tool": {"name": "message"}})
        );
    }
}
