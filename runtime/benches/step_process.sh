#!/usr/bin/env bash
# One wasm step as a whole process (issue 27 target 2: ≤ 3 ms): `lobster run
# noop` with the noop test guest on the step path, its compiled artefact in
# the state directory's cache (a warm-up run fills it), against a process per
# step that does nothing (`/bin/true`). (Bare wasmtime in process is
# benches/sandbox.rs's `baseline/wasmtime-pooling`.) Medians of
# STEP_BENCH_RUNS runs (default 21) after one warm-up, by timeit.py;
# STEP_BENCH_ROUNDS rounds (default 3), the binaries alternated in each round.
#
#   runtime/benches/step_process.sh [LOBSTER...]   # default: target/release/lobster
#
# Prints one line per binary and round: wall ms, cpu ms, peak MiB, best wall ms.
set -euo pipefail

script_dir=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd -- "$script_dir/../.." && pwd)
runs=${STEP_BENCH_RUNS:-21}
rounds=${STEP_BENCH_ROUNDS:-3}
guests=$repo_root/tests/guests/target/wasm32-wasip2/release
[[ -f $guests/noop.wasm ]] || {
    echo "step_process.sh: no $guests/noop.wasm; run tests/build-guests.sh" >&2
    exit 1
}
bins=("$@")
[[ ${#bins[@]} -gt 0 ]] || bins=("$repo_root/target/release/lobster")

work=$(mktemp -d "${TMPDIR:-/tmp}/lobster-step-bench.XXXXXX")
trap 'rm -rf -- "$work"' EXIT

time_one() {
    local label=$1
    shift
    local line
    line=$(python3 "$script_dir/timeit.py" --runs "$runs" --cwd "$work" "$@")
    IFS=$'\t' read -r status wall cpu peak _ _ best <<<"$line"
    if [[ $status != ok ]]; then
        printf '%s\tfailed: %s\n' "$label" "$line"
        return
    fi
    printf '%s\twall %.2f ms\tcpu %.2f ms\tpeak %.1f MiB\tbest %.2f ms\n' \
        "$label" "$wall" "$cpu" "$peak" "$best"
}

echo "# $(date -u '+%F %T') UTC; load: $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq "$rounds"); do
    i=0
    for bin in "${bins[@]}"; do
        i=$((i + 1))
        state=$work/state-$i
        mkdir -p "$state"
        time_one "round $round: $bin run noop" \
            --env "LOBSTER_STATE_DIR=$state" --env "LOBSTER_STEP_PATH=$guests" \
            -- "$bin" run noop
    done
    time_one "round $round: /bin/true" -- /bin/true
    echo "#   load: $(cut -d' ' -f1-3 /proc/loadavg)"
done
