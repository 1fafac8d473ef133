//! `inbox.categorize`: adds `category` (finance, newsletter, meetings,
//! security, notifications, personal or work) to message items, by rules on
//! sender, subject and body.
use lobster_guest::{Args, Error, Flag, Step, StepInfo, Value};
use mailkit::field;

struct Categorize;

const RULES: &[(&str, &[&str])] = &[
    (
        "finance",
        &["invoice", "receipt", "payment", "billing", "order #"],
    ),
    (
        "newsletter",
        &["newsletter", "unsubscribe", "digest", "weekly"],
    ),
    (
        "meetings",
        &["invitation:", "meeting", "calendar", "invite"],
    ),
    (
        "security",
        &["security alert", "sign-in", "password", "2fa"],
    ),
    (
        "notifications",
        &["build failed", "[ci]", "ci@", "notification"],
    ),
];

/// The category of one message item.
fn categorize(item: &Value, work_domain: &str) -> &'static str {
    let text = format!(
        "{} {} {}",
        field(item, "from"),
        field(item, "subject"),
        field(item, "body")
    )
    .to_lowercase();
    for (category, words) in RULES {
        if words.iter().any(|w| text.contains(w)) {
            return category;
        }
    }
    if !work_domain.is_empty() && field(item, "from").to_lowercase().contains(work_domain) {
        "work"
    } else {
        "personal"
    }
}

impl Step for Categorize {
    fn describe() -> StepInfo {
        StepInfo::new(
            "inbox.categorize",
            "0.1.0",
            "Add a category to each message item",
        )
        .flag(Flag::text("field", "Name of the field to set").default("category"))
        .flag(
            Flag::text("work-domain", "Sender domain that counts as work").default("@acme.example"),
        )
    }

    fn run(args: Args, items: Vec<Value>) -> Result<Vec<Value>, Error> {
        let key = args.str_or("field", "category").to_string();
        let domain = args.str_or("work-domain", "@acme.example").to_lowercase();
        items
            .into_iter()
            .map(|mut item| {
                let category = categorize(&item, &domain);
                let obj = item
                    .as_object_mut()
                    .ok_or_else(|| Error::invalid_args("inbox.categorize needs message objects"))?;
                obj.insert(key.clone(), Value::from(category));
                Ok(item)
            })
            .collect()
    }
}

lobster_guest::export_step!(Categorize);
