// inbox.categorize-ts: the TypeScript port of the Rust `inbox.categorize` step.
// Adds `category` (finance, newsletter, meetings, security, notifications,
// personal or work) to message items, by rules on sender, subject and body.
import { defineStep, Flag, InvalidArgs } from "lobster-step";

type Message = { [key: string]: unknown };

const RULES: [string, string[]][] = [
  ["finance", ["invoice", "receipt", "payment", "billing", "order #"]],
  ["newsletter", ["newsletter", "unsubscribe", "digest", "weekly"]],
  ["meetings", ["invitation:", "meeting", "calendar", "invite"]],
  ["security", ["security alert", "sign-in", "password", "2fa"]],
  ["notifications", ["build failed", "[ci]", "ci@", "notification"]],
];

const field = (item: Message, key: string): string =>
  typeof item[key] === "string" ? (item[key] as string) : "";

function categorize(item: Message, workDomain: string): string {
  const text = `${field(item, "from")} ${field(item, "subject")} ${field(item, "body")}`.toLowerCase();
  for (const [category, words] of RULES) {
    if (words.some((w) => text.includes(w))) return category;
  }
  return workDomain && field(item, "from").toLowerCase().includes(workDomain) ? "work" : "personal";
}

export default defineStep<Message, Message>({
  name: "inbox.categorize-ts",
  version: "0.1.0",
  summary: "Add a category to each message item (TypeScript)",
  flags: [
    Flag.text("field", "Name of the field to set", "category"),
    Flag.text("work-domain", "Sender domain that counts as work", "@acme.example"),
  ],
  run(args, items) {
    const key = args.str("field", "category");
    const domain = args.str("work-domain", "@acme.example").toLowerCase();
    return items.map((item) => {
      if (item === null || typeof item !== "object" || Array.isArray(item)) {
        throw new InvalidArgs("inbox.categorize needs message objects");
      }
      return { ...item, [key]: categorize(item, domain) };
    });
  },
});
