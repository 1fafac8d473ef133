//! The broker: the one place where a run reaches a gateway tool or a model.
//!
//! Every brokered call — from the `openclaw.invoke` / `llm.invoke` built-ins
//! or from a sandboxed step's `broker` import — goes through [`Broker`]:
//! 1. the caller is judged by [`crate::policy::broker`] (allowlists, grants,
//!    the untrusted rule on `--url`/`--token`) before anything is sent;
//! 2. a run claimed again after its resumer died matches the call, by
//!    position and request digest, against the calls that resumer
//!    journaled (`crate::kernel::recorded`): the same call is replayed, an
//!    unanswered or a different one stops the run; otherwise an answer
//!    already recorded for the same request digest in this run is replayed
//!    (a resumed run, a retried step or a re-run never asks twice);
//! 3. otherwise the per-run budget is charged and the call is made under the
//!    run's cancellation (deadline, signals) and size caps;
//! 4. the answer is recorded under the request's digest; the record travels
//!    in the run's resume state ([`Ledger`]).
//!
//! - [`http`]: the minimal HTTP/1.1 client.
//! - [`gateway`]: the `/tools/invoke` contract.
//! - [`llm`]: model providers (OpenClaw `llm-task`, generic adapters, OpenAI-compatible).
//! - [`tls`]: rustls client configuration (built-in roots plus the operator's CA file).

pub mod endpoints;
pub mod gateway;
pub mod http;
pub mod llm;
pub mod tls;

use crate::error::{Error, Result};
use crate::kernel::Policy;
use crate::policy::broker::{self as judge, BrokerGrants, Caller, Refusal};

use serde_json::Value;
use std::collections::BTreeMap;

pub use crate::kernel::ledger::{request_digest, Broker, Kind, Ledger};
use crate::kernel::recorded::Matched;

/// The broker's calls on the run's [`Broker`]: each judged by
/// [`crate::policy::broker`], answered from the ledger, or charged, asked and
/// recorded.
pub trait BrokerCalls {
    /// Where brokered calls may go and which secret each may carry (the
    /// endpoints the run was started with, [`Broker::with_config`]; none
    /// configured when it was started without).
    fn endpoints(&self) -> &endpoints::Endpoints;

    /// Judge a tool call by `caller` (nothing is sent on refusal).
    fn judge_tool(
        &self,
        policy: &Policy,
        grants: &crate::kernel::Grants,
        caller: Caller<'_>,
        tool: &str,
    ) -> Result<()>;

    /// Judge a model call by `caller`.
    fn judge_llm(
        &self,
        policy: &Policy,
        grants: &crate::kernel::Grants,
        caller: Caller<'_>,
    ) -> Result<()>;

    /// Answer `request` from the ledger, or charge the budget, call `ask`,
    /// and record what it returns. `ask` returns the answer and the model
    /// tokens it used (0 for tools).
    fn call(
        &self,
        policy: &Policy,
        kind: Kind,
        request: &Value,
        ask: impl FnOnce() -> Result<(Value, u64)>,
    ) -> Result<Value>;
}

impl BrokerCalls for Broker {
    fn endpoints(&self) -> &endpoints::Endpoints {
        static NONE: std::sync::OnceLock<endpoints::Endpoints> = std::sync::OnceLock::new();
        self.config::<endpoints::Endpoints>()
            .unwrap_or_else(|| NONE.get_or_init(endpoints::Endpoints::default))
    }

    fn judge_tool(
        &self,
        policy: &Policy,
        grants: &crate::kernel::Grants,
        caller: Caller<'_>,
        tool: &str,
    ) -> Result<()> {
        judge::judge_tool(policy, &BrokerGrants::of(grants), caller, tool).map_err(refused)
    }

    fn judge_llm(
        &self,
        policy: &Policy,
        grants: &crate::kernel::Grants,
        caller: Caller<'_>,
    ) -> Result<()> {
        judge::judge_llm(policy, &BrokerGrants::of(grants), caller).map_err(refused)
    }

    fn call(
        &self,
        policy: &Policy,
        kind: Kind,
        request: &Value,
        ask: impl FnOnce() -> Result<(Value, u64)>,
    ) -> Result<Value> {
        let digest = request_digest(kind, request);
        let journal = self.journal();
        // The gateway's request is `{url, body: {tool, …}}`.
        let name = ["tool", "model", "provider"]
            .iter()
            .find_map(|k| {
                request
                    .get(*k)
                    .or_else(|| request.get("body").and_then(|b| b.get(*k)))
                    .and_then(Value::as_str)
            })
            .unwrap_or_default();
        // Claimed again after a resumer died: its calls, matched by
        // position and digest, replay or stop the run before anything else.
        let from_record = match self.match_recorded(kind, name, &digest) {
            Matched::Refuse(e) => return Err(e),
            Matched::Replay { answer, sent } => Some((answer, sent)),
            Matched::Send => None,
        };
        {
            let mut ledger = self.lock();
            if let Some((answer, sent)) = &from_record {
                // The dead resume's request left: it counts against the
                // run's budget, as it did there.
                if *sent {
                    charge(kind, &mut ledger.spent, policy)?;
                }
                ledger
                    .answers
                    .entry(digest.clone())
                    .or_insert_with(|| answer.clone());
            }
            // An answer this run already has, or, in a replay (`lobster
            // replay`), the answer the replayed run recorded: the replay
            // never sends, so a call that run did not make is refused.
            let known = match (ledger.answers.get(&digest), journal.replaying()) {
                (Some(answer), _) => Some(answer.clone()),
                (None, Some(recorded)) => {
                    let Some(answer) = recorded.answers.get(&digest).cloned() else {
                        return Err(Error::runtime(format!(
                            "replay: run {} recorded no answer to this {} call (request {}); the replay sends nothing",
                            recorded.run_id,
                            kind.noun(),
                            &digest[..16]
                        ))
                        .with_hint("the replayed run asked something the run did not: its inputs or components differ"));
                    };
                    ledger.answers.insert(digest.clone(), answer.clone());
                    Some(answer)
                }
                (None, None) => None,
            };
            if let Some(answer) = known {
                drop(ledger);
                let _ = journal.append(crate::journal::Event::CallAnswer(
                    crate::journal::CallAnswer {
                        request_digest: digest,
                        answer: answer.clone(),
                        replayed: true,
                    },
                ));
                return Ok(answer);
            }
            charge(kind, &mut ledger.spent, policy)?;
        }
        // The intent is on disk before the request leaves: a run that dies
        // mid-call leaves "asked, no answer" in its journal, not nothing.
        journal
            .append(crate::journal::Event::CallIntent(
                crate::journal::CallIntent {
                    target: kind.noun().into(),
                    name: name.to_string(),
                    request_digest: digest.clone(),
                },
            ))
            .map_err(|e| {
                Error::runtime(format!("cannot record the call in the run's journal: {e}"))
                    .with_hint("nothing was sent")
            })?;
        let (answer, tokens) = ask()?;
        let _ = journal.append(crate::journal::Event::CallAnswer(
            crate::journal::CallAnswer {
                request_digest: digest.clone(),
                answer: answer.clone(),
                replayed: false,
            },
        ));
        let mut ledger = self.lock();
        ledger.spent.add_tokens(tokens);
        ledger.answers.insert(digest, answer.clone());
        Ok(answer)
    }
}

/// Count one `kind` call against the run's budget.
fn charge(kind: Kind, spent: &mut crate::kernel::Spent, policy: &Policy) -> Result<()> {
    match kind {
        Kind::Tool => judge::charge_tool(spent, policy),
        Kind::Llm => judge::charge_llm(spent, policy),
    }
    .map_err(refused)
}

fn refused(r: Refusal) -> Error {
    Error::runtime(r.to_string()).with_hint("nothing was sent")
}

/// `LOBSTER_MAX_HTTP_RESPONSE_BYTES`, if set (a positive integer).
pub fn http_limit_from_env(env: &BTreeMap<String, String>) -> Result<Option<usize>> {
    let Some(raw) = env.get("LOBSTER_MAX_HTTP_RESPONSE_BYTES").map(|s| s.trim()) else {
        return Ok(None);
    };
    if raw.is_empty() {
        return Ok(None);
    }
    match raw.parse::<u64>() {
        Ok(v) if raw.bytes().all(|b| b.is_ascii_digit()) && v > 0 && v < (1 << 53) => {
            Ok(Some(usize::try_from(v).unwrap_or(usize::MAX)))
        }
        _ => Err(Error::runtime(
            "LOBSTER_MAX_HTTP_RESPONSE_BYTES must be a positive safe integer (bytes)",
        )),
    }
}

/// The body cap of one brokered response: the operator's HTTP limit
/// (`LOBSTER_MAX_HTTP_RESPONSE_BYTES` at start) and the run's output cap
/// (`--max-stdout-bytes`), whichever is lower (a response counts against the
/// output cap like a child's stdout).
pub fn body_cap(
    endpoints: &endpoints::Endpoints,
    output_cap: Option<usize>,
) -> Result<Option<usize>> {
    let http = endpoints.http_limit()?;
    Ok(match (http, output_cap) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_recorded_answer_is_replayed_and_not_charged_again() {
        let broker = Broker::default();
        let policy =
            Policy::parse("[max]\ntool_calls = 1\n", std::path::Path::new("p.toml")).unwrap();
        let req = json!({"tool": "message", "args": {"a": 1}});
        let mut asked = 0;
        let a = broker
            .call(&policy, Kind::Tool, &req, || {
                asked += 1;
                Ok((json!("one"), 0))
            })
            .unwrap();
        let b = broker
            .call(&policy, Kind::Tool, &req, || {
                asked += 1;
                Ok((json!("two"), 0))
            })
            .unwrap();
        assert_eq!((a, b, asked), (json!("one"), json!("one"), 1));
        let other = json!({"tool": "message", "args": {"a": 2}});
        let e = broker
            .call(&policy, Kind::Tool, &other, || Ok((json!(0), 0)))
            .unwrap_err();
        assert!(e.to_string().contains("tool call budget (1"), "{e}");
        // A restored ledger replays too.
        let resumed = Broker::with_ledger(broker.ledger());
        assert_eq!(
            resumed.replay(&request_digest(Kind::Tool, &req)),
            Some(json!("one"))
        );
        assert_ne!(
            request_digest(Kind::Tool, &req),
            request_digest(Kind::Llm, &req)
        );
    }

    #[test]
    fn http_limit_parses_like_the_reference() {
        let env = |v: &str| {
            BTreeMap::from([("LOBSTER_MAX_HTTP_RESPONSE_BYTES".to_string(), v.to_string())])
        };
        assert_eq!(http_limit_from_env(&BTreeMap::new()).unwrap(), None);
        assert_eq!(http_limit_from_env(&env(" 10 ")).unwrap(), Some(10));
        for bad in ["0", "-1", "1.5", "1e3", "abc", "9007199254740992"] {
            assert_eq!(
                http_limit_from_env(&env(bad)).unwrap_err().to_string(),
                "LOBSTER_MAX_HTTP_RESPONSE_BYTES must be a positive safe integer (bytes)",
                "{bad}"
            );
        }
        let at = |v: &str| {
            endpoints::Endpoints::resolve(&Policy::default(), &env(v), endpoints::Sources::Process)
        };
        assert_eq!(body_cap(&at("10"), Some(5)).unwrap(), Some(5));
        assert_eq!(body_cap(&at("3"), Some(5)).unwrap(), Some(3));
        assert_eq!(body_cap(&at(""), Some(5)).unwrap(), Some(5));
        // A tenant's runs take no limit from the server's environment.
        let tenant = endpoints::Endpoints::resolve(
            &Policy::default(),
            &env("3"),
            endpoints::Sources::Tenant,
        );
        assert_eq!(body_cap(&tenant, None).unwrap(), None);
    }
}
