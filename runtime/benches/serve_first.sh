#!/usr/bin/env bash
# The first requests of a fresh `lobster serve`: N clients at once POST the
# 5-step wasm workflow of serve.sh (case b) to a server just started with an
# empty state directory and artefact cache, so every one of them needs the
# two components compiled. Prints, per server, the median and max of the N
# whole requests (curl's time_total), how many came back 200 with "ok":true,
# the server's CPU for them, and one warm request after them. Rounds
# alternate between the binary directories given, a fresh server each time.
#
#   runtime/benches/serve_first.sh DIR...        # DIR holds lobster (release)
#   FIRST_N=32 FIRST_ROUNDS=4 runtime/benches/serve_first.sh /work/bench/tl target/release
#
# Needs curl and python3, and the example steps built (serve.sh builds them).
set -euo pipefail

script_dir=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd -- "$script_dir/../.." && pwd)
n=${FIRST_N:-32}
rounds=${FIRST_ROUNDS:-3}
(($# > 0)) || { echo "usage: serve_first.sh BIN_DIR..." >&2; exit 2; }
for d in "$@"; do
    [[ -x $d/lobster ]] || { echo "serve_first.sh: no $d/lobster" >&2; exit 1; }
done
command -v curl >/dev/null && command -v python3 >/dev/null ||
    { echo "serve_first.sh: needs curl and python3" >&2; exit 1; }
steps_out=$repo_root/examples/steps/target/wasm32-wasip2/release
for s in inbox_categorize email_triage; do
    [[ -f $steps_out/$s.wasm ]] ||
        { echo "serve_first.sh: no $steps_out/$s.wasm (run serve.sh or tests/build-guests.sh)" >&2; exit 1; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/lobster-serve-first.XXXXXX")
pid=''
trap '[[ -n $pid ]] && kill "$pid" 2>/dev/null; [[ -n ${FIRST_KEEP:-} ]] || rm -rf -- "$work"' EXIT
# shellcheck source=runtime/benches/bench5.sh
. "$script_dir/bench5.sh"
bench5_setup "$work" "$steps_out"
export LOBSTER_BENCH_TOKEN
LOBSTER_BENCH_TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
unset LOBSTER_WASM_CACHE_DIR
sleep 0.2 # the step files' times settle (file_memo), as on a deployed server

one_server() { # bin_dir label
    local bin=$1 label=$2 state=$work/state url i cpu warm
    rm -rf -- "$state" "$work/out"
    mkdir -p "$state" "$work/out"
    (cd "$work" && exec "$bin/lobster" serve --config "$work/serve.toml" >"$work/serve.out" 2>"$work/serve.err") &
    pid=$!
    for _ in $(seq 600); do
        grep -q 'http://' "$work/serve.out" 2>/dev/null && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    url=$(grep -o 'http://127.0.0.1:[0-9]*' "$work/serve.out" | head -1)
    [[ -n $url ]] || { echo "serve_first.sh: the server did not start: $(cat "$work/serve.err")" >&2; exit 1; }
    local post=(-s -X POST -H "Authorization: Bearer $LOBSTER_BENCH_TOKEN"
        -H 'content-type: application/json' --data '{"workflow":"bench5"}' "$url/v1/runs?wait=60000")
    local clients=()
    for i in $(seq "$n"); do
        curl "${post[@]}" -o "$work/out/r$i.json" -w '%{http_code} %{time_total}\n' >"$work/out/t$i" &
        clients+=($!)
    done
    wait "${clients[@]}"
    cpu=$(awk '{print ($14+$15)/100}' "/proc/$pid/stat")
    warm=$(curl "${post[@]}" -o /dev/null -w '%{time_total}')
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    pid=''
    python3 - "$work/out" "$n" "$label" "$cpu" "$warm" "$(cut -d' ' -f1 /proc/loadavg)" <<'PY'
import json, pathlib, statistics, sys
out, n, label, cpu, warm, load = sys.argv[1:]
times, ok = [], 0
for i in range(1, int(n) + 1):
    code, t = (pathlib.Path(out) / f"t{i}").read_text().split()
    times.append(float(t))
    try:
        body = json.loads((pathlib.Path(out) / f"r{i}.json").read_text())
    except ValueError:
        body = {}
    ok += code == "200" and body.get("ok") is True
print(f"| {label} | {load} | {statistics.median(times):.2f} s | {max(times):.2f} s | {ok}/{n} | {float(cpu):.2f} s | {float(warm) * 1000:.1f} ms |")
PY
}

echo "| binary | load | median | max | 200 and ok | server CPU | warm request after |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for r in $(seq "$rounds"); do
    for d in "$@"; do
        one_server "$d" "$d (round $r)"
    done
done
