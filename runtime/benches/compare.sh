#!/usr/bin/env bash
# Whole-process benchmarks of the `lobster` binary, optionally side by side with
# the TypeScript reference (@clawdbot/lobster), printed as a Markdown table.
#
#   runtime/benches/compare.sh            # from any directory
#
# Environment:
#   BENCH_RUNS=5               timed runs per case (after one warm-up)
#   BENCH_WITH_REFERENCE=      unset: run the reference if it is installed;
#                              1: install it first if missing (npm); 0: never
#   BENCH_WASM_WORKFLOW=PATH   a workflow file of 10 wasm steps to time (default:
#                              generated from tests/guests' noop step when built)
#   CARGO_TARGET_DIR           as for cargo (default: <repo>/target)
#
# Data files (target/bench-data/) are generated once and reused; the reference
# is installed under target/bench-ref/. Figures are medians; cpu = user + sys of
# the process and the children it waited for; peak = max RSS of the largest one.
# Progress goes to stderr, the report to stdout.
set -euo pipefail

script_dir=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd -- "$script_dir/../.." && pwd)
runs=${BENCH_RUNS:-5}
with_ref=${BENCH_WITH_REFERENCE:-}
wasm_workflow=${BENCH_WASM_WORKFLOW:-}
ref_package=@clawdbot/lobster@2026.9.13
if [[ -n ${CARGO_TARGET_DIR:-} ]]; then
    target_dir=$(realpath -m -- "$CARGO_TARGET_DIR")
else
    target_dir=$repo_root/target
fi
data_dir=$target_dir/bench-data
ref_dir=$target_dir/bench-ref
ref_bin=$ref_dir/node_modules/.bin/lobster

log() { printf '%s\n' "$*" >&2; }
die() {
    log "compare.sh: $*"
    exit 1
}

[[ $runs =~ ^[1-9][0-9]*$ ]] || die "BENCH_RUNS must be a positive integer, got '$runs'"
command -v python3 >/dev/null || die "python3 is required (runtime/benches/timeit.py)"
if [[ -n $wasm_workflow ]]; then
    wasm_workflow=$(realpath -m -- "$wasm_workflow")
fi

# GNU time gives exact peak RSS (see timeit.py); install it when we can.
if ! /usr/bin/time --version 2>&1 | grep -q GNU; then
    if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
        log "installing GNU time (apt-get install -y time)"
        apt-get install -y -qq time >&2 || log "could not install GNU time; peaks will be upper bounds"
    else
        log "GNU time not found; peak RSS will include timeit.py's own ~15 MiB"
    fi
fi

# ---------------------------------------------------------------- build
log "building lobster (release)"
(cd "$repo_root" && CARGO_TARGET_DIR=$target_dir cargo build --release -p lobster) >&2
lobster=$target_dir/release/lobster
[[ -x $lobster ]] || die "no binary at $lobster"

# ---------------------------------------------------------------- data
mkdir -p "$data_dir"

# gen_items N FILE: a JSON array of N items {"id","name","score","tag"}, deterministic.
gen_items() {
    local n=$1 file=$data_dir/$2
    if [[ -s $file ]]; then
        return 0
    fi
    log "generating $file ($n items)"
    python3 - "$n" "$file.tmp" <<'PY'
import sys

n, path = int(sys.argv[1]), sys.argv[2]
tags = ("alpha", "beta", "gamma", "delta", "epsilon")
chunk = 100_000
with open(path, "w") as f:
    f.write("[")
    for start in range(0, n, chunk):
        if start:
            f.write(",")
        f.write(",".join(
            '{"id":%d,"name":"item-%07d","score":%d,"tag":"%s"}'
            % (i, i, (i * 7919 + 13) % 101, tags[(i * 31 + 7) % 5])
            for i in range(start, min(n, start + chunk))
        ))
    f.write("]\n")
PY
    mv -- "$file.tmp" "$file"
}
gen_items 100000 big100k.json
gen_items 1000000 big1m.json

# 10 shell steps, each `cat` of the previous step's stdout.
{
    printf 'name: bench-10-shell-steps\nsteps:\n'
    printf '  - id: s1\n    run: cat\n    stdin: "[1,2,3]"\n'
    for i in 2 3 4 5 6 7 8 9 10; do
        # shellcheck disable=SC2016 # $sN.stdout is a workflow step reference
        printf '  - id: s%d\n    run: cat\n    stdin: $s%d.stdout\n' "$i" $((i - 1))
    done
} >"$data_dir/wf10-shell.lobster"

# 10 wasm steps, each the `noop` test guest over the previous step's JSON
# (tests/build-guests.sh builds it). BENCH_WASM_WORKFLOW overrides.
noop_wasm="$repo_root/tests/guests/target/wasm32-wasip2/release/noop.wasm"
if [[ -z $wasm_workflow && -f $noop_wasm ]]; then
    {
        printf 'name: bench-10-wasm-steps\nsteps:\n'
        printf '  - id: s1\n    uses: %s\n    stdin: [1, 2, 3]\n' "$noop_wasm"
        for i in 2 3 4 5 6 7 8 9 10; do
            # shellcheck disable=SC2016 # $sN.json is a workflow step reference
            printf '  - id: s%d\n    uses: %s\n    stdin: $s%d.json\n' "$i" "$noop_wasm" $((i - 1))
        done
    } >"$data_dir/wf10-wasm.lobster"
    wasm_workflow="$data_dir/wf10-wasm.lobster"
fi

# ---------------------------------------------------------------- reference
if [[ $with_ref == 1 && ! -x $ref_bin ]]; then
    command -v npm >/dev/null || die "BENCH_WITH_REFERENCE=1 needs node and npm"
    log "installing $ref_package into $ref_dir"
    install_start=$(date +%s)
    npm install --prefix "$ref_dir" --no-audit --no-fund --loglevel=error "$ref_package" >&2 ||
        die "npm install of $ref_package failed"
    log "reference installed in $(($(date +%s) - install_start)) s"
fi
impls=(lobster)
if [[ $with_ref != 0 && -x $ref_bin ]] && command -v node >/dev/null; then
    impls+=(reference)
fi

# ---------------------------------------------------------------- cases
tmp=$(mktemp -d)
trap 'rm -rf -- "$tmp"' EXIT

pipe3="exec --json --shell \"echo '[{\\\"v\\\":1},{\\\"v\\\":2},{\\\"v\\\":3}]'\" | where v>1 | json"
items_pipe() { printf "exec --json --shell 'cat %s' | where score>50 | sort --key score | head --n 10 | json" "$1"; }
approve_pipe='exec --json --shell "echo [1,2]" | approve --prompt ok'

case_ids=(startup pipe3 wf10shell wf10wasm approval items100k items1m)
declare -A case_label=(
    [startup]='start-up (lobster version)'
    [pipe3]='3-stage inline pipeline'
    [wf10shell]='10-step workflow, shell steps'
    [wf10wasm]='10-step workflow, wasm steps'
    [approval]='approval round trip (2 processes)'
    [items100k]='100k items (6 MB)'
    [items1m]='1M items (61 MB)'
)
# Cases compared byte for byte with the reference's output.
declare -A compare_output=([pipe3]=1 [wf10shell]=1 [items100k]=1 [items1m]=1)
declare -A result=() # "<case>|<impl>" -> timeit.py line (ok/fail/skip)

# bench CASE IMPL BIN: time one case for one implementation.
bench() {
    local id=$1 impl=$2 bin=$3 state=$tmp/state-$2
    local -a cmd roundtrip=()
    mkdir -p "$state"
    case $id in
        startup) cmd=("$bin" version) ;;
        pipe3) cmd=("$bin" "$pipe3") ;;
        wf10shell) cmd=("$bin" run wf10-shell.lobster) ;;
        wf10wasm)
            if [[ $impl == reference ]]; then
                result[$id|$impl]=$'skip\tthe reference has no wasm steps'
                return 0
            fi
            if [[ -z $wasm_workflow || ! -f $wasm_workflow ]]; then
                result[$id|$impl]=$'skip\tno wasm-step workflow to run (set BENCH_WASM_WORKFLOW once wasm steps exist)'
                return 0
            fi
            cmd=("$bin" run "$wasm_workflow")
            ;;
        approval)
            roundtrip=(--roundtrip)
            cmd=("$bin" run --mode tool "$approve_pipe" ::: "$bin" resume --token '{TOKEN}' --approve yes)
            ;;
        items100k) cmd=("$bin" "$(items_pipe big100k.json)") ;;
        items1m) cmd=("$bin" "$(items_pipe big1m.json)") ;;
        *) die "unknown case $id" ;;
    esac
    log "  $impl: ${case_label[$id]}"
    local line
    line=$(python3 "$script_dir/timeit.py" --runs "$runs" --cwd "$data_dir" \
        --env "LOBSTER_STATE_DIR=$state" --save-stdout "$tmp/out-$id-$impl" \
        "${roundtrip[@]}" -- "${cmd[@]}")
    # Workflow and wasm cases are placeholders until this build supports them.
    if [[ $id == wf10* && $line == fail* && $line == *"not supported"* ]]; then
        line=$'skip\tworkflow files are not supported by this build yet'
    fi
    result[$id|$impl]=$line
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)
baseline=$(python3 "$script_dir/timeit.py" --runs "$runs" -- /bin/true)
for id in "${case_ids[@]}"; do
    log "case $id"
    bench "$id" lobster "$lobster"
    if [[ ${impls[*]} == *reference* ]]; then
        bench "$id" reference "$ref_bin"
    fi
done

# ---------------------------------------------------------------- report
# field LINE N: the Nth tab-separated field of a timeit.py line.
field() { cut -f "$2" <<<"$1"; }

# fmt_ms MS: "0.93 ms", "12.4 ms", "807 ms", "4.94 s".
fmt_ms() {
    awk -v ms="$1" 'BEGIN {
        if (ms >= 1000) printf "%.2f s", ms / 1000
        else if (ms >= 100) printf "%.0f ms", ms
        else if (ms >= 10) printf "%.1f ms", ms
        else printf "%.2f ms", ms }'
}

# cells LINE: "wall | cpu | peak" for an ok line, else the reason across the cells.
cells() {
    local line=$1
    case $(field "$line" 1) in
        ok) printf '%s | %s | %s MiB' "$(fmt_ms "$(field "$line" 2)")" \
            "$(fmt_ms "$(field "$line" 3)")" "$(field "$line" 4)" ;;
        skip) printf 'skipped: %s | | ' "$(field "$line" 2)" ;;
        *) printf 'FAILED: %s | | ' "$(field "$line" 2 | tr '|' '/')" ;;
    esac
}

# ratio A B: A / B to two significant-ish digits, or "–".
ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN {
        if (a == "" || b == "" || b <= 0) { printf "–"; exit }
        r = a / b
        if (r >= 10) printf "%.0f×", r; else printf "%.1f×", r }'
}

cpu_model=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
commit=$(git -C "$repo_root" rev-parse --short HEAD 2>/dev/null || echo unknown)
printf '## Lobster benchmarks\n\n'
printf -- '- date: %s\n' "$(date -u '+%Y-%m-%d %H:%M UTC')"
printf -- '- machine: %s cores, %s; load average before the run: %s\n' "$(nproc)" \
    "${cpu_model:-unknown CPU}" "$load_before"
printf -- '- lobster: %s (commit %s), release build\n' "$("$lobster" version)" "$commit"
if [[ ${impls[*]} == *reference* ]]; then
    printf -- '- reference: %s, node %s\n' "$ref_package" "$(node --version)"
else
    printf -- '- reference: not run (BENCH_WITH_REFERENCE=1 installs it)\n'
fi
printf -- '- %s runs per case after 1 warm-up; medians; peak RSS (median of up to 3 more runs) via %s\n' "$runs" \
    "$(field "$baseline" 6 | sed 's/gnu-time/GNU time/;s/wait4/wait4 (upper bound)/')"
printf -- '- launcher overhead (spawning /bin/true from timeit.py): %s wall, included in every figure\n' \
    "$(fmt_ms "$(field "$baseline" 2)")"
# /bin/true takes ~0.7 ms on an idle 2-core machine; much more means the cores
# are shared with other work right now, and wall times are inflated.
if awk -v ms="$(field "$baseline" 2)" 'BEGIN { exit !(ms > 1.5) }'; then
    printf -- '- **the machine was busy** (/bin/true took over 1.5 ms): wall times are inflated; cpu and ratios are steadier\n'
fi
printf '\n'

if [[ ${impls[*]} == *reference* ]]; then
    printf '| case | lobster wall | cpu | peak | reference wall | cpu | peak | wall ratio | cpu ratio | peak ratio | same output |\n'
    printf '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|\n'
else
    printf '| case | lobster wall | cpu | peak |\n|---|---:|---:|---:|\n'
fi
for id in "${case_ids[@]}"; do
    mine=${result[$id|lobster]}
    if [[ ${impls[*]} != *reference* ]]; then
        printf '| %s | %s |\n' "${case_label[$id]}" "$(cells "$mine")"
        continue
    fi
    ref=${result[$id|reference]}
    ratios='– | – | –'
    if [[ $mine == ok* && $ref == ok* ]]; then
        ratios="$(ratio "$(field "$ref" 2)" "$(field "$mine" 2)") | $(ratio "$(field "$ref" 3)" "$(field "$mine" 3)") | $(ratio "$(field "$ref" 4)" "$(field "$mine" 4)")"
    fi
    same='–'
    if [[ -n ${compare_output[$id]:-} && $mine == ok* && $ref == ok* ]]; then
        if cmp -s "$tmp/out-$id-lobster" "$tmp/out-$id-reference"; then same=yes; else same=NO; fi
    fi
    printf '| %s | %s | %s | %s | %s |\n' "${case_label[$id]}" "$(cells "$mine")" "$(cells "$ref")" "$ratios" "$same"
done
printf '\nRatios are reference / lobster (higher is better for lobster).\n'

# ---------------------------------------------------------------- targets
printf '\n### Targets\n\nJudged on the median wall; the best run is shown to tell load from cost.\n\n'
printf '| target | measured | result |\n|---|---:|:---:|\n'
# target LABEL CASE FIELD LIMIT UNIT: compare field 2 (wall ms) or 4 (peak MiB).
target() {
    local label=$1 id=$2 col=$3 limit=$4 unit=$5 line=${result[$2|lobster]} value verdict
    if [[ $line != ok* ]]; then
        printf '| %s | %s | n/a |\n' "$label" "$(field "$line" 1 | sed 's/^skip$/skipped/;s/^fail$/failed/')"
        return 0
    fi
    value=$(field "$line" "$col")
    verdict=$(awk -v v="$value" -v l="$limit" 'BEGIN { print (v <= l) ? "pass" : "MISS" }')
    if [[ $unit == ms ]]; then
        value="$(fmt_ms "$value") (best $(fmt_ms "$(field "$line" 7)"))"
    else
        value="$value $unit"
    fi
    printf '| %s | %s | %s |\n' "$label" "$value" "$verdict"
}
target 'start-up ≤ 5 ms' startup 2 5 ms
target '3-stage pipeline ≤ 10 ms' pipe3 2 10 ms
target '10-step workflow, wasm steps ≤ 15 ms' wf10wasm 2 15 ms
target 'approval round trip ≤ 20 ms' approval 2 20 ms
target '1M items ≤ 0.6 s wall' items1m 2 600 ms
target '1M items ≤ 100 MiB peak' items1m 4 100 MiB
