#!/usr/bin/env bash
# What the run journal costs (issue 25), counted in instructions with
# callgrind: journal on vs off (LOBSTER_JOURNAL=off, a switch for the bench
# only). CPU time on a shared VM spreads by 10-15 % between rounds even
# when the machine is quiet, more than the 5 % budget; an instruction
# count does not move with load (valgrind runs the threads one at a time),
# so it shows the journal's own cost where journal.sh's timings cannot.
# It does not show cache misses or lock waits: journal.sh's timed sitting
# is still the figure the issue asks for; this one says where it comes from.
#
#   serve (a) and (b): a `lobster serve` under callgrind, warmed with
#     JOURNAL_INSTR_WARM runs, its counters zeroed (callgrind_control -z),
#     then JOURNAL_INSTR_RUNS runs from lobster-load (-c 1: valgrind runs one thread at a time anyway, and waiting threads spin) and a dump
#     (callgrind_control -d); instructions of every thread of the server,
#     divided by the runs.
#   10-step wasm workflow and 1M-item pipeline: one whole `lobster run`
#     process each, after one uncounted run under valgrind that fills the
#     artefact cache (valgrind's CPUID differs from the machine's, so a
#     cache filled outside valgrind would miss).
#
#   BENCH_BIN_DIR=DIR          lobster and lobster-load (release) to count
#   JOURNAL_INSTR_RUNS=200     counted serve runs per case
#   JOURNAL_INSTR_WARM=20      serve runs before the counters are zeroed
#   JOURNAL_INSTR_CASES="a b wf10 items1m"
#   JOURNAL_INSTR_KEEP=1       keep the callgrind files (callgrind_annotate them)
# Prints a Markdown table on stdout; progress on stderr. Needs valgrind,
# python3 and the wasm guests (tests/build-guests.sh) and example steps.
set -euo pipefail

script_dir=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd -- "$script_dir/../.." && pwd)
runs=${JOURNAL_INSTR_RUNS:-200}
warm=${JOURNAL_INSTR_WARM:-20}
cases=${JOURNAL_INSTR_CASES:-a b wf10 items1m}
log() { printf '%s\n' "$*" >&2; }
die() { log "journal_instr.sh: $*"; exit 1; }

[[ -n ${BENCH_BIN_DIR:-} ]] || die "set BENCH_BIN_DIR to a directory with release lobster and lobster-load"
lobster=$BENCH_BIN_DIR/lobster load=$BENCH_BIN_DIR/lobster-load
[[ -x $lobster && -x $load ]] || die "no lobster and lobster-load in $BENCH_BIN_DIR"
for t in valgrind callgrind_control python3; do
    command -v $t >/dev/null || die "$t is required"
done
steps_out=$repo_root/examples/steps/target/wasm32-wasip2/release
[[ -f $steps_out/inbox_categorize.wasm && -f $steps_out/email_triage.wasm ]] ||
    die "no example steps in $steps_out: run tests/build-guests.sh"
noop=$repo_root/tests/guests/target/wasm32-wasip2/release/noop.wasm
[[ -f $noop ]] || die "no $noop: run tests/build-guests.sh"

work=$(mktemp -d "${TMPDIR:-/tmp}/lobster-instr.XXXXXX")
server_pid=''
cleanup() {
    [[ -n $server_pid ]] && kill -KILL "$server_pid" 2>/dev/null
    if [[ -n ${JOURNAL_INSTR_KEEP:-} ]]; then log "kept $work"; else rm -rf -- "$work"; fi
}
trap cleanup EXIT

# shellcheck source=runtime/benches/bench5.sh
. "$script_dir/bench5.sh"
bench5_setup "$work" "$steps_out"
bench_cases

{
    printf 'name: bench-10-wasm-steps\nsteps:\n'
    printf '  - id: s1\n    uses: %s\n    stdin: [1, 2, 3]\n' "$noop"
    for i in 2 3 4 5 6 7 8 9 10; do
        # shellcheck disable=SC2016 # a workflow step reference
        printf '  - id: s%d\n    uses: %s\n    stdin: $s%d.json\n' "$i" "$noop" $((i - 1))
    done
} >"$work/wf10.lobster"
big=$work/big1m.json
python3 - "$big" <<'PY'
import sys
tags = ["alpha", "beta", "gamma", "delta", "eps"]
with open(sys.argv[1], "w") as f:
    f.write("[" + ",".join('{"id":%d,"name":"item-%07d","score":%d,"tag":"%s"}'
                           % (i, i, (i * 7919 + 13) % 101, tags[(i * 31 + 7) % 5])
                           for i in range(1000000)) + "]\n")
PY
items="exec --json --shell 'cat $big' | where score>50 | sort --key score | head --n 10 | json"

# total OUT: the instructions a callgrind output file counted.
total() { awk '/^(summary|totals):/ { print $2; exit }' "$1"; }

# serve_case CASE MODE: instructions per run of serve case CASE (a|b).
serve_case() {
    local case=$1 mode=$2 body out state
    body=$([[ $case == a ]] && echo "$body_a" || echo "$body_b")
    state=$work/state-$mode
    rm -rf -- "$state" && mkdir -p "$state"
    sed "s|^state = .*|state = \"$state\"|" "$work/serve.toml" >"$work/serve-$mode.toml"
    out=$work/cg-serve-$case-$mode.out
    : >"$work/serve.out"
    local -a env=()
    [[ $mode == off ]] && env=(LOBSTER_JOURNAL=off)
    env "${env[@]}" valgrind --tool=callgrind --callgrind-out-file="$out" \
        "$lobster" serve --config "$work/serve-$mode.toml" >"$work/serve.out" 2>"$work/serve.err" &
    server_pid=$!
    local base=''
    for _ in $(seq 600); do
        if [[ $(head -n 1 -- "$work/serve.out" 2>/dev/null) =~ ^lobster\ serve\ listening\ on\ (http://127\.0\.0\.1:[0-9]+)$ ]]; then
            base=${BASH_REMATCH[1]}
            break
        fi
        kill -0 "$server_pid" 2>/dev/null || { tail -n 20 "$work/serve.err" >&2; die "serve exited"; }
        sleep 0.1
    done
    [[ -n $base ]] || die "serve under valgrind printed no ready line in 60 s"
    local -a args=(--url "$base/v1/runs?wait=60000" --header "Authorization: Bearer $LOBSTER_BENCH_TOKEN"
        --expect-status 200 --body-json "$body")
    "$load" "${args[@]}" -c 1 -n "$warm" >/dev/null || die "warm-up runs of case ($case) failed"
    callgrind_control -z "$server_pid" >/dev/null 2>&1
    "$load" "${args[@]}" -c 1 -n "$runs" >"$work/load.json" || die "counted runs of case ($case) failed"
    # Dump what the counted runs cost (a part file, "$out.1"), then stop.
    callgrind_control -d "$server_pid" >/dev/null 2>&1
    kill -TERM "$server_pid"
    wait "$server_pid" || true
    server_pid=''
    [[ -s $out.1 ]] || die "callgrind wrote no dump for case ($case) at $out.1"
    echo $(($(total "$out.1") / runs))
}

# process_case CASE MODE: instructions of one whole `lobster run` process.
process_case() {
    local case=$1 mode=$2 state=$work/pstate-$2 out=$work/cg-$1-$2.out
    mkdir -p "$state"
    local -a env=(LOBSTER_STATE_DIR=$state)
    [[ $mode == off ]] && env+=(LOBSTER_JOURNAL=off)
    local -a cmd
    case $case in
        wf10) cmd=("$lobster" run "$work/wf10.lobster") ;;
        items1m) cmd=("$lobster" "$items") ;;
    esac
    env "${env[@]}" valgrind --tool=callgrind --callgrind-out-file="$out.warm" "${cmd[@]}" >/dev/null 2>"$work/p.err" ||
        { cat "$work/p.err" >&2; die "$case failed"; }
    env "${env[@]}" valgrind --tool=callgrind --callgrind-out-file="$out" "${cmd[@]}" >/dev/null 2>"$work/p.err" ||
        { cat "$work/p.err" >&2; die "$case failed"; }
    total "$out"
}

echo "| case (instructions, callgrind) | journal on | journal off | on vs off |"
echo "|---|---:|---:|---:|"
for case in $cases; do
    declare -A n=()
    for mode in on off; do
        log "counting $case, journal $mode"
        case $case in
            a | b) n[$mode]=$(serve_case "$case" "$mode") ;;
            wf10 | items1m) n[$mode]=$(process_case "$case" "$mode") ;;
            *) die "unknown case '$case' (a, b, wf10, items1m)" ;;
        esac
    done
    label=$(case $case in
        a) echo "serve (a) 3-stage pipeline, per run" ;;
        b) echo "serve (b) 5-step wasm workflow, per run" ;;
        wf10) echo "10-step wasm workflow, whole process" ;;
        items1m) echo "1M-item pipeline, whole process" ;;
    esac)
    awk -v l="$label" -v a="${n[on]}" -v b="${n[off]}" \
        'BEGIN { printf "| %s | %.3f M | %.3f M | %+.1f %% |\n", l, a / 1e6, b / 1e6, (a / b - 1) * 100 }'
done
