//! `email.triage`: a rule-based triage of message items into
//! `needs_reply`, `needs_action` or `fyi`, with the rules that fired.
use lobster_guest::{json, Args, Error, Flag, Step, StepInfo, Value};
use mailkit::field;

struct Triage;

const AUTOMATED: &[&str] = &[
    "no-reply",
    "noreply",
    "newsletter",
    "billing@",
    "orders@",
    "ci@",
];
const ACTION: &[&str] = &[
    "action required",
    "please sign",
    "sign the",
    "sign-off",
    "due on",
    "is due",
    "please pay",
    "accept or decline",
    "fix the",
    "deadline",
];
const QUESTION: &[&str] = &[
    "could you",
    "can you",
    "are you",
    "let me know",
    "would you",
    "?",
];
const FYI: &[&str] = &[
    "fyi",
    "no action is needed",
    "don't need to do anything",
    "unsubscribe",
];

/// `(label, reasons)` for one message item.
fn triage(item: &Value) -> (&'static str, Vec<String>) {
    let from = field(item, "from").to_lowercase();
    let subject = field(item, "subject").to_lowercase();
    let body = field(item, "body").to_lowercase();
    let text = format!("{subject}\n{body}");
    let mut reasons = Vec::new();
    let automated = AUTOMATED.iter().find(|w| from.contains(*w));
    if let Some(w) = automated {
        reasons.push(format!("automated sender ({w})"));
    }
    if let Some(w) = FYI.iter().find(|w| text.contains(*w)) {
        reasons.push(format!("informational ({w})"));
        if ACTION.iter().all(|a| !text.contains(a)) {
            return ("fyi", reasons);
        }
    }
    if let Some(w) = ACTION.iter().find(|w| text.contains(*w)) {
        reasons.push(format!("asks for an action ({w})"));
        if automated.is_some() || QUESTION.iter().all(|q| !text.contains(q)) {
            return ("needs_action", reasons);
        }
    }
    if automated.is_none() {
        if let Some(w) = QUESTION.iter().find(|w| text.contains(*w)) {
            reasons.push(format!("asks a question ({w})"));
            return ("needs_reply", reasons);
        }
    }
    if reasons.iter().any(|r| r.starts_with("asks for an action")) {
        return ("needs_action", reasons);
    }
    reasons.push("no question or request found".into());
    ("fyi", reasons)
}

impl Step for Triage {
    fn describe() -> StepInfo {
        StepInfo::new(
            "email.triage",
            "0.1.0",
            "Triage messages: needs_reply, needs_action or fyi",
        )
        .flag(Flag::text("only", "Keep only this triage label"))
    }

    fn run(args: Args, items: Vec<Value>) -> Result<Vec<Value>, Error> {
        let only = args.str("only");
        if let Some(o) = only {
            if !["needs_reply", "needs_action", "fyi"].contains(&o) {
                return Err(Error::invalid_args(format!(
                    "--only must be needs_reply, needs_action or fyi, got {o:?}"
                )));
            }
        }
        let mut out = Vec::new();
        for mut item in items {
            let (label, reasons) = triage(&item);
            if only.is_some_and(|o| o != label) {
                continue;
            }
            let obj = item
                .as_object_mut()
                .ok_or_else(|| Error::invalid_args("email.triage needs message objects"))?;
            obj.insert("triage".into(), json!(label));
            obj.insert("triage_reasons".into(), json!(reasons));
            out.push(item);
        }
        Ok(out)
    }
}

lobster_guest::export_step!(Triage);
