#!/usr/bin/env bash
# Per language (Rust, Python, TypeScript): the same step (inbox.categorize and
# its two ports) — component size, first compile, cached load, and a whole
# `lobster run` on 1 and 1,000 items, with fuel and without (`fuel = false`
# in a trusted policy: epoch deadline only). Whole processes, medians of
# BENCH_RUNS (default 5). Needs tests/build-guests.sh and
# tests/build-polyglot.sh first; LOBSTER_BIN defaults to target/release/lobster.
# The last column is the 1-minute load average before and after the row (the
# project's machine is shared: read every figure beside it).
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${LOBSTER_BIN:-target/release/lobster}
RUNS=${BENCH_RUNS:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 - "$work" <<'PY'
import json, sys
d = sys.argv[1]
def msg(i):
    return {"id": f"m{i}", "from": f"user{i}@example.com", "subject": f"Invoice {i}" if i % 3 == 0 else f"Hello {i}",
            "body": "Please find the weekly digest attached. " * 3}
for n in (1, 1000):
    json.dump([msg(i) for i in range(n)], open(f"{d}/items-{n}.json", "w"))
PY
printf 'trust = "trusted"\nfuel = false\n' >"$work/nofuel.toml"

now() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END {m=(NR+1)/2; printf "%.1f", (a[int(m)]+a[int(m+0.5)])/2/1e6}'; }
ms() { local s e; s=$(now); "$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; exit 1; }; e=$(now); echo $((e - s)); }

load() { cut -d' ' -f1 /proc/loadavg; }

echo "| language | component | first compile | cached load | run, 1 item | run, 1,000 items | run, 1 item, no fuel | run, 1,000 items, no fuel | load |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for spec in "Rust:examples/steps/target/wasm32-wasip2/release/inbox_categorize.wasm:inbox.categorize" \
            "Python:examples/steps/target/polyglot/inbox-categorize-py.wasm:inbox.categorize-py" \
            "TypeScript:examples/steps/target/polyglot/inbox-categorize-ts.wasm:inbox.categorize-ts"; do
  IFS=: read -r lang wasm name <<<"$spec"
  dir="$work/$lang"; mkdir -p "$dir"; cp "$wasm" "$dir/"
  size=$(wc -c <"$wasm")
  load0=$(load)
  export LOBSTER_STATE_DIR="$work/state-$lang" LOBSTER_WASM_CACHE_DIR="$work/cache-$lang"
  first=$(ms "$BIN" steps precompile --steps "$dir" | median)
  cached=$(for _ in $(seq "$RUNS"); do ms "$BIN" steps precompile --steps "$dir"; done | median)
  row="| $lang | $(awk -v b="$size" 'BEGIN{printf "%.2f MB", b/1e6}') | $(awk -v m="$first" 'BEGIN{printf "%.1f s", m/1000}') | $cached ms"
  for policy in "" "--policy $work/nofuel.toml"; do
    # Without fuel the compiled code differs (another cache entry): compile it untimed.
    # shellcheck disable=SC2086
    ms "$BIN" run --mode tool $policy --steps "$dir" "exec --json --shell 'cat $work/items-1.json' | $name" >/dev/null
    for n in 1 1000; do
      # shellcheck disable=SC2086
      t=$(for _ in $(seq "$RUNS"); do ms "$BIN" run --mode tool $policy --steps "$dir" \
            "exec --json --shell 'cat $work/items-$n.json' | $name"; done | median)
      row="$row | $t ms"
    done
  done
  echo "$row | $load0–$(load) |"
done
