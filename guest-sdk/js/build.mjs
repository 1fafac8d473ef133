#!/usr/bin/env node
// lobster-step-js build [DIR] [-o OUT]: build the JavaScript/TypeScript step
// project in DIR (default ".") into a `lobster:step` component.
//
// 1. esbuild bundles the project's entry (`entry` in lobster-step.toml;
//    TypeScript or JavaScript) with this SDK into ONE ES module; only the
//    host's `lobster:step/*` imports stay external. componentize-qjs refuses
//    modules resolved outside its --module-root, so bundling first means the
//    SDK can be installed any way npm likes (a `file:` link included).
// 2. componentize-qjs (pinned) turns the bundle into a component with the
//    synchronous QuickJS runtime (`--sync`: no component-model async needed)
//    and every WASI import stubbed (`--stub-wasi`: the step needs none; it
//    logs through the host).
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const COMPONENTIZE_QJS = "0.4.5";
const sdk = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);

function die(msg) {
  process.stderr.write(`lobster-step-js: ${msg}\n`);
  process.exit(1);
}

/** The `key = "value"` lines of lobster-step.toml (all this build needs). */
function manifest(dir) {
  const path = join(dir, "lobster-step.toml");
  if (!existsSync(path)) die(`${path}: missing (create the project with \`lobster step new NAME --lang js\`)`);
  const out = {};
  for (const line of readFileSync(path, "utf8").split("\n")) {
    const m = line.match(/^\s*([A-Za-z_-]+)\s*=\s*"([^"]*)"\s*(#.*)?$/);
    if (m) out[m[1]] = m[2];
  }
  return out;
}

export async function build(dirArg = ".", outArg = null) {
  const dir = resolve(dirArg);
  const m = manifest(dir);
  const entry = join(dir, m.entry ?? "step.ts");
  if (!existsSync(entry)) die(`${dir}/lobster-step.toml: entry ${JSON.stringify(m.entry)} does not exist`);
  const out = resolve(outArg ?? join(dir, m.wasm ?? "step.wasm"));
  const work = join(dir, ".lobster-build");
  mkdirSync(work, { recursive: true });
  mkdirSync(dirname(out), { recursive: true });
  const main = join(work, "main.js");
  writeFileSync(
    main,
    [
      'import "lobster-step/console.js";',
      `import step from ${JSON.stringify(entry)};`,
      'import { exportsFor } from "lobster-step";',
      "const e = exportsFor(step);",
      "export function describe() { return e.describe(); }",
      "export function run(args, input) { return e.run(args, input); }",
      "",
    ].join("\n"),
  );
  const esbuild = require("esbuild");
  const bundle = join(work, "bundle.js");
  await esbuild.build({
    entryPoints: [main],
    bundle: true,
    format: "esm",
    platform: "neutral",
    target: "es2022",
    outfile: bundle,
    external: ["lobster:step/*"],
    alias: { "lobster-step": sdk },
    logLevel: "warning",
  });
  const version = require("componentize-qjs/package.json").version;
  if (version !== COMPONENTIZE_QJS) die(`componentize-qjs ${version} is installed; this SDK is pinned to ${COMPONENTIZE_QJS}`);
  const cli = join(dirname(require.resolve("componentize-qjs/package.json")), "bin", "componentize-qjs");
  const args = [cli, "--wit", join(sdk, "wit"), "--world", "step", "--js", bundle, "--module-root", work,
    "--sync", "--stub-wasi", "-o", out];
  const r = spawnSync(process.execPath, args, { stdio: "inherit" });
  if (r.status !== 0) die(`componentize-qjs failed (exit ${r.status})`);
  return out;
}

if (process.argv[1] && realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url))) {
  const argv = process.argv.slice(2);
  if (argv[0] !== "build") die("usage: lobster-step-js build [DIR] [-o OUT]");
  let dir = ".";
  let out = null;
  for (let i = 1; i < argv.length; i++) {
    if (argv[i] === "-o" || argv[i] === "--output") out = argv[++i];
    else dir = argv[i];
  }
  process.stdout.write(`${await build(dir, out)}\n`);
}
