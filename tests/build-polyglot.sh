#!/usr/bin/env bash
# Build the Python and JavaScript/TypeScript steps the tests run:
#   examples/steps/inbox-categorize-{py,ts} -> examples/steps/target/polyglot/*.wasm
#   tests/guests-{py,js}/*                  -> tests/guests/target/polyglot/*.wasm
# (hostile-py also serves the broker tests: one Python component fewer.)
# Toolchains are pinned and local to the checkout: componentize-py (by the
# Python SDK, guest-sdk/python) in a venv under target/polyglot-tools/py, and
# componentize-qjs + esbuild (by guest-sdk/js/package-lock.json) in
# guest-sdk/js/node_modules. A component newer than its sources is kept
# (Python builds take ~20 s each).
#   bash tests/build-polyglot.sh           # toolchains (when missing), then components
#   bash tests/build-polyglot.sh --tools   # toolchains only (.ci/run fetches them
#                                          # while clippy runs; no CPU-heavy work)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tools="$root/target/polyglot-tools"
venv="$tools/py"

if [ ! -x "$venv/bin/componentize-py" ] || [ "$root/guest-sdk/python/pyproject.toml" -nt "$venv/.installed" ] \
   || [ -n "$(find "$root/guest-sdk/python/lobster_step" -newer "$venv/.installed" -print -quit 2>/dev/null)" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "$root/guest-sdk/python"
  touch "$venv/.installed"
fi
if [ ! -d "$root/guest-sdk/js/node_modules/componentize-qjs" ]; then
  (cd "$root/guest-sdk/js" && npm ci --no-audit --no-fund --loglevel=error)
fi
if [ "${1:-}" = --tools ]; then
  exit 0
fi

# build DIR: rebuild when a source (or the SDK) is newer than the component.
build() {
  local dir="$root/$1" lang wasm
  lang=$(sed -n 's/^lang = "\(.*\)"/\1/p' "$dir/lobster-step.toml")
  wasm="$dir/$(sed -n 's/^wasm = "\(.*\)"/\1/p' "$dir/lobster-step.toml")"
  local sdk="$root/guest-sdk/$([ "$lang" = python ] && echo python || echo js)"
  if [ -f "$wasm" ] && [ -z "$(find "$dir" "$sdk" -newer "$wasm" -type f \
       -not -path '*/node_modules/*' -not -path '*/.lobster-build/*' -not -path "$sdk/tests/*" -not -path "$sdk/test/*" \
       -not -name '*.pyc' -not -name '*.md' -print -quit)" ]; then
    echo "up to date: $1"
    return
  fi
  mkdir -p "$(dirname "$wasm")"
  case "$lang" in
    python) "$venv/bin/python" -m lobster_step build "$dir" >/dev/null ;;
    js) node "$root/guest-sdk/js/build.mjs" build "$dir" >/dev/null ;;
  esac
  echo "built: $1 ($(wc -c <"$wasm") bytes)"
}

# Two lanes, one per core: a Python build (~20 s) runs CPython single-threaded
# to snapshot it, so the two Python components build side by side, each
# followed by the (short) JS builds.
( build examples/steps/inbox-categorize-py; build examples/steps/inbox-categorize-ts ) &
lane=$!
build tests/guests-py/hostile-py
build tests/guests-js/hostile-js
build tests/guests-js/brokered-ts
wait "$lane"
