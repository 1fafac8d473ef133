//! `openclaw.invoke` (alias `clawd.invoke`): call an OpenClaw gateway tool
//! through the run's broker, once, or once per input item with `--each`.
//!
//! The contract (URL and token sources, the loopback rule for tokens from the
//! environment, body, response mapping, error strings) is the reference's and
//! lives in [`crate::broker::gateway`]; the broker judges the call against the
//! policy, replays an answer this run already recorded, and bounds the
//! request by the run's deadline, cancellation and output cap.

use super::{collect, stream_of, Command, Example, FlagSpec, ItemStream, Output, Signature};
use crate::broker::gateway::{self, GatewayError, ToolCall};
use crate::broker::{body_cap, BrokerCalls, Kind};
use crate::dsl::{Args, FlagValue};
use crate::error::{Error, Result};
use crate::kernel::Context;
use crate::policy::broker::{judge_endpoint_flags, Caller};
use crate::value::Item;
use serde_json::{json, Value};

/// `openclaw.invoke --tool T --action A [--args-json J] [--each [--item-key K]]`.
pub struct OpenclawInvoke {
    name: &'static str,
}

/// The command under its current name.
pub const OPENCLAW: OpenclawInvoke = OpenclawInvoke {
    name: "openclaw.invoke",
};
/// The command under its old name.
pub const CLAWD: OpenclawInvoke = OpenclawInvoke {
    name: "clawd.invoke",
};

macro_rules! help {
    ($name:literal) => {
        concat!(
            $name, " — call a local OpenClaw tool endpoint\n\n",
            "Usage:\n",
            "  ", $name, " --tool message --action send --args-json '{\"provider\":\"telegram\",\"to\":\"...\",\"message\":\"...\"}'\n",
            "  ", $name, " --tool message --action send --args-json '{...}' --dry-run\n",
            "  ... | ", $name, " --tool message --action send --each --item-key message --args-json '{\"provider\":\"telegram\",\"to\":\"...\"}'\n\n",
            "Config:\n",
            "  - Uses OPENCLAW_URL env var by default (or pass --url).\n",
            "  - Backward compatible: CLAWD_URL is also supported.\n",
            "  - Optional Bearer token via OPENCLAW_TOKEN env var (or pass --token).\n",
            "  - Backward compatible: CLAWD_TOKEN is also supported.\n",
            "  - Optional attribution via --session-key <sessionKey>.\n\n",
            "Notes:\n",
            "  - This is a thin transport bridge. Lobster should not own OAuth/secrets.\n",
            "  - A token from the environment is sent only to localhost/127.0.0.1/::1,\n",
            "    and only to the origin of OPENCLAW_URL (an --url elsewhere gets no token).\n",
            "  - Calls go through the run's broker: the policy's tools list and [gateway] apply,\n",
            "    an answer recorded earlier in the run (or before a resume) is replayed,\n",
            "    and --timeout-ms / --max-stdout-bytes / LOBSTER_MAX_HTTP_RESPONSE_BYTES bound each call.\n",
        )
    };
}

const FLAGS: &[FlagSpec] = &[
    FlagSpec {
        name: "tool",
        value: Some("name"),
        kind: super::FlagType::Text,
        description: "Tool name (e.g. message, cron, github, etc.)",
    },
    FlagSpec {
        name: "action",
        value: Some("action"),
        kind: super::FlagType::Text,
        description: "Tool action",
    },
    FlagSpec {
        name: "args-json",
        value: Some("json"),
        kind: super::FlagType::Json,
        description: "JSON string of tool args",
    },
    FlagSpec {
        name: "url",
        value: Some("url"),
        kind: super::FlagType::Text,
        description: "OpenClaw control URL (or OPENCLAW_URL / CLAWD_URL)",
    },
    FlagSpec {
        name: "token",
        value: Some("token"),
        kind: super::FlagType::Text,
        description: "Bearer token (or OPENCLAW_TOKEN / CLAWD_TOKEN)",
    },
    FlagSpec {
        name: "session-key",
        value: Some("key"),
        kind: super::FlagType::Text,
        description: "Optional session key attribution (alias: --sessionKey)",
    },
    FlagSpec {
        name: "dry-run",
        value: None,
        kind: super::FlagType::Switch,
        description: "Dry run (alias: --dryRun)",
    },
    FlagSpec {
        name: "each",
        value: None,
        kind: super::FlagType::Switch,
        description: "Map each pipeline item into tool args",
    },
    FlagSpec {
        name: "item-key",
        value: Some("key"),
        kind: super::FlagType::Text,
        description: "Key to set from the pipeline item (default: item; alias: --itemKey)",
    },
];

const EXAMPLES: &[Example] = &[Example {
    description: "--each with no input items makes no call",
    pipeline: "openclaw.invoke --url http://127.0.0.1:9 --tool message --action send --each --args-json '{\"to\":\"x\"}'",
    input: "[]",
    output: "[]",
}];

/// What one invocation will send, from the arguments alone.
struct Plan {
    tool: String,
    action: String,
    args: Value,
    each: bool,
    item_key: String,
    session_key: Option<String>,
    dry_run: Option<bool>,
}

/// JavaScript `String(value)` of a flag (a bare flag is `"true"`).
fn text(v: Option<&FlagValue>) -> Option<String> {
    v.map(|f| f.as_str().to_string())
}

/// JavaScript `Boolean(value)` of a flag.
fn truthy(v: Option<&FlagValue>) -> bool {
    match v {
        None => false,
        Some(FlagValue::Bool(b)) => *b,
        Some(FlagValue::Str(s)) => !s.is_empty(),
    }
}

impl OpenclawInvoke {
    fn err(&self, e: GatewayError) -> Error {
        Error::runtime(e.message(self.name))
    }

    fn plan(&self, args: &Args) -> Result<Plan> {
        let tool = text(args.flag("tool")).filter(|s| !s.is_empty());
        let action = text(args.flag("action")).filter(|s| !s.is_empty());
        let (Some(tool), Some(action)) = (tool, action) else {
            return Err(Error::runtime(format!(
                "{} requires --tool and --action",
                self.name
            )));
        };
        let args_value = match args.flag("args-json").filter(|v| truthy(Some(v))) {
            None => json!({}),
            Some(v) => serde_json::from_str(v.as_str()).map_err(|_| {
                Error::runtime(format!("{} --args-json must be valid JSON", self.name))
            })?,
        };
        let each = truthy(args.flag("each"));
        if each && !args_value.is_object() {
            return Err(Error::runtime(format!(
                "{} --each requires --args-json to be an object",
                self.name
            )));
        }
        let dry_run = args.flag_any(&["dryRun", "dry-run"]).map(|v| match v {
            FlagValue::Bool(b) => *b,
            FlagValue::Str(s) => !s.is_empty(),
        });
        Ok(Plan {
            tool,
            action,
            args: args_value,
            each,
            item_key: text(args.flag_any(&["itemKey", "item-key"]))
                .unwrap_or_else(|| "item".into()),
            session_key: text(args.flag_any(&["sessionKey", "session-key"]))
                .filter(|s| !s.is_empty()),
            dry_run,
        })
    }

    /// The endpoint: `--url`/`--token` (refused under untrusted), else the
    /// run's configured gateway (policy `[gateway]`, else `OPENCLAW_URL` at
    /// start). The configured token goes only to the configured origin.
    fn endpoint(&self, args: &Args, ctx: &Context) -> Result<gateway::Endpoint> {
        let url_flag = text(args.flag("url"));
        let token_flag = text(args.flag("token"));
        judge_endpoint_flags(
            ctx.policy(),
            self.name,
            url_flag.is_some(),
            token_flag.is_some(),
        )
        .map_err(|r| Error::runtime(r.to_string()).with_hint("nothing was sent"))?;
        gateway::resolve(
            url_flag.as_deref(),
            token_flag.as_deref(),
            ctx.broker.endpoints(),
        )
        .map_err(|e| self.err(e))
    }
}

impl Command for OpenclawInvoke {
    fn signature(&self) -> Signature {
        Signature {
            name: self.name,
            description: "Call a local OpenClaw tool endpoint",
            flags: FLAGS,
            positional: None,
            side_effects: &["calls_clawd_tool"],
        }
    }

    fn flag_aliases(&self) -> &'static [&'static str] {
        &["dryRun", "itemKey", "sessionKey"]
    }

    fn help(&self) -> &'static str {
        if self.name == "clawd.invoke" {
            help!("clawd.invoke")
        } else {
            help!("openclaw.invoke")
        }
    }

    fn examples(&self) -> &'static [Example] {
        EXAMPLES
    }

    fn validate(&self, args: &Args) -> Result<()> {
        self.plan(args).map(|_| ())
    }

    fn preflight(&self, args: &Args, ctx: &Context) -> Result<()> {
        let plan = self.plan(args)?;
        self.endpoint(args, ctx)?;
        ctx.broker.judge_tool(
            ctx.policy(),
            &ctx.grants,
            Caller::Builtin(self.name),
            &plan.tool,
        )
    }

    fn run(&self, args: &Args, input: ItemStream, ctx: &Context) -> Result<Output> {
        let plan = self.plan(args)?;
        let endpoint = self.endpoint(args, ctx)?;
        ctx.broker.judge_tool(
            ctx.policy(),
            &ctx.grants,
            Caller::Builtin(self.name),
            &plan.tool,
        )?;
        let cap = body_cap(ctx.broker.endpoints(), ctx.limits.max_output_bytes)?;
        let invoke_once = |args_value: Value| -> Result<Vec<Item>> {
            ctx.cancel.check()?;
            let call = ToolCall {
                tool: plan.tool.clone(),
                action: Some(plan.action.clone()),
                args: args_value,
                session_key: plan.session_key.clone(),
                dry_run: plan.dry_run,
            };
            // The digest names the endpoint and the body, never the token.
            let request = json!({
                "url": format!("{}:{}{}", endpoint.url.host, endpoint.url.port, endpoint.url.path),
                "body": call.body(),
            });
            let answer =
                ctx.broker.call(
                    ctx.policy(),
                    Kind::Tool,
                    &request,
                    || match gateway::invoke(&endpoint, &call, &ctx.cancel, cap) {
                        Ok(items) => Ok((Value::Array(items), 0)),
                        Err(GatewayError::Cancelled) => {
                            ctx.cancel.check()?;
                            Err(Error::runtime(format!("{} cancelled", self.name)))
                        }
                        Err(e) => Err(self.err(e)),
                    },
                )?;
            Ok(match answer {
                Value::Array(items) => items,
                other => vec![other],
            })
        };
        let mut out = Vec::new();
        if !plan.each {
            // Drain the input first, as the reference does (upstream side effects run).
            collect(input)?;
            out = invoke_once(plan.args.clone())?;
        } else {
            for item in input {
                let mut args_value = plan.args.clone();
                if let Value::Object(m) = &mut args_value {
                    m.insert(plan.item_key.clone(), item?);
                }
                out.extend(invoke_once(args_value)?);
            }
        }
        Ok(Output::Items(stream_of(out)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn examples() {
        super::super::examples::check_examples(&OPENCLAW);
        super::super::examples::check_examples(&CLAWD);
    }

    fn args(flags: &[(&str, &str)]) -> Args {
        Args {
            positional: vec![],
            flags: flags
                .iter()
                .map(|(k, v)| {
                    let v = if *v == "!" {
                        FlagValue::Bool(true)
                    } else {
                        FlagValue::Str(v.to_string())
                    };
                    (k.to_string(), v)
                })
                .collect(),
        }
    }

    #[test]
    fn argument_errors_are_the_reference_strings() {
        let msg = |a: &[(&str, &str)]| OPENCLAW.validate(&args(a)).unwrap_err().to_string();
        assert_eq!(
            msg(&[("tool", "x")]),
            "openclaw.invoke requires --tool and --action"
        );
        assert_eq!(
            msg(&[("tool", "x"), ("action", "y"), ("args-json", "{")]),
            "openclaw.invoke --args-json must be valid JSON"
        );
        assert_eq!(
            msg(&[
                ("tool", "x"),
                ("action", "y"),
                ("args-json", "[1]"),
                ("each", "!")
            ]),
            "openclaw.invoke --each requires --args-json to be an object"
        );
        assert_eq!(
            CLAWD
                .validate(&args(&[("action", "y")]))
                .unwrap_err()
                .to_string(),
            "clawd.invoke requires --tool and --action"
        );
        let p = OPENCLAW
            .plan(&args(&[
                ("tool", "t"),
                ("action", "a"),
                ("itemKey", "m"),
                ("session-key", "s"),
                ("dry-run", "!"),
            ]))
            .unwrap();
        assert_eq!(
            (p.item_key.as_str(), p.session_key.as_deref(), p.dry_run),
            ("m", Some("s"), Some(true))
        );
        assert!(CLAWD
            .help()
            .starts_with("clawd.invoke — call a local OpenClaw tool endpoint\n"));
    }
}
