//! Judging brokered calls: may this run (or this wasm step) call gateway tool
//! X or a model, may it choose its own endpoint, and is there budget left?
//!
//! Pure functions over the policy, the run's grants and the request; the
//! broker (`crate::broker`) asks them at the moment of every call, and the
//! plan-time checks ask the same functions early. A refusal names the excess.
//!
//! The rules:
//! - a built-in (`openclaw.invoke`, `llm.invoke`, …) may call tool X when the
//!   policy's `tools` list names it (no list: any tool when trusted, none when
//!   untrusted), and a model when `llm` allows it (unset: trusted yes,
//!   untrusted no); under `untrusted` it may not pick `--url`/`--token`;
//! - a wasm step may call tool X only when its `describe` asks for `tool(X)`,
//!   the run grants it (`--allow-tool X`), every `permissions:` block over the
//!   step lists it, and the policy allows it (the intersection); likewise a
//!   model with `llm`, `--allow-llm` and the policy;
//! - `[max] tool_calls`, `llm_calls`, `llm_tokens` bound a whole run.

use crate::kernel::{Policy, Trust};

/// What a run grants its wasm steps (`--allow-tool NAME`, `--allow-llm`),
/// already narrowed by any `permissions:` blocks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BrokerGrants {
    /// Tools steps may call.
    pub tools: Vec<String>,
    /// Whether steps may call a model.
    pub llm: bool,
}

impl BrokerGrants {
    /// The broker part of a run's sandbox grants.
    pub fn of(grants: &crate::kernel::Grants) -> BrokerGrants {
        BrokerGrants {
            tools: grants.tools.clone(),
            llm: grants.llm,
        }
    }

    /// Keep only what a `permissions:` block's `tools:` list also names.
    /// A block without the `llm` tool name takes the model grant away.
    pub fn narrow(&self, tools: &[String]) -> BrokerGrants {
        BrokerGrants {
            tools: self
                .tools
                .iter()
                .filter(|t| tools.contains(t))
                .cloned()
                .collect(),
            llm: self.llm && tools.iter().any(|t| t == LLM_PERMISSION),
        }
    }
}

/// The name a `permissions: tools:` list uses for model calls.
pub const LLM_PERMISSION: &str = "llm";

/// Who is calling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller<'a> {
    /// A built-in command of the pipeline.
    Builtin(&'a str),
    /// A wasm step, with the tools its `describe` asks for and whether it
    /// asks for `llm`.
    Step {
        /// The step's name.
        name: &'a str,
        /// `tool(NAME)` capabilities in its `describe`.
        described_tools: &'a [String],
        /// `llm` in its `describe`.
        described_llm: bool,
    },
}

/// Why a brokered call is refused; `Display` names the excess and the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The policy's `tools` list does not name the tool.
    #[error("policy refuses tool {tool:?}: it is not among the policy's tools [{allowed}]")]
    ToolNotInPolicy {
        /// The tool asked for.
        tool: String,
        /// The policy's list.
        allowed: String,
    },
    /// A step called a tool its `describe` did not ask for.
    #[error("step {step} called tool {tool:?}, which its describe does not ask for (add tool({tool}) to its capabilities)")]
    ToolNotDescribed {
        /// Step name.
        step: String,
        /// Tool name.
        tool: String,
    },
    /// The run did not grant the tool to steps.
    #[error("step {step} may not call tool {tool:?}: the run does not grant it (--allow-tool {tool}, and every permissions: tools: list over the step must name it)")]
    ToolNotGranted {
        /// Step name.
        step: String,
        /// Tool name.
        tool: String,
    },
    /// The policy forbids model calls.
    #[error("policy refuses model calls (llm = false, or unset under the untrusted policy)")]
    LlmNotInPolicy,
    /// A step called a model without asking for `llm` in its `describe`.
    #[error(
        "step {0} called a model, which its describe does not ask for (add the llm capability)"
    )]
    LlmNotDescribed(String),
    /// The run did not grant model calls to steps.
    #[error("step {0} may not call a model: the run does not grant it (--allow-llm, and every permissions: tools: list over the step must name llm)")]
    LlmNotGranted(String),
    /// Under `untrusted` a pipeline may not choose where calls go.
    #[error("{command} --{flag} is refused under the untrusted policy (the operator sets the gateway in the policy's [gateway] section)")]
    ChoosesEndpoint {
        /// The command.
        command: String,
        /// `url` or `token`.
        flag: &'static str,
    },
    /// A per-run budget is spent.
    #[error("this run has used its {what} budget ({cap}, the policy's [max] {key})")]
    Budget {
        /// What ran out.
        what: &'static str,
        /// The policy key.
        key: &'static str,
        /// The cap.
        cap: u64,
    },
}

/// May `caller` call gateway tool `tool`?
pub fn judge_tool(
    policy: &Policy,
    grants: &BrokerGrants,
    caller: Caller<'_>,
    tool: &str,
) -> Result<(), Refusal> {
    if let Caller::Step {
        name,
        described_tools,
        ..
    } = caller
    {
        if !described_tools.iter().any(|t| t == tool) {
            return Err(Refusal::ToolNotDescribed {
                step: name.into(),
                tool: tool.into(),
            });
        }
        if !grants.tools.iter().any(|t| t == tool) {
            return Err(Refusal::ToolNotGranted {
                step: name.into(),
                tool: tool.into(),
            });
        }
    }
    if !policy_allows_tool(policy, tool) {
        return Err(Refusal::ToolNotInPolicy {
            tool: tool.into(),
            allowed: policy.tools.as_deref().unwrap_or_default().join(", "),
        });
    }
    Ok(())
}

/// May `caller` call a model?
pub fn judge_llm(
    policy: &Policy,
    grants: &BrokerGrants,
    caller: Caller<'_>,
) -> Result<(), Refusal> {
    if let Caller::Step {
        name,
        described_llm,
        ..
    } = caller
    {
        if !described_llm {
            return Err(Refusal::LlmNotDescribed(name.into()));
        }
        if !grants.llm {
            return Err(Refusal::LlmNotGranted(name.into()));
        }
    }
    if !policy_allows_llm(policy) {
        return Err(Refusal::LlmNotInPolicy);
    }
    Ok(())
}

/// May a built-in pick its own `--url` / `--token`? Not under `untrusted`.
pub fn judge_endpoint_flags(
    policy: &Policy,
    command: &str,
    url: bool,
    token: bool,
) -> Result<(), Refusal> {
    if policy.trust == Trust::Untrusted {
        for (given, flag) in [(url, "url"), (token, "token")] {
            if given {
                return Err(Refusal::ChoosesEndpoint {
                    command: command.into(),
                    flag,
                });
            }
        }
    }
    Ok(())
}

/// Whether the policy's tool list (or its trust default) allows `tool`.
pub fn policy_allows_tool(policy: &Policy, tool: &str) -> bool {
    match (&policy.tools, policy.trust) {
        (Some(list), _) => list.iter().any(|t| t == tool),
        (None, Trust::Trusted) => true,
        (None, Trust::Untrusted) => false,
    }
}

/// Whether the policy (or its trust default) allows model calls.
pub fn policy_allows_llm(policy: &Policy) -> bool {
    policy.llm.unwrap_or(policy.trust == Trust::Trusted)
}

/// What a built-in stage will ask the broker for, in words, for approval
/// previews and `capabilities` (`None` for stages that call nothing).
pub fn brokered_call_text(stage: &crate::dsl::Stage) -> Option<String> {
    let arg = |k: &str| stage.args.str(k).filter(|v| !v.is_empty());
    match stage.name.as_str() {
        "openclaw.invoke" | "clawd.invoke" => {
            let tool = arg("tool").unwrap_or("?");
            let each = if stage.args.is_set("each") {
                ", once per item"
            } else {
                ""
            };
            Some(match arg("action") {
                Some(a) => format!("calls gateway tool {tool} (action {a}){each}"),
                None => format!("calls gateway tool {tool}{each}"),
            })
        }
        "llm.invoke" | "llm_task.invoke" => {
            let provider = arg("provider").unwrap_or(if stage.name == "llm_task.invoke" {
                "openclaw"
            } else {
                "the configured provider"
            });
            Some(match arg("model") {
                Some(m) => format!("calls a model ({provider}, model {m})"),
                None => format!("calls a model ({provider})"),
            })
        }
        _ => None,
    }
}

pub use crate::kernel::ledger::Spent;

/// Take one tool call from `spent`'s budget, or refuse.
pub fn charge_tool(spent: &mut Spent, policy: &Policy) -> Result<(), Refusal> {
    if let Some(cap) = policy.max.tool_calls.filter(|c| spent.tool_calls >= *c) {
        return Err(Refusal::Budget {
            what: "tool call",
            key: "tool_calls",
            cap,
        });
    }
    spent.tool_calls += 1;
    Ok(())
}

/// Take one model call from `spent`'s budget, or refuse (also when the
/// token budget is already spent).
pub fn charge_llm(spent: &mut Spent, policy: &Policy) -> Result<(), Refusal> {
    if let Some(cap) = policy.max.llm_calls.filter(|c| spent.llm_calls >= *c) {
        return Err(Refusal::Budget {
            what: "model call",
            key: "llm_calls",
            cap,
        });
    }
    if let Some(cap) = policy.max.llm_tokens.filter(|c| spent.llm_tokens >= *c) {
        return Err(Refusal::Budget {
            what: "model token",
            key: "llm_tokens",
            cap,
        });
    }
    spent.llm_calls += 1;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn policy(text: &str) -> Policy {
        Policy::parse(text, Path::new("p.toml")).unwrap()
    }

    #[test]
    fn builtins_follow_the_policy_list_and_trust_default() {
        let g = BrokerGrants::default();
        let b = Caller::Builtin("openclaw.invoke");
        assert!(judge_tool(&Policy::default(), &g, b, "message").is_ok());
        let untrusted = policy("trust = \"untrusted\"\n");
        let e = judge_tool(&untrusted, &g, b, "message").unwrap_err();
        assert_eq!(
            e.to_string(),
            "policy refuses tool \"message\": it is not among the policy's tools []"
        );
        let listed = policy("trust = \"untrusted\"\ntools = [\"message\"]\nllm = true\n");
        assert!(judge_tool(&listed, &g, b, "message").is_ok());
        assert!(judge_tool(&listed, &g, b, "cron").is_err());
        assert!(judge_llm(&listed, &g, b).is_ok());
        assert_eq!(judge_llm(&untrusted, &g, b), Err(Refusal::LlmNotInPolicy));
        assert!(judge_llm(&policy("llm = false\n"), &g, b).is_err());
        assert!(judge_endpoint_flags(&Policy::default(), "x", true, true).is_ok());
        assert_eq!(
            judge_endpoint_flags(&untrusted, "openclaw.invoke", false, true)
                .unwrap_err()
                .to_string(),
            "openclaw.invoke --token is refused under the untrusted policy (the operator sets the gateway in the policy's [gateway] section)"
        );
    }

    #[test]
    fn steps_need_describe_grant_and_policy() {
        let described = vec!["message".to_string()];
        let step = Caller::Step {
            name: "triage",
            described_tools: &described,
            described_llm: true,
        };
        let none = BrokerGrants::default();
        let granted = BrokerGrants {
            tools: vec!["message".into(), "cron".into()],
            llm: true,
        };
        let p = Policy::default();
        assert!(matches!(
            judge_tool(&p, &granted, step, "cron"),
            Err(Refusal::ToolNotDescribed { .. })
        ));
        assert!(matches!(
            judge_tool(&p, &none, step, "message"),
            Err(Refusal::ToolNotGranted { .. })
        ));
        assert!(judge_tool(&p, &granted, step, "message").is_ok());
        assert_eq!(
            judge_llm(&p, &none, step),
            Err(Refusal::LlmNotGranted("triage".into()))
        );
        assert!(judge_llm(&p, &granted, step).is_ok());
        let narrowed = granted.narrow(&["cron".into()]);
        assert_eq!(narrowed.tools, vec!["cron".to_string()]);
        assert!(!narrowed.llm);
        assert!(granted.narrow(&["llm".into()]).llm);
    }

    #[test]
    fn budgets_count_and_refuse() {
        let p = policy("[max]\ntool_calls = 1\nllm_calls = 2\nllm_tokens = 10\n");
        let mut s = Spent::default();
        charge_tool(&mut s, &p).unwrap();
        assert_eq!(
            charge_tool(&mut s, &p).unwrap_err().to_string(),
            "this run has used its tool call budget (1, the policy's [max] tool_calls)"
        );
        charge_llm(&mut s, &p).unwrap();
        s.add_tokens(10);
        assert!(matches!(
            charge_llm(&mut s, &p),
            Err(Refusal::Budget {
                key: "llm_tokens",
                ..
            })
        ));
        let mut s = Spent::default();
        charge_llm(&mut s, &p).unwrap();
        charge_llm(&mut s, &p).unwrap();
        assert!(matches!(
            charge_llm(&mut s, &p),
            Err(Refusal::Budget {
                key: "llm_calls",
                ..
            })
        ));
        assert!(charge_tool(&mut Spent::default(), &Policy::default()).is_ok());
    }
}
