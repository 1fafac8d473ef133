// The one place that talks to the host's imports (`lobster:step/host`).
// Inside a component the import exists; under plain Node (unit tests of a
// step's logic) `setHostForTests` supplies a stand-in. Host interfaces added
// to the world later (e.g. a broker) get their wrapper here and nowhere else.
import * as wit from "lobster:step/host@0.1.0";

let impl = wit.default ?? wit;

/** Replace the host (tests under Node only). */
export function setHostForTests(h) {
  impl = h;
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
