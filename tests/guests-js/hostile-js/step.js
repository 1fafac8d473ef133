// hostile-js: misbehaves on request, so the sandbox tests can check that
// every limit holds for JavaScript steps too.
import { defineStep, Flag, state } from "lobster-step";

export default defineStep({
  name: "hostile-js",
  summary: "Misbehave as asked (--do loop|alloc|raise|throw-string|count|state|log)",
  flags: [Flag.text("do", "What to do"), Flag.number("n", "How many")],
  run(args, items) {
    const what = args.str("do", "count");
    if (what === "loop") for (;;) {}
    if (what === "alloc") {
      const hoard = [];
      for (;;) hoard.push(new Array(1 << 16).fill(hoard.length));
    }
    if (what === "raise") return items.map((i) => i.missing.deeper);
    if (what === "throw-string") throw "plain string";
    if (what === "state") {
      const n = (state.get("runs") ?? 0) + 1;
      state.set("runs", n);
      return [{ runs: n }];
    }
    if (what === "log") {
      console.log("hello from js", { n: 1 });
      return items;
    }
    const n = args.number("n", 0);
    const input = items.length ? items : Array.from({ length: n }, (_, id) => ({ id, subject: `message ${id}` }));
    return input.map((i) => ({ ...i, words: String(i.subject ?? "").split(/\s+/).filter(Boolean).length }));
  },
});
