"""inbox.categorize-py: the Python port of the Rust `inbox.categorize` step.

Adds `category` (finance, newsletter, meetings, security, notifications,
personal or work) to message items, by rules on sender, subject and body.
"""

from lobster_step import Flag, InvalidArgs, step

RULES = [
    ("finance", ["invoice", "receipt", "payment", "billing", "order #"]),
    ("newsletter", ["newsletter", "unsubscribe", "digest", "weekly"]),
    ("meetings", ["invitation:", "meeting", "calendar", "invite"]),
    ("security", ["security alert", "sign-in", "password", "2fa"]),
    ("notifications", ["build failed", "[ci]", "ci@", "notification"]),
]


def field(item, key):
    v = item.get(key)
    return v if isinstance(v, str) else ""


def categorize(item, work_domain):
    text = f"{field(item, 'from')} {field(item, 'subject')} {field(item, 'body')}".lower()
    for category, words in RULES:
        if any(w in text for w in words):
            return category
    if work_domain and work_domain in field(item, "from").lower():
        return "work"
    return "personal"


@step(
    "inbox.categorize-py",
    version="0.1.0",
    summary="Add a category to each message item (Python)",
    flags=[
        Flag.text("field", "Name of the field to set", default="category"),
        Flag.text("work-domain", "Sender domain that counts as work", default="@acme.example"),
    ],
)
def run(args, items):
    key = args.str("field", "category")
    domain = args.str("work-domain", "@acme.example").lower()
    out = []
    for item in items:
        if not isinstance(item, dict):
            raise InvalidArgs("inbox.categorize needs message objects")
        item[key] = categorize(item, domain)
        out.append(item)
    return out
