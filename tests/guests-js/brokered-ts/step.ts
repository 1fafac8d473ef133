// brokered-ts: calls gateway tools and models through the host's broker, so
// the tests can check that TypeScript steps get only described and granted
// calls. `describe` asks for tool `echo` and model calls; `--tool NAME` calls
// whatever it names (described or not, so the tests can watch the host
// refuse); `--llm` asks the model about every input item.
import { defineStep, Flag, type Json, llm, llmCalls, tool, tools } from "lobster-step";

const schema = {
  type: "object",
  properties: { intent: { type: "string" }, draft: { type: "string" } },
  required: ["intent", "draft"],
};

export default defineStep({
  name: "brokered-ts",
  summary: "Call gateway tools and models through the broker",
  flags: [
    Flag.text("tool", "Tool to call"),
    Flag.text("args", "Tool arguments (JSON object)", "{}"),
    Flag.switch("llm", "Classify every item with the model"),
  ],
  capabilities: [tool("echo"), llmCalls()],
  run(args, items: Json[]) {
    const out: Json[] = [];
    const name = args.str("tool");
    if (name) out.push(...tools.invoke(name, JSON.parse(args.str("args", "{}"))));
    if (args.switch("llm")) for (const item of items) out.push(llm.ask("Classify and draft a reply.", item, schema));
    return out;
  },
});
