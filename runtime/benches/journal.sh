#!/usr/bin/env bash
# What the run journal costs (issue 25), journal on vs off
# (LOBSTER_JOURNAL=off, a switch for this benchmark only), measured in
# alternation in one sitting, plus the reading side:
#   - the 1M-item pipeline and the 10-step wasm workflow (whole processes,
#     timeit.py: median wall and cpu = user+sys of the process and children);
#   - `lobster verify` of a 10,000-event journal;
#   - `lobster runs list` under 10,000 runs on files and on PostgreSQL
#     (when LOBSTER_TEST_PG_URL is set);
#   - lobster serve (runtime/benches/serve.sh, 16 clients) when
#     JOURNAL_BENCH_SERVE=1 (about 2 minutes per round).
# Prints a Markdown table on stdout; progress on stderr.
#
#   JOURNAL_BENCH_ROUNDS=3     alternations (on, off, on, off, ...)
#   JOURNAL_BENCH_RUNS=5       timed runs per case per round
#   BENCH_BIN_DIR=DIR          take lobster from DIR instead of building it (release)
set -euo pipefail

script_dir=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd -- "$script_dir/../.." && pwd)
rounds=${JOURNAL_BENCH_ROUNDS:-3}
runs=${JOURNAL_BENCH_RUNS:-5}
target_dir=${CARGO_TARGET_DIR:-$repo_root/target}
data_dir=$target_dir/bench-data
log() { printf '%s\n' "$*" >&2; }

if [[ -n ${BENCH_BIN_DIR:-} ]]; then
    bin=$BENCH_BIN_DIR/lobster
else
    log "building lobster (release)"
    cargo build --release -p lobster --bins --manifest-path "$repo_root/Cargo.toml" >&2
    bin=$target_dir/release/lobster
fi
[[ -x $bin ]] || { log "no lobster at $bin"; exit 1; }

mkdir -p "$data_dir"
if [[ ! -s $data_dir/big1m.json ]]; then
    log "generating $data_dir/big1m.json"
    python3 - "$data_dir/big1m.json" <<'PY'
import sys
tags = ["alpha", "beta", "gamma", "delta", "eps"]
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write("[")
    n, chunk = 1000000, 10000
    for start in range(0, n, chunk):
        if start:
            f.write(",")
        f.write(",".join('{"id":%d,"name":"item-%07d","score":%d,"tag":"%s"}'
                         % (i, i, (i * 7919 + 13) % 101, tags[(i * 31 + 7) % 5])
                         for i in range(start, min(n, start + chunk))))
    f.write("]\n")
PY
    mv "$data_dir/big1m.json.tmp" "$data_dir/big1m.json"
fi
noop=$repo_root/tests/guests/target/wasm32-wasip2/release/noop.wasm
[[ -f $noop ]] || { log "no $noop: run tests/build-guests.sh"; exit 1; }
{
    printf 'name: bench-10-wasm-steps\nsteps:\n'
    printf '  - id: s1\n    uses: %s\n    stdin: [1, 2, 3]\n' "$noop"
    for i in 2 3 4 5 6 7 8 9 10; do
        # shellcheck disable=SC2016 # a workflow step reference
        printf '  - id: s%d\n    uses: %s\n    stdin: $s%d.json\n' "$i" "$noop" $((i - 1))
    done
} >"$data_dir/wf10-wasm.lobster"

tmp=$(mktemp -d)
trap 'rm -rf -- "$tmp"' EXIT
items="exec --json --shell 'cat $data_dir/big1m.json' | where score>50 | sort --key score | head --n 10 | json"

# time CASE MODE: one timeit line for CASE with the journal MODE (on|off).
time_case() {
    local case=$1 mode=$2 state=$tmp/state-$2
    mkdir -p "$state"
    local -a env=(--env "LOBSTER_STATE_DIR=$state")
    [[ $mode == off ]] && env+=(--env LOBSTER_JOURNAL=off)
    case $case in
        items1m) python3 "$script_dir/timeit.py" --runs "$runs" --warmup 1 "${env[@]}" -- "$bin" "$items" ;;
        wf10wasm) python3 "$script_dir/timeit.py" --runs "$runs" --warmup 1 "${env[@]}" -- "$bin" run "$data_dir/wf10-wasm.lobster" ;;
    esac
}

declare -A wall=() cpu=()
for r in $(seq "$rounds"); do
    for case in items1m wf10wasm; do
        for mode in on off; do
            line=$(time_case "$case" "$mode")
            log "round $r $case journal $mode: $line"
            IFS=$'\t' read -r status w c _ <<<"$line"
            [[ $status == ok ]] || { log "failed: $line"; exit 1; }
            wall[$case|$mode]+="$w "
            cpu[$case|$mode]+="$c "
        done
    done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%+.1f %%", (a/b - 1) * 100}'; }

echo "| case | journal on: wall / cpu ms | journal off: wall / cpu ms | on vs off (wall) | on vs off (cpu) |"
echo "|---|---:|---:|---:|---:|"
for case in items1m wf10wasm; do
    won=$(median <<<"${wall[$case|on]}") woff=$(median <<<"${wall[$case|off]}")
    con=$(median <<<"${cpu[$case|on]}") coff=$(median <<<"${cpu[$case|off]}")
    label=$([[ $case == items1m ]] && echo "1M-item pipeline" || echo "10-step wasm workflow")
    echo "| $label | $won / $con | $woff / $coff | $(ratio "$won" "$woff") | $(ratio "$con" "$coff") |"
done

# verify: a 10,000-event journal (a pipeline of 9,999 stages: one step
# event each, plus the run's start and end).
stages=$(python3 -c 'print(" | ".join(["commands.list"] + ["head --n 1"] * 9998))')
vstate=$tmp/verify
LOBSTER_STATE_DIR=$vstate "$bin" run --mode tool "$stages" >/dev/null
vid=$(LOBSTER_STATE_DIR=$vstate "$bin" runs list --json | python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["runId"])')
vfile=$tmp/verify.jsonl
LOBSTER_STATE_DIR=$vstate "$bin" runs export "$vid" >"$vfile"
events=$(wc -l <"$vfile")
vline=$(python3 "$script_dir/timeit.py" --runs "$runs" --warmup 1 -- "$bin" verify "$vfile")
IFS=$'\t' read -r _ vw vc _ <<<"$vline"
echo
echo "| reading | figure |"
echo "|---|---:|"
echo "| lobster verify, $events-event journal ($(du -h "$vfile" | cut -f1)) | $vw ms wall, $vc ms cpu |"

# runs list under 10,000 runs: files (the index as runs leave it) ...
lstate=$tmp/list
mkdir -p "$lstate/journal"
python3 - "$lstate/journal/index.log" <<'PY'
import json, sys, random
with open(sys.argv[1], "w") as f:
    for i in range(10000):
        rid = "%08x%024x" % (1764000000 + i, random.getrandbits(96))
        at = "2026-12-01T%02d:%02d:%02d.000Z" % (i // 3600 % 24, i // 60 % 60, i % 60)
        head = "%064x" % random.getrandbits(256)
        f.write(json.dumps({"run_id": rid, "events": 1, "head": head,
                            "started": ["commands.list | head", "serve", at], "status": "running"}) + "\n")
        f.write(json.dumps({"run_id": rid, "events": 4, "head": head, "status": "ok",
                            "clear_gate": True, "ended_at": at}) + "\n")
PY
lline=$(python3 "$script_dir/timeit.py" --runs "$runs" --warmup 1 --env "LOBSTER_STATE_DIR=$lstate" -- "$bin" runs list --limit 50)
IFS=$'\t' read -r _ lw lc _ <<<"$lline"
echo "| lobster runs list --limit 50, 10,000 runs, files | $lw ms wall, $lc ms cpu |"
lline=$(python3 "$script_dir/timeit.py" --runs "$runs" --warmup 1 --env "LOBSTER_STATE_DIR=$lstate" -- "$bin" runs list --json)
IFS=$'\t' read -r _ lw lc _ <<<"$lline"
echo "| lobster runs list --json (all 10,000), files | $lw ms wall, $lc ms cpu |"
# ... and PostgreSQL.
if [[ -n ${LOBSTER_TEST_PG_URL:-} ]]; then
    tenant="bench$RANDOM"
    LOBSTER_STORE=$LOBSTER_TEST_PG_URL LOBSTER_STATE_DIR=$tmp/pgl "$bin" store migrate >/dev/null
    psql -q "$LOBSTER_TEST_PG_URL" -c "INSERT INTO lobster_journal_runs (tenant, run_id, name, door, status, started_at, ended_at, head, events)
        SELECT 'default', '$tenant' || lpad(g::text, 8, '0'), 'commands.list | head', 'serve', 'ok',
               now() - g * interval '1 second', now(), md5(g::text), 4 FROM generate_series(1, 10000) g" >/dev/null
    lline=$(python3 "$script_dir/timeit.py" --runs "$runs" --warmup 1 --env "LOBSTER_STATE_DIR=$tmp/pgl" --env "LOBSTER_STORE=$LOBSTER_TEST_PG_URL" -- "$bin" runs list --limit 50)
    IFS=$'\t' read -r _ lw lc _ <<<"$lline"
    echo "| lobster runs list --limit 50, 10,000 runs, PostgreSQL (whole process) | $lw ms wall, $lc ms cpu |"
    psql -q "$LOBSTER_TEST_PG_URL" -c "DELETE FROM lobster_journal_runs WHERE run_id LIKE '$tenant%'" >/dev/null
fi

if [[ ${JOURNAL_BENCH_SERVE:-0} == 1 ]]; then
    echo
    for r in $(seq "$rounds"); do
        for mode in on off; do
            log "serve round $r, journal $mode"
            echo "serve, journal $mode, round $r:"
            if [[ $mode == off ]]; then
                LOBSTER_JOURNAL=off SERVE_BENCH_BIN_DIR=$(dirname "$bin") SERVE_BENCH_RUNS=0 SERVE_BENCH_RATES="" \
                    SERVE_BENCH_CLIENTS=16 SERVE_BENCH_SECONDS=${SERVE_BENCH_SECONDS:-10} "$script_dir/serve.sh"
            else
                SERVE_BENCH_BIN_DIR=$(dirname "$bin") SERVE_BENCH_RUNS=0 SERVE_BENCH_RATES="" \
                    SERVE_BENCH_CLIENTS=16 SERVE_BENCH_SECONDS=${SERVE_BENCH_SECONDS:-10} "$script_dir/serve.sh"
            fi
        done
    done
fi
