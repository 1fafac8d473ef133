#!/usr/bin/env bash
# The main job on a bundled example: examples/workflows/inbox-triage.lobster
# triages a folder of sample mail with sandboxed WebAssembly steps, stops at
# an approval gate with a preview of the plan, then `resume --approve yes`
# applies the labels and moves.
#
# Everything happens in a scratch copy; examples/mail is never modified.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

echo "==> building lobster and the example steps (first time: a few minutes)" >&2
rustup target add wasm32-wasip2 >/dev/null 2>&1 || true
cargo build --quiet --release --target wasm32-wasip2 --manifest-path "$root/examples/steps/Cargo.toml" \
  --target-dir "$root/examples/steps/target"
cargo build --quiet -p lobster --manifest-path "$root/Cargo.toml" --target-dir "$root/target"
lobster="$root/target/debug/lobster"

work=$(mktemp -d)
cp -r "$root/examples/mail" "$work/mail"
export LOBSTER_STATE_DIR="$work/state"
export LOBSTER_STEP_PATH="$root/examples/steps/target/wasm32-wasip2/release"
cd "$work"

workflow="$root/examples/workflows/inbox-triage.lobster"

echo "==> 1. run (tool mode): the steps may only write to ./mail; the run stops at the gate" >&2
echo "    lobster run --mode tool --allow-write mail examples/workflows/inbox-triage.lobster" >&2
"$lobster" run --mode tool --allow-write mail "$workflow" | tee "$work/paused.json"
token=$(sed -n 's/.*"resumeToken": "\([^"]*\)".*/\1/p' "$work/paused.json")
[ -n "$token" ] || { echo "demo: the run did not stop at the gate" >&2; exit 1; }

echo "==> nothing was written yet:" >&2
(cd mail && find . -type f | sort | head -3) >&2

echo "==> 2. resume with approval: lobster resume --token <token> --approve yes" >&2
"$lobster" resume --token "$token" --approve yes

echo "==> the mail folder now:" >&2
(cd mail && find . -type f | sort) >&2
echo "==> done (scratch copy: $work)" >&2
