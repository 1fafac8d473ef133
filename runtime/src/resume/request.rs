//! What `lobster resume` (or a `call` with `action: resume`) asks for.

use crate::value::Item;

/// Which paused run.
#[derive(Debug, Clone, PartialEq)]
pub enum ResumeTarget {
    /// The full `resumeToken`.
    Token(String),
    /// The short `approvalId`.
    ApprovalId(String),
}

/// What to do with it.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Answer an approval gate.
    Approve(bool),
    /// Answer an input gate.
    Respond(Item),
    /// Drop the paused run.
    Cancel,
}

/// Who decides a gate, as the door that took the decision authenticated
/// them — never a name a request body or a step's environment chose in
/// `lobster serve`. Workflow gates with identity rules check
/// [`Decider::name`]; the decision's record says [`Decider::describe`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Decider {
    /// The operator's own command line (`lobster resume`, `lobster call`,
    /// a tool-mode resume), or the operator answering stdio `lobster mcp
    /// --approvals human`'s form: the name given with `--approver` (or the
    /// call's `approver`), else `LOBSTER_APPROVAL_APPROVED_BY` of the
    /// operator's environment.
    Operator(Option<String>),
    /// The operator's agent deciding with its own `lobster_resume` call
    /// over stdio `lobster mcp` (the human's yes relayed with `--approvals
    /// agent`; a no or a cancel in any mode): named as [`Decider::Operator`]
    /// is, and recorded as the agent's, so that a journal tells a relayed
    /// yes from one the human gave in the client's form.
    OperatorAgent(Option<String>),
    /// A `lobster serve` tenant's agent, known by its bearer token. It has
    /// no approver's name: a gate that requires one refuses it.
    TenantAgent(String),
    /// An approver of the tenant, signed in on the approval page: the name
    /// is their session's.
    Approver {
        /// The tenant.
        tenant: String,
        /// The approver's configured name.
        name: String,
    },
    /// A human who answered a `lobster serve` tenant's MCP client's "input
    /// required" request, where the tenant counts that as a human
    /// (`elicitation_is_human = true`). No name. (In stdio `lobster mcp
    /// --approvals human` the human is the operator's: [`Decider::Operator`].)
    Elicited,
    /// Nobody said (in-process callers and tests): the operator's
    /// environment may name them.
    #[default]
    Unnamed,
}

impl Decider {
    /// The approver's name that identity rules check and `approvedBy`
    /// records: the operator's given name (else `approved_by_env`, the
    /// operator's `LOBSTER_APPROVAL_APPROVED_BY`) or the approver's; none
    /// for a tenant's agent or an elicited answer.
    pub fn name(&self, approved_by_env: Option<&str>) -> Option<String> {
        let given = match self {
            Decider::Operator(n) | Decider::OperatorAgent(n) => n.as_deref().or(approved_by_env),
            Decider::Unnamed => approved_by_env,
            Decider::Approver { name, .. } => Some(name.as_str()),
            Decider::TenantAgent(_) | Decider::Elicited => None,
        };
        given
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    }

    /// Who decided, for a run's record: `approver alice`, `tenant acme's
    /// agent`, `a human through the MCP client`, `the operator`, `the
    /// operator's agent`.
    pub fn describe(&self) -> String {
        match self {
            Decider::Operator(Some(n)) => format!("the operator ({n})"),
            Decider::Operator(None) | Decider::Unnamed => "the operator".into(),
            Decider::OperatorAgent(Some(n)) => format!("the operator's agent ({n})"),
            Decider::OperatorAgent(None) => "the operator's agent".into(),
            Decider::TenantAgent(t) => format!("tenant {t}'s agent"),
            Decider::Approver { name, .. } => format!("approver {name}"),
            Decider::Elicited => "a human through the MCP client".into(),
        }
    }
}

/// A complete resume request.
#[derive(Debug, Clone, PartialEq)]
pub struct ResumeRequest {
    pub target: ResumeTarget,
    pub decision: Decision,
    /// Who decides; workflow gates with identity rules check its name.
    pub decider: Decider,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_from_who_authenticated() {
        let env = Some("from-env");
        assert_eq!(
            Decider::Operator(Some(" al ".into())).name(env).as_deref(),
            Some("al")
        );
        assert_eq!(
            Decider::Operator(None).name(env).as_deref(),
            Some("from-env")
        );
        assert_eq!(Decider::Unnamed.name(None), None);
        let alice = Decider::Approver {
            tenant: "acme".into(),
            name: "alice".into(),
        };
        assert_eq!(alice.name(env).as_deref(), Some("alice"));
        // A tenant's agent and an elicited answer never take a name from
        // the environment.
        assert_eq!(Decider::TenantAgent("acme".into()).name(env), None);
        assert_eq!(Decider::Elicited.name(env), None);
        assert_eq!(alice.describe(), "approver alice");
        // The operator's agent is named as the operator is, and recorded
        // as the agent.
        let agent = Decider::OperatorAgent(None);
        assert_eq!(agent.name(env).as_deref(), Some("from-env"));
        assert_eq!(agent.describe(), "the operator's agent");
        assert_eq!(
            Decider::OperatorAgent(Some("al".into())).describe(),
            "the operator's agent (al)"
        );
        assert_eq!(Decider::Operator(None).describe(), "the operator");
    }
}
