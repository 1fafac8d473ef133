// Importing this module first gives the step a `console` whose lines go to
// the host log (QuickJS defines none). The build's entry imports it before
// the step's own module, so top-level `console.log` works too.
import * as host from "./host.js";

function fmt(args) {
  return args
    .map((a) => {
      if (typeof a === "string") return a;
      if (a instanceof Error) return `${a.name}: ${a.message}`;
      try {
        return JSON.stringify(a);
      } catch {
        return String(a);
      }
    })
    .join(" ");
}

globalThis.console = {
  log: (...a) => host.log("info", fmt(a)),
  info: (...a) => host.log("info", fmt(a)),
  debug: (...a) => host.log("debug", fmt(a)),
  trace: (...a) => host.log("trace", fmt(a)),
  warn: (...a) => host.log("warn", fmt(a)),
  error: (...a) => host.log("error", fmt(a)),
};
