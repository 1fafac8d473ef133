// lobster-step: the step author's API for JavaScript and TypeScript.
//
//   import { defineStep, Flag, InvalidArgs } from "lobster-step";
//   export default defineStep({
//     name: "greet", version: "0.1.0", summary: "Add a greeting",
//     flags: [Flag.text("name", "Who to greet", "world")],
//     run(args, items) { return items.map((item) => ({ greeting: `hello ${args.str("name", "world")}`, item })); },
//   });
//
// Gateway tools and models: `tools.invoke(NAME, args)` and `llm.ask(prompt,
// input, schema)`, with `tool(NAME)` / `llmCalls()` in `capabilities`.
//
// Build with `lobster step build DIR` (or `npx lobster-step-js build DIR`).
import * as host from "./host.js";

/** The arguments were wrong; the message says how to fix them. */
export class InvalidArgs extends Error {
  constructor(message) {
    super(message);
    this.name = "InvalidArgs";
  }
}

/** The step could not do its work. */
export class Failed extends Error {
  constructor(message) {
    super(message);
    this.name = "Failed";
  }
}

/** Flag declarations for `describe` (shown by `lobster help STEP`). */
export const Flag = {
  switch: (name, description) => ({ name, kind: "switch", description, default: null }),
  text: (name, description, dflt = null) => ({ name, kind: "text", description, default: dflt }),
  number: (name, description, dflt = null) => ({
    name,
    kind: "number",
    description,
    default: dflt === null ? null : String(dflt),
  }),
};

/** Capabilities the step needs; the run must grant them. */
export const readDir = (guestPath) => ({ kind: "dir", name: guestPath, access: "read" });
export const writeDir = (guestPath) => ({ kind: "dir", name: guestPath, access: "read-write" });
export const env = (name) => ({ kind: "env", name });
/** Calls to gateway tool `name` with `tools.invoke` (granted by `--allow-tool NAME`). */
export const tool = (name) => ({ kind: "tool", name });
/** Model calls with `llm.ask` / `llm.json` (granted by `--allow-llm`). */
export const llmCalls = () => ({ kind: "llm", name: "" });

/**
 * The stage's arguments, parsed with the pipeline language's greedy rules:
 * `--k=v` splits at the first `=`; `--k v` takes the next token unless it
 * starts with `--`; otherwise `--k` is `true`. Other tokens are positionals.
 */
export class Args {
  constructor(tokens) {
    this.positional = [];
    this.flags = new Map();
    for (let i = 0; i < tokens.length; i++) {
      const tok = tokens[i];
      if (tok.startsWith("--")) {
        const body = tok.slice(2);
        const eq = body.indexOf("=");
        if (eq >= 0) this.flags.set(body.slice(0, eq), body.slice(eq + 1));
        else if (i + 1 < tokens.length && !tokens[i + 1].startsWith("--")) this.flags.set(body, tokens[++i]);
        else this.flags.set(body, true);
      } else this.positional.push(tok);
    }
  }
  flag(name) {
    return this.flags.has(name) ? this.flags.get(name) : null;
  }
  str(name, dflt = null) {
    const v = this.flag(name);
    return v === null ? dflt : v === true ? "true" : v;
  }
  switch(name) {
    const v = this.flag(name);
    return v === true || v === "true";
  }
  number(name, dflt = null) {
    const v = this.flag(name);
    if (v === null) return dflt;
    const n = Number(v === true ? NaN : v);
    if (Number.isNaN(n)) throw new InvalidArgs(`--${name} must be a number, got ${JSON.stringify(v)}`);
    return n;
  }
}

/** Log lines go to the host's log, tagged with the step's name. */
export const log = {
  trace: (m) => host.log("trace", m),
  debug: (m) => host.log("debug", m),
  info: (m) => host.log("info", m),
  warn: (m) => host.log("warn", m),
  error: (m) => host.log("error", m),
};

/** Durable JSON values scoped to this step and the current run. */
export const state = {
  get(key) {
    const t = host.stateGet(key);
    return t === null ? null : JSON.parse(t);
  },
  set(key, value) {
    try {
      host.stateSet(key, JSON.stringify(value));
    } catch (e) {
      throw new Failed(`state.set ${JSON.stringify(key)}: ${errText(e)}`);
    }
  },
};

/**
 * Gateway tools through the host's broker (`lobster:step@0.2.0`). The step
 * must list `tool(NAME)` in its capabilities and the run must grant it; a
 * refused or failed call throws `Failed` with the host's reason (nothing was
 * sent when it was refused).
 */
export const tools = {
  invoke(name, args = {}, action = "json") {
    let text;
    try {
      text = host.invokeTool(name, action, JSON.stringify(args ?? {}));
    } catch (e) {
      throw new Failed(errText(e));
    }
    const answer = JSON.parse(text);
    return Array.isArray(answer) ? answer : [answer];
  },
};

/**
 * Model calls through the host's broker: `llm.ask(prompt, input, schema)`
 * returns the answer after it passed `schema`; `llm.json(request)` sends a
 * whole request object. The step must list `llmCalls()` and the run must
 * grant `--allow-llm`; a refusal throws `Failed`.
 */
export const llm = {
  json(request) {
    let text;
    try {
      text = host.llmJson(JSON.stringify(request));
    } catch (e) {
      throw new Failed(errText(e));
    }
    return JSON.parse(text);
  },
  ask(prompt, input = null, schema = undefined) {
    const request = { prompt, input };
    if (schema !== undefined) request.schema = schema;
    return llm.json(request);
  },
};

function errText(e) {
  if (e && typeof e === "object" && "message" in e) return String(e.message);
  if (e && typeof e === "object" && "val" in e) return String(e.val);
  return String(e);
}

/** Declare the module's step (export it as the module's default). */
export function defineStep(def) {
  if (!def || typeof def.name !== "string" || typeof def.run !== "function") {
    throw new TypeError("defineStep needs { name, run(args, items) }");
  }
  return {
    name: def.name,
    version: def.version ?? "0.1.0",
    summary: def.summary ?? def.name,
    flags: def.flags ?? [],
    capabilities: def.capabilities ?? [],
    run: def.run,
  };
}

/** Run a step's `run` on argv and JSON input text: what the component's
 * `run` export does, minus the error mapping. Returns JSON text. */
export function callStep(step, argv, input) {
  let items;
  try {
    items = input.trim() === "" ? [] : JSON.parse(input);
  } catch (e) {
    throw new InvalidArgs(`${step.name}: input is not JSON: ${errText(e)}`);
  }
  if (!Array.isArray(items)) items = [items];
  let out = step.run(new Args(argv), items);
  if (out === undefined || out === null) out = [];
  else if (!Array.isArray(out)) out = typeof out === "object" && Symbol.iterator in out ? [...out] : [out];
  return JSON.stringify(out);
}

/** The `describe` export's value for `step` (WIT record shapes). */
export function describeOf(step) {
  return {
    name: step.name,
    version: step.version,
    summary: step.summary,
    flags: step.flags.map((f) => ({
      name: f.name,
      kind: f.kind,
      defaultValue: f.default ?? null,
      description: f.description ?? "",
    })),
    capabilities: step.capabilities.map((c) => {
      if (c.kind === "dir") return { tag: "dir", val: [c.name, c.access] };
      if (c.kind === "tool") return { tag: "tool", val: c.name };
      if (c.kind === "llm") return { tag: "llm" };
      return { tag: "env", val: c.name };
    }),
  };
}

/** The text of `failed(...)` for an unexpected exception. */
export function failureMessage(e) {
  if (e instanceof Error) {
    const where = (e.stack ?? "").split("\n").find((l) => l.trim().startsWith("at "));
    return `${e.name}: ${e.message}${where ? ` (${where.trim()})` : ""}`;
  }
  return `uncaught exception: ${typeof e === "string" ? e : JSON.stringify(e)}`;
}

/** The component's exports for `step`: every exception becomes a
 * `step-error` (InvalidArgs → invalid-args, anything else → failed). */
export function exportsFor(step) {
  return {
    describe: () => describeOf(step),
    run(args, input) {
      try {
        return callStep(step, args, input);
      } catch (e) {
        if (e instanceof InvalidArgs) throw { tag: "invalid-args", val: e.message };
        if (e instanceof Failed) throw { tag: "failed", val: e.message };
        if (e instanceof RangeError && /memory|allocation/i.test(e.message))
          throw { tag: "failed", val: "out of memory (the step exceeded its memory limit)" };
        throw { tag: "failed", val: failureMessage(e) };
      }
    },
  };
}
