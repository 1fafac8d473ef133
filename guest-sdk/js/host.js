// The one place that talks to the host's imports (`lobster:step/host` and
// `lobster:step/broker` of `lobster:step@0.2.0`). Inside a component the
// imports exist; under plain Node (unit tests of a step's logic)
// `setHostForTests` supplies a stand-in for both.
import * as wit from "lobster:step/host@0.2.0";
import * as witBroker from "lobster:step/broker@0.2.0";

let impl = wit.default ?? wit;
let broker = witBroker.default ?? witBroker;

/** Replace the host and the broker (tests under Node only): one object with
 * `log`, `stateGet`, `stateSet`, `invokeTool` and `llmJson`. */
export function setHostForTests(h) {
  impl = h;
  broker = h;
}

export function log(level, message) {
  impl.log(level, String(message));
}

export function stateGet(key) {
  const v = impl.stateGet(key);
  return v === undefined ? null : v;
}

export function stateSet(key, value) {
  impl.stateSet(key, value);
}

/** `broker.invoke-tool`: the tool's result items as JSON text; throws the
 * host's refusal (a WIT `err`) otherwise. */
export function invokeTool(tool, action, argsJson) {
  return broker.invokeTool(tool, action ?? undefined, argsJson);
}

/** `broker.llm-json`: the model's schema-checked answer as JSON text. */
export function llmJson(requestJson) {
  return broker.llmJson(requestJson);
}
