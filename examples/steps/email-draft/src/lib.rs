//! `email.draft`: ask a model, through the host's broker (`llm-json` of
//! `lobster:step@0.2.0`), to classify each message (`action`, `fyi` or
//! `ignore`) and draft a short reply. The host checks every answer against
//! the schema below (asking again once when it does not fit) and records it,
//! so a resumed run asks nothing twice. Needs `--allow-llm`. Each output
//! item is `{item: <the message>, draft: {category, reply}}`.
use lobster_guest::{json, llm, Args, Error, Flag, Step, StepInfo, Value};

struct Draft;

impl Step for Draft {
    fn describe() -> StepInfo {
        StepInfo::new(
            "email.draft",
            "0.1.0",
            "Classify each message and draft a reply with a model (brokered)",
        )
        .flag(
            Flag::text("prompt", "Instructions for the model").default(
                "Classify this email (action, fyi or ignore) and draft a short, polite reply.",
            ),
        )
        .needs_llm()
    }

    fn run(args: Args, items: Vec<Value>) -> Result<Vec<Value>, Error> {
        let prompt = args.str("prompt").unwrap_or(
            "Classify this email (action, fyi or ignore) and draft a short, polite reply.",
        );
        let schema = json!({
            "type": "object",
            "properties": {
                "category": {"enum": ["action", "fyi", "ignore"]},
                "reply": {"type": "string"}
            },
            "required": ["category", "reply"],
            "additionalProperties": false
        });
        items
            .iter()
            .map(|item| {
                let input = json!({
                    "from": item.get("from"),
                    "subject": item.get("subject"),
                    "body": item.get("body"),
                });
                let answer = llm::ask(prompt, &input, &schema)?;
                Ok(json!({
                    "item": item,
                    "draft": {"category": answer["category"], "reply": answer["reply"]}
                }))
            })
            .collect()
    }
}

lobster_guest::export_step!(Draft);
