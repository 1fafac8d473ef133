#!/usr/bin/env bash
# The main job on a bundled example: examples/workflows/inbox-triage.lobster
# triages a folder of sample mail with sandboxed WebAssembly steps, stops at
# an approval gate with a preview of the plan, then `resume --approve yes`
# applies the labels and moves.
#
# Everything happens in a scratch copy; examples/mail is never modified.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

# cargo's own progress lines show what is being built (a few minutes the
# first time on a small machine; instant afterwards). Only the two binaries
# the demo runs.
echo "==> build 1/2: the example steps (WebAssembly components, release)" >&2
rustup target add wasm32-wasip2 >/dev/null 2>&1 || true
cargo build --release --target wasm32-wasip2 --manifest-path "$root/examples/steps/Cargo.toml" \
  --target-dir "$root/examples/steps/target"
echo "==> build 2/2: lobster (debug: target/debug/lobster)" >&2
cargo build -p lobster --bin lobster --bin lobster-stubs --manifest-path "$root/Cargo.toml" \
  --target-dir "$root/target"
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

# Part 2: examples/workflows/email-triage-llm.lobster — a model classifies
# each message and drafts a reply, the gate shows the drafts, and the gateway
# sends the approved ones. Both services are loopback stand-ins
# (`lobster-stubs`, built with lobster) that follow the documented contracts.
echo "==> part 2: email triage with a model and the OpenClaw gateway (loopback stubs)" >&2
stubs="$root/target/debug/lobster-stubs"
"$stubs" gateway --token demo-gateway-token --log "$work/gateway-requests.jsonl" >"$work/gateway.url" &
gateway_pid=$!
"$stubs" model --key demo-model-key --log "$work/model-requests.jsonl" >"$work/model.url" &
model_pid=$!
trap 'kill "$gateway_pid" "$model_pid" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  [ -s "$work/gateway.url" ] && [ -s "$work/model.url" ] && break
  sleep 0.05
done
export OPENCLAW_URL="$(head -n1 "$work/gateway.url")" OPENCLAW_TOKEN=demo-gateway-token
export LOBSTER_LLM_PROVIDER=openai LOBSTER_LLM_BASE_URL="$(head -n1 "$work/model.url")/v1" LOBSTER_LLM_MODEL=stub-model
export LOBSTER_LLM_API_KEY=demo-model-key
triage="$root/examples/workflows/email-triage-llm.lobster"
# A fresh copy of the sample mail (part 1 filed the first one into folders).
mkdir -p "$work/triage" && cp -r "$root/examples/mail" "$work/triage/mail" && cd "$work/triage"
echo "==> 3. run: list (sandboxed, read-only ./mail), classify + draft (sandboxed step, model via the broker), stop at the gate" >&2
echo "    lobster run --mode tool --allow-read mail --allow-llm examples/workflows/email-triage-llm.lobster" >&2
"$lobster" run --mode tool --allow-read mail --allow-llm "$triage" >"$work/triage-paused.json"
sed -n '/"items"/,/"preview"/p' "$work/triage-paused.json" | grep -E '"(subject|category|reply)"' >&2 || true
token=$(sed -n 's/.*"resumeToken": "\([^"]*\)".*/\1/p' "$work/triage-paused.json")
[ -n "$token" ] || { echo "demo: the triage run did not stop at the gate" >&2; cat "$work/triage-paused.json" >&2; exit 1; }
echo "==> model calls so far: $(wc -l <"$work/model-requests.jsonl"); gateway calls: $(wc -l <"$work/gateway-requests.jsonl" 2>/dev/null || echo 0)" >&2
echo "==> 4. approve: the drafts are sent, one openclaw.invoke call per draft" >&2
"$lobster" resume --token "$token" --approve yes
echo "==> model calls: $(wc -l <"$work/model-requests.jsonl") (none repeated on resume); gateway calls: $(wc -l <"$work/gateway-requests.jsonl")" >&2
echo "==> done (scratch copy: $work)" >&2
cat >&2 <<EOF

Next, from $root:
  export PATH="$root/target/debug:\$PATH"   # lobster on your PATH (or: cargo install --locked --path runtime)
  lobster 'exec --json --shell "cat examples/prs.json" | where state==open | sort --key updatedAt --desc | table'
  lobster run --mode tool examples/workflows/deploy.lobster --args-json '{"env":"staging"}'   # a gate; then lobster resume --id ID --approve yes --approver ann
  lobster step new greet --lang rust          # your own step (README: "Your own steps")
  lobster serve --config examples/serve/serve.toml   # a gateway for a community (README: "Run a gateway")
  lobster help                                 # every command; lobster doctor checks the set-up
EOF
