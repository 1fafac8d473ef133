#!/usr/bin/env bash
# The new-user path as a test. A fresh home and working directory, and only
# commands README.md shows — each is looked up in the README, verbatim,
# before it runs — from the set-up to a first pipeline, a first gated run, a
# first Rust step and a first `lobster serve` approval. Nothing may be
# written that the README does not show: afterwards the checkout has no new
# or changed files (`git status`), and the working directory holds only the
# step project the README creates.
#
#   bash tests/new-user.sh      (tests/run.sh runs it; needs curl and jq,
#                                and 127.0.0.1:8787 free for the gateway)
#
# Cost after tests/run.sh has built everything: the demo's builds are
# no-ops, the Rust step builds once from cold (its own target directory, as
# for a user), the rest takes seconds.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
started=$(date +%s)

# The README with `\`-continued lines joined, to look commands up in.
readme=$(mktemp)
sed -e ':a' -e '/\\$/N; s/\\\n *//; ta' "$repo/README.md" >"$readme"

scratch=$(mktemp -d)
serve_pid=
cleanup() {
  [ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null || true
  rm -rf "$scratch" "$readme"
}
trap cleanup EXIT

# A fresh user: an empty home (lobster's state goes to ~/.lobster), no
# Lobster variables; the toolchain stays where it is installed.
export CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}" RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}"
export HOME="$scratch/home"
mkdir -p "$HOME" "$scratch/work"
for v in $(env | sed -n 's/^\(LOBSTER_[A-Z_]*\)=.*/\1/p') NO_COLOR; do unset "$v"; done

fail() {
  echo "new-user: $*" >&2
  exit 1
}
count="$scratch/commands"
: >"$count"
# Run one command the README shows (looked up verbatim first).
readme() {
  grep -qF -- "$1" "$readme" || fail "not in README.md: $1"
  echo "\$ $1" >&2
  echo >>"$count"
  eval "$1"
}
# The same, with a placeholder the README shows replaced by the real value.
readme_with() {
  grep -qF -- "$1" "$readme" || fail "not in README.md: $1"
  local line=${1//"$2"/"$3"}
  echo "\$ $line" >&2
  echo >>"$count"
  eval "$line"
}
expect() { # expect TEXT OUTPUT: OUTPUT contains TEXT
  case "$2" in
    *"$1"*) ;;
    *) fail "expected ${1@Q} in:
$2" ;;
  esac
}

cd "$repo"
before=$(git status --porcelain --untracked-files=all)

# Set-up: the demo, then lobster on the PATH.
out=$(readme 'bash examples/demo.sh' 2>&1)
expect 'Next, from' "$out"
readme 'export PATH="$PWD/target/debug:$PATH"'
[ "$(command -v lobster)" = "$repo/target/debug/lobster" ] || fail "lobster is not the checkout's"

# A first pipeline.
out=$(readme "lobster 'exec --json --shell \"cat examples/prs.json\" | where state==open | sort --key updatedAt --desc | head --n 5 | table'")
expect 'Add an approval page' "$out"

# A first gated run: it pauses, then the approver resumes it by its id.
out=$(readme "lobster run --mode tool examples/workflows/deploy.lobster --args-json '{\"env\":\"staging\"}'")
expect '"status": "needs_approval"' "$out"
id=$(printf '%s' "$out" | jq -r '.requiresApproval.approvalId')
# The README's id stands for the one the run printed.
out=$(readme_with 'lobster resume --id 3547db83 --approve yes --approver ann' 3547db83 "$id")
expect '"status": "ok"' "$out"

# A first Rust step, anywhere (here: a fresh directory).
cd "$scratch/work"
readme 'lobster step new greet --lang rust' >/dev/null
readme 'cd greet'
out=$(readme 'lobster step build')
expect 'world   lobster:step@0.2.0' "$out"
out=$(readme 'lobster step test')
expect 'passed, 0 failed' "$out"
readme "echo '[{\"id\":1}]' > items.json"
out=$(readme "lobster --steps target/wasm32-wasip2/release 'exec --json cat items.json | greet --name Ada'")
expect '"greeting": "hello Ada"' "$out"

# A first gateway approval: the shipped example, the README's requests.
cd "$repo"
readme 'export COMMUNITY_TOKEN=community-demo-token OPS_TOKEN=ops-demo-token'
readme 'lobster serve --config examples/serve/serve.toml &'
serve_pid=$!
for _ in $(seq 200); do
  curl -s -o /dev/null http://127.0.0.1:8787/healthz && break
  kill -0 "$serve_pid" 2>/dev/null || fail "lobster serve did not start (is 127.0.0.1:8787 taken?)"
  sleep 0.05
done
out=$(readme "curl -s -H \"Authorization: Bearer \$COMMUNITY_TOKEN\" -d '{\"workflow\": \"publish\", \"args\": {\"post\": 42}}' http://127.0.0.1:8787/v1/runs")
expect '"status":"needs_approval"' "$out"
out=$(readme 'curl -s -H "Authorization: Bearer $COMMUNITY_TOKEN" http://127.0.0.1:8787/v1/approvals')
expect '"workflow":"publish","step":"review"' "$out"
readme "url=\$(curl -s -H \"Authorization: Bearer \$COMMUNITY_TOKEN\" http://127.0.0.1:8787/v1/approvals | jq -r '.[0].approveUrl')"
# The README's cookie jar in /tmp stands for one in the scratch directory,
# so the walk leaves nothing behind (in the checkout or in /tmp).
readme_with 'curl -s -c /tmp/ann.cookies -d name=ann -d secret=ann-approver-token "$url/sign-in"' /tmp/ann.cookies "$scratch/ann.cookies" >/dev/null
out=$(readme_with 'curl -s -b /tmp/ann.cookies -d decision=approve "$url"' /tmp/ann.cookies "$scratch/ann.cookies")
expect '<h1>Approved</h1>' "$out"
expect '<b id="status">ok</b>' "$out"
out=$(readme "curl -s -H \"Authorization: Bearer \$COMMUNITY_TOKEN\" -d '{\"pipeline\": \"state.get published-post-42\"}' http://127.0.0.1:8787/v1/runs")
expect '"output":["hello readers of post 42! Post 42 is out."]' "$out"
readme 'kill %1'
wait "$serve_pid" 2>/dev/null || true
serve_pid=

# Nothing written that the README does not show.
after=$(git status --porcelain --untracked-files=all)
[ "$before" = "$after" ] || fail "the checkout changed:
$(diff <(echo "$before") <(echo "$after") || true)"
[ "$(ls -A "$scratch/work")" = "greet" ] || fail "unexpected files: $(ls -A "$scratch/work")"
echo "new-user path: ok ($(wc -l <"$count") README commands, $(($(date +%s) - started)) s)" >&2
