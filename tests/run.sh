#!/usr/bin/env bash
# The whole test suite, from a fresh checkout: installs the wasm target,
# builds the guest steps (examples and hostile test guests), then runs every
# Rust test in the workspace (unit tests, examples of every command, and the
# integration tests that drive the real binary).
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$(date +%s)
stage() { echo "tests/run.sh: [$(($(date +%s) - t0)) s] $*"; }

stage "guests"
if [ -f tests/build-guests.sh ]; then
  bash tests/build-guests.sh
fi
# Python and JavaScript steps (pinned toolchains in a local venv and
# node_modules), and the SDKs' own tests.
stage "Python and JS steps, the SDKs' tests"
bash tests/build-polyglot.sh
target/polyglot-tools/py/bin/python -m unittest discover -s guest-sdk/python/tests
node --test guest-sdk/js/test/
# The PostgreSQL store tests need a database: when none is given in
# LOBSTER_TEST_PG_URL, start a throwaway cluster (tests/pg.sh: installs
# Debian's postgresql if missing; unix socket only) and stop it at the end.
# Without root (no apt, no runuser) the PostgreSQL tests skip loudly.
if [ -z "${LOBSTER_TEST_PG_URL:-}" ] && [ "$(id -u)" = 0 ]; then
  LOBSTER_TEST_PG_URL="$(bash tests/pg.sh start)"
  export LOBSTER_TEST_PG_URL
  trap 'bash tests/pg.sh stop' EXIT
fi
# The sandbox tests fail (instead of skipping) when a guest is missing.
stage "cargo test --workspace"
LOBSTER_REQUIRE_GUESTS=1 cargo test --workspace
# The README's new-user path, as a new user takes it: the demo, a first
# pipeline, a first gated run, a first Rust step and a first approval on the
# example gateway, only with commands the README shows (about a minute of
# CPU, mostly the Rust step's cold build).
stage "new-user.sh"
bash tests/new-user.sh
# The guest SDK is its own workspace (it builds for wasm32-wasip2 too).
stage "guest SDK"
cargo test --manifest-path guest-sdk/Cargo.toml
# `lobster mcp` with a client nobody here wrote: the Python MCP SDK, pinned,
# in a venv the script creates (python3 with venv is all it needs).
stage "Python MCP client"
bash tests/mcp/python-client.sh
# The browser harness of the `lobster serve` approval page (tests/serve/),
# in headless Chromium against a stand-in page; without /usr/bin/chromium
# its browser cases skip loudly (.ci/run installs Debian's chromium).
stage "browser"
browser_tools=$(bash tests/serve/setup-browser.sh)
NODE_PATH=$browser_tools node --test tests/serve/approve-in-browser.test.mjs
stage "done"
