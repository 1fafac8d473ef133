//! `lobster resume` argv (reference rules: one intent, exact messages).

use super::argv::parse_count;
use super::argv::{split_flag, take_value};
use crate::app::options::LimitArgs;
use crate::error::{Error, Result};
use crate::resume::{Decision, ResumeRequest, ResumeTarget};

/// A parsed `resume` invocation.
#[derive(Debug, Clone, PartialEq)]
pub struct ResumeArgs {
    pub request: ResumeRequest,
    pub limits: LimitArgs,
    pub cwd: Option<String>,
}

fn parse_bool(raw: &str) -> Option<bool> {
    match raw.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "y" => Some(true),
        "0" | "false" | "no" | "n" => Some(false),
        _ => None,
    }
}

/// Parse `resume`'s argv (without `resume`).
pub fn parse_resume_args(argv: &[String]) -> Result<ResumeArgs> {
    let mut token = None;
    let mut id = None;
    let mut decision: Option<String> = None;
    let mut response: Option<String> = None;
    let mut cancel = false;
    let mut limits = LimitArgs::default();
    let mut cwd = None;
    let mut approver: Option<String> = None;
    let mut i = 0;
    while i < argv.len() {
        let tok = argv[i].as_str();
        let (name, inline) = split_flag(tok);
        if name == "--cancel" {
            match inline {
                Some(v) => {
                    cancel = parse_bool(&v)
                        .ok_or_else(|| Error::parse("resume --cancel must be true or false"))?
                }
                None => match argv.get(i + 1).filter(|n| !n.starts_with("--")) {
                    Some(next) => {
                        cancel = parse_bool(next)
                            .ok_or_else(|| Error::parse("resume --cancel must be true or false"))?;
                        i += 1;
                    }
                    None => cancel = true,
                },
            }
            i += 1;
            continue;
        }
        let takes_value = matches!(
            name,
            "--token"
                | "--id"
                | "--approve"
                | "--decision"
                | "--response-json"
                | "--timeout-ms"
                | "--max-stdout-bytes"
                | "--cwd"
                | "--policy"
                | "--approver"
                | "--mode"
        );
        if !takes_value {
            if name.starts_with("--") {
                let known = super::subcommands::find("resume").map_or(&[][..], |s| s.flags);
                return Err(super::subcommands::unknown_flag("resume", name, known));
            }
            i += 1;
            continue;
        }
        i += 1;
        let value = take_value(inline, argv, &mut i).unwrap_or_default();
        match name {
            "--token" => token = Some(value),
            "--id" => id = Some(value),
            "--approve" | "--decision" => decision = Some(value),
            "--response-json" => response = Some(value),
            "--approver" => approver = Some(value),
            "--timeout-ms" => limits.timeout_ms = Some(parse_count("--timeout-ms", &value)?),
            "--max-stdout-bytes" => {
                limits.max_stdout_bytes = Some(parse_count("--max-stdout-bytes", &value)?)
            }
            "--policy" => limits.policy = Some(value),
            // Taken for symmetry with `run`; resume always answers with an envelope.
            "--mode" => {}
            _ => cwd = Some(value),
        }
    }
    let target = match (
        token.filter(|t| !t.is_empty()),
        id.filter(|i| !i.is_empty()),
    ) {
        (Some(t), _) => ResumeTarget::Token(t),
        (None, Some(i)) => ResumeTarget::ApprovalId(i),
        (None, None) => return Err(Error::parse("resume requires --token or --id")),
    };
    let decision_given = decision.as_deref().is_some_and(|d| !d.is_empty());
    let intents =
        usize::from(decision_given) + usize::from(response.is_some()) + usize::from(cancel);
    if intents > 1 {
        return Err(Error::parse(
            "resume accepts only one of --approve, --response-json, or --cancel",
        ));
    }
    if intents == 0 {
        return Err(Error::parse(
            "resume requires --approve yes|no, --response-json, or --cancel",
        ));
    }
    let decision = if cancel {
        Decision::Cancel
    } else if let Some(raw) = response {
        Decision::Respond(
            serde_json::from_str(&raw)
                .map_err(|_| Error::parse("resume --response-json must be valid JSON"))?,
        )
    } else {
        match decision.unwrap_or_default().to_ascii_lowercase().as_str() {
            "yes" | "y" => Decision::Approve(true),
            "no" | "n" => Decision::Approve(false),
            _ => return Err(Error::parse("resume --approve must be yes or no")),
        }
    };
    Ok(ResumeArgs {
        request: ResumeRequest {
            target,
            decision,
            decider: crate::resume::Decider::Operator(approver.filter(|a| !a.trim().is_empty())),
        },
        limits,
        cwd,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(words: &[&str]) -> Result<ResumeArgs> {
        parse_resume_args(&words.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    fn err(words: &[&str]) -> String {
        parse(words).unwrap_err().to_string()
    }

    #[test]
    fn reference_messages() {
        assert_eq!(
            err(&["--approve", "yes"]),
            "resume requires --token or --id"
        );
        assert_eq!(
            err(&["--token", "t"]),
            "resume requires --approve yes|no, --response-json, or --cancel"
        );
        assert_eq!(
            err(&["--token", "t", "--approve", "yes", "--cancel"]),
            "resume accepts only one of --approve, --response-json, or --cancel"
        );
        assert_eq!(
            err(&["--token", "t", "--approve", "maybe"]),
            "resume --approve must be yes or no"
        );
        assert_eq!(
            err(&["--token", "t", "--response-json", "{"]),
            "resume --response-json must be valid JSON"
        );
        assert_eq!(
            err(&["--token", "t", "--cancel=perhaps"]),
            "resume --cancel must be true or false"
        );
    }

    #[test]
    fn accepted_forms() {
        let a = parse(&["--id=abcd1234", "--decision=Y"]).unwrap();
        assert_eq!(
            a.request.target,
            ResumeTarget::ApprovalId("abcd1234".into())
        );
        assert_eq!(a.request.decision, Decision::Approve(true));
        assert_eq!(
            parse(&["--token", "t", "--cancel"])
                .unwrap()
                .request
                .decision,
            Decision::Cancel
        );
        assert_eq!(
            parse(&["--token", "t", "--cancel", "no", "--approve", "n"])
                .unwrap()
                .request
                .decision,
            Decision::Approve(false)
        );
    }
}
