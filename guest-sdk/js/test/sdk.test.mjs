// The SDK's logic under Node: argument rules, the run wrapper, exception
// mapping and the shipped WIT copy. The host import is replaced first.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { register } from "node:module";

// `lobster:step/host@0.2.0` and `broker` exist only inside a component: resolve them to a stand-in.
register("data:text/javascript," + encodeURIComponent(`
export async function resolve(spec, ctx, next) {
  if (spec.startsWith("lobster:step/")) return { url: "data:text/javascript,export default {log(){},stateGet(){return null},stateSet(){},invokeTool(){throw {tag:'err',val:'no broker'}},llmJson(){throw {tag:'err',val:'no broker'}}}", shortCircuit: true };
  return next(spec, ctx);
}`));

const sdk = await import("../index.js");
const { Args, defineStep, exportsFor, Failed, Flag, InvalidArgs, llm, llmCalls, tool, tools } = sdk;
const host = await import("../host.js");

test("greedy rules match the pipeline language", () => {
  const a = new Args(["pos1", "--apply", "--n", "5", "--s=--weird", "pos2", "--last", "--n", "6"]);
  assert.deepEqual(a.positional, ["pos1", "pos2"]);
  assert.equal(a.flag("apply"), true);
  assert.equal(a.number("n"), 6);
  assert.equal(a.str("s"), "--weird");
  assert.equal(a.switch("last"), true);
  assert.throws(() => new Args(["--n", "ten"]).number("n"), InvalidArgs);
});

test("exceptions map to step errors", () => {
  const step = defineStep({
    name: "x",
    flags: [Flag.number("n", "N", 3)],
    run(args, items) {
      if (args.switch("bad")) throw new InvalidArgs("no");
      if (args.switch("boom")) return items.map((i) => i.a.b);
      if (args.switch("str")) throw "plain";
      return items.map((i) => ({ ...i, n: args.number("n", 3) }));
    },
  });
  const e = exportsFor(step);
  assert.equal(e.run([], '[{"a":1}]'), '[{"a":1,"n":3}]');
  assert.deepEqual(e.describe().flags, [{ name: "n", kind: "number", defaultValue: "3", description: "N" }]);
  assert.throws(() => e.run(["--bad"], "[]"), (x) => x.tag === "invalid-args" && x.val === "no");
  assert.throws(() => e.run(["--boom"], "[{}]"), (x) => x.tag === "failed" && x.val.startsWith("TypeError"));
  assert.throws(() => e.run(["--str"], "[]"), (x) => x.tag === "failed" && x.val.includes("plain"));
  assert.throws(() => e.run([], "nope"), (x) => x.tag === "invalid-args");
});

test("the shipped world is the repository world", () => {
  const shipped = readFileSync(new URL("../wit/step.wit", import.meta.url), "utf8");
  const repo = readFileSync(new URL("../../../wit/v0.2/step.wit", import.meta.url), "utf8");
  assert.equal(shipped, repo, "copy wit/v0.2/step.wit into guest-sdk/js/wit/");
});

test("tools and models go through the broker as JSON; refusals are Failed", () => {
  const seen = [];
  host.setHostForTests({
    log() {},
    stateGet: () => null,
    stateSet() {},
    invokeTool(t, action, args) {
      seen.push([t, action, JSON.parse(args)]);
      if (t === "nope") throw { tag: "err", val: "refused: not granted" };
      return '[{"ok":true}]';
    },
    llmJson(req) {
      seen.push(JSON.parse(req));
      return '{"intent":"x"}';
    },
  });
  assert.deepEqual(tools.invoke("echo", { to: "x" }), [{ ok: true }]);
  assert.deepEqual(llm.ask("Classify", { s: 1 }, { type: "object" }), { intent: "x" });
  assert.deepEqual(seen[0], ["echo", "json", { to: "x" }]);
  assert.deepEqual(seen[1], { prompt: "Classify", input: { s: 1 }, schema: { type: "object" } });
  assert.throws(() => tools.invoke("nope"), (e) => e instanceof Failed && e.message === "refused: not granted");
  const step = defineStep({ name: "b", capabilities: [tool("echo"), llmCalls()], run: () => [] });
  assert.deepEqual(exportsFor(step).describe().capabilities, [{ tag: "tool", val: "echo" }, { tag: "llm" }]);
});
