#!/usr/bin/env bash
# Whole-process benchmarks of the `lobster` binary, optionally side by side with
# the TypeScript reference (@clawdbot/lobster) and, for the item cases, with
# jq doing the same selection, sort and limit; printed as Markdown tables.
#
#   runtime/benches/compare.sh            # from any directory
#
# Environment:
#   BENCH_RUNS=5               timed runs per case (after one warm-up)
#   BENCH_WITH_REFERENCE=      unset: run the reference if it is installed;
#                              1: install it first if missing (npm); 0: never
#   BENCH_WITH_JQ=             unset: time jq on the item cases when it is
#                              installed; 0: never
#   BENCH_BEFORE=PATH          an earlier lobster binary, timed right before
#                              this one in every case (a before/after table)
#   BENCH_LOBSTER=PATH         time this lobster binary instead of building
#                              the checkout's (cargo build --release)
#   BENCH_WASM_WORKFLOW=PATH   a workflow of 10 wasm steps to time instead of the
#                              generated one (10 `uses:` steps of the noop guest)
#   CARGO_TARGET_DIR           as for cargo (default: <repo>/target)
#
# Data files (target/bench-data/) are generated once and reused; the reference
# is installed under target/bench-ref/. When the wasm32-wasip2 target is
# installed, the `noop` test guest is built (tests/guests) for the wasm case. Figures are medians; cpu = user + sys of
# the process and the children it waited for; peak = max RSS of the largest one.
# Progress goes to stderr, the report to stdout.
set -euo pipefail

script_dir=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd -- "$script_dir/../.." && pwd)
runs=${BENCH_RUNS:-5}
with_ref=${BENCH_WITH_REFERENCE:-}
with_jq=${BENCH_WITH_JQ:-}
before_bin=${BENCH_BEFORE:-}
lobster=${BENCH_LOBSTER:-}
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
if [[ -n $before_bin ]]; then
    before_bin=$(realpath -m -- "$before_bin")
    [[ -x $before_bin ]] || die "BENCH_BEFORE=$before_bin is not an executable"
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
if [[ -n $lobster ]]; then
    lobster=$(realpath -m -- "$lobster")
else
    log "building lobster (release)"
    (cd "$repo_root" && CARGO_TARGET_DIR=$target_dir cargo build --release -p lobster) >&2
    lobster=$target_dir/release/lobster
fi
[[ -x $lobster ]] || die "no binary at $lobster"

# The no-op wasm step, for 10 wasm steps in one pipeline.
guest_dir=$repo_root/tests/guests
guest_out=$guest_dir/target/wasm32-wasip2/release
wasm_note=''
if [[ ! -f $guest_dir/Cargo.toml ]]; then
    wasm_note='this checkout has no wasm test guests (tests/guests)'
elif ! rustup target list --installed 2>/dev/null | grep -qx wasm32-wasip2; then
    wasm_note='the wasm32-wasip2 target is not installed (rustup target add wasm32-wasip2)'
else
    log "building the noop wasm guest"
    (cd "$guest_dir" && cargo build --release --target wasm32-wasip2 -p noop) >&2 ||
        wasm_note='building the noop guest failed'
fi
if [[ -z $wasm_note && ! -f $guest_out/noop.wasm ]]; then
    wasm_note="no $guest_out/noop.wasm after the build"
fi

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

# 10 wasm steps (the noop guest), each fed the previous step's json.
if [[ -z $wasm_workflow && -z $wasm_note ]]; then
    wasm_workflow=$data_dir/wf10-wasm.lobster
    {
        printf 'name: bench-10-wasm-steps\nsteps:\n'
        printf '  - id: s1\n    uses: %s\n    stdin: [1, 2, 3]\n' "$guest_out/noop.wasm"
        for i in 2 3 4 5 6 7 8 9 10; do
            # shellcheck disable=SC2016 # $sN.json is a workflow step reference
            printf '  - id: s%d\n    uses: %s\n    stdin: $s%d.json\n' "$i" "$guest_out/noop.wasm" $((i - 1))
        done
    } >"$wasm_workflow"
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
if [[ -n $before_bin ]]; then
    impls+=(before)
fi
if [[ $with_ref != 0 && -x $ref_bin ]] && command -v node >/dev/null; then
    impls+=(reference)
fi
if [[ $with_jq != 0 ]] && command -v jq >/dev/null; then
    impls+=(jq)
fi
has() { [[ " ${impls[*]} " == *" $1 "* ]]; }

# ---------------------------------------------------------------- cases
tmp=$(mktemp -d)
trap 'rm -rf -- "$tmp"' EXIT

pipe3="exec --json --shell \"echo '[{\\\"v\\\":1},{\\\"v\\\":2},{\\\"v\\\":3}]'\" | where v>1 | json"
items_pipe() { printf "exec --json --shell 'cat %s' | where score>50 | sort --key score | head --n 10 | json" "$1"; }
# The same selection, sort (stable) and limit in jq, printed the same way.
jq_filter='[.[] | select(.score > 50)] | sort_by(.score) | .[:10]'
approve_pipe='exec --json --shell "echo [1,2]" | approve --prompt ok'

wasm10=$(printf 'noop | %.0s' 1 2 3 4 5 6 7 8 9)noop

case_ids=(startup pipe3 wf10shell wf10wasm wasm10 approval items100k items1m)
declare -A case_label=(
    [startup]='start-up (lobster version)'
    [pipe3]='3-stage inline pipeline'
    [wf10shell]='10-step workflow, shell steps'
    [wf10wasm]='10-step workflow, wasm steps'
    [wasm10]='10 wasm steps in one pipeline (noop, cached)'
    [approval]='approval round trip (2 processes)'
    [items100k]='100k items (6 MB)'
    [items1m]='1M items (61 MB)'
)
# Cases compared byte for byte with the reference's output.
declare -A compare_output=([pipe3]=1 [wf10shell]=1 [items100k]=1 [items1m]=1)
# Cases jq is timed on (the others are not jq's job).
declare -A jq_case=([items100k]=big100k.json [items1m]=big1m.json)
declare -A result=() # "<case>|<impl>" -> timeit.py line (ok/fail/skip)

# bench CASE IMPL BIN: time one case for one implementation.
bench() {
    local id=$1 impl=$2 bin=$3 state=$tmp/state-$2
    local -a cmd roundtrip=() env=(--env "LOBSTER_STATE_DIR=$state")
    mkdir -p "$state"
    if [[ $impl == jq ]]; then
        if [[ -z ${jq_case[$id]:-} ]]; then
            result[$id|$impl]=$'skip\tnot a jq case'
            return 0
        fi
        log "  jq: ${case_label[$id]}"
        result[$id|$impl]=$(python3 "$script_dir/timeit.py" --runs "$runs" --cwd "$data_dir" \
            --save-stdout "$tmp/out-$id-$impl" -- jq "$jq_filter" "${jq_case[$id]}")
        return 0
    fi
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
                result[$id|$impl]=$'skip\t'"${wasm_note:-no wasm-step workflow}"
                return 0
            fi
            cmd=("$bin" run "$wasm_workflow")
            ;;
        wasm10)
            if [[ $impl == reference ]]; then
                result[$id|$impl]=$'skip\tthe reference has no wasm steps'
                return 0
            fi
            if [[ -n $wasm_note ]]; then
                result[$id|$impl]=$'skip\t'"$wasm_note"
                return 0
            fi
            # The warm-up compiles the component into the state dir's cache;
            # the timed runs load it from there.
            env+=(--env "LOBSTER_STEP_PATH=$guest_out")
            cmd=("$bin" "$wasm10")
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
        "${env[@]}" --save-stdout "$tmp/out-$id-$impl" \
        "${roundtrip[@]}" -- "${cmd[@]}")
    # Workflow and wasm cases are placeholders until this build supports them.
    if [[ $id == wf10* && $line == fail* && $line == *"not supported"* ]]; then
        line=$'skip\tworkflow files are not supported by this build yet'
    fi
    result[$id|$impl]=$line
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '0 0 0')
baseline=$(python3 "$script_dir/timeit.py" --runs "$runs" -- /bin/true)
for id in "${case_ids[@]}"; do
    log "case $id"
    if has before; then
        bench "$id" before "$before_bin"
    fi
    bench "$id" lobster "$lobster"
    if has reference; then
        bench "$id" reference "$ref_bin"
    fi
    if has jq; then
        bench "$id" jq jq
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
if [[ -n ${BENCH_LOBSTER:-} ]]; then
    printf -- '- lobster: %s, release build %s\n' "$("$lobster" version)" "$lobster"
else
    printf -- '- lobster: %s (commit %s), release build\n' "$("$lobster" version)" "$commit"
fi
if has reference; then
    printf -- '- reference: %s, node %s\n' "$ref_package" "$(node --version)"
else
    printf -- '- reference: not run (BENCH_WITH_REFERENCE=1 installs it)\n'
fi
printf -- '- %s runs per case after 1 warm-up; medians; peak RSS (median of up to 3 more runs) via %s\n' "$runs" \
    "$(field "$baseline" 6 | sed 's/gnu-time/GNU time/;s/wait4/wait4 (upper bound)/')"
printf -- '- launcher overhead (spawning /bin/true from timeit.py): %s wall, included in every figure\n' \
    "$(fmt_ms "$(field "$baseline" 2)")"
# /bin/true takes ~0.7 ms on an idle 2-core machine; much more, or a load
# average above the core count, means the cores are shared with other work
# right now, and wall times are inflated.
load_after=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo 0)
if awk -v ms="$(field "$baseline" 2)" -v l1="${load_before%% *}" -v l2="$load_after" -v n="$(nproc)" \
    'BEGIN { exit !(ms > 1.5 || l1 > n || l2 > n) }'; then
    printf -- '- **the machine was busy** (load average %s after the run, /bin/true %s): wall times are inflated; cpu and ratios are steadier\n' \
        "$load_after" "$(fmt_ms "$(field "$baseline" 2)")"
fi
printf '\n'

if has jq; then
    printf -- '- jq: %s, reading the file itself: `jq %q FILE`\n' "$(jq --version)" "$jq_filter"
fi
if has before; then
    printf -- '- before: %s\n' "$before_bin"
fi
printf -- '- order in each case: %s\n' "${impls[*]}"
if has reference; then
    printf '| case | lobster wall | cpu | peak | reference wall | cpu | peak | wall ratio | cpu ratio | peak ratio | same output |\n'
    printf '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|\n'
else
    printf '| case | lobster wall | cpu | peak |\n|---|---:|---:|---:|\n'
fi
for id in "${case_ids[@]}"; do
    mine=${result[$id|lobster]}
    if ! has reference; then
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

# same_json A B: whether two outputs are the same JSON (whitespace aside).
same_json() {
    python3 -c 'import json,sys; a,b=(json.load(open(f)) for f in sys.argv[1:]); sys.exit(a!=b)' "$1" "$2" 2>/dev/null
}

if has jq; then
    printf '\n### Against jq (the same selection, sort and limit)\n\n'
    printf '| case | lobster wall | cpu | peak | jq wall | cpu | peak | wall ratio | cpu ratio | peak ratio | same output |\n'
    printf '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|\n'
    for id in "${!jq_case[@]}"; do
        mine=${result[$id|lobster]} theirs=${result[$id|jq]}
        ratios='– | – | –' same='–'
        if [[ $mine == ok* && $theirs == ok* ]]; then
            ratios="$(ratio "$(field "$theirs" 2)" "$(field "$mine" 2)") | $(ratio "$(field "$theirs" 3)" "$(field "$mine" 3)") | $(ratio "$(field "$theirs" 4)" "$(field "$mine" 4)")"
            if same_json "$tmp/out-$id-lobster" "$tmp/out-$id-jq"; then same=yes; else same=NO; fi
        fi
        printf '| %s | %s | %s | %s | %s |\n' "${case_label[$id]}" "$(cells "$mine")" "$(cells "$theirs")" "$ratios" "$same"
    done | sort
    printf '\nRatios are jq / lobster.\n'
fi

if has before; then
    printf '\n### Before and after (each case: before, then after)\n\n'
    printf '| case | before wall | cpu | peak | after wall | cpu | peak | wall ratio | cpu ratio | same output |\n'
    printf '|---|---:|---:|---:|---:|---:|---:|---:|---:|:---:|\n'
    for id in "${case_ids[@]}"; do
        mine=${result[$id|lobster]} old=${result[$id|before]}
        ratios='– | –' same='–'
        if [[ $mine == ok* && $old == ok* ]]; then
            ratios="$(ratio "$(field "$old" 2)" "$(field "$mine" 2)") | $(ratio "$(field "$old" 3)" "$(field "$mine" 3)")"
            if [[ -n ${compare_output[$id]:-} ]]; then
                if cmp -s "$tmp/out-$id-lobster" "$tmp/out-$id-before"; then same=yes; else same=NO; fi
            fi
        fi
        printf '| %s | %s | %s | %s | %s |\n' "${case_label[$id]}" "$(cells "$old")" "$(cells "$mine")" "$ratios" "$same"
    done
    printf '\nRatios are before / after.\n'
fi

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
if [[ ${result[wf10wasm|lobster]} != ok* && ${result[wasm10|lobster]} == ok* ]]; then
    # Until workflow files exist, ten wasm steps in one pipeline stand in.
    target '10 wasm steps ≤ 15 ms (stand-in: one pipeline, no workflow file)' wasm10 2 15 ms
else
    target '10-step workflow, wasm steps ≤ 15 ms' wf10wasm 2 15 ms
fi
target 'approval round trip ≤ 20 ms' approval 2 20 ms
target '1M items ≤ 0.6 s wall' items1m 2 600 ms
target '1M items ≤ 16 MiB peak' items1m 4 16 MiB
# faster LABEL CASE OTHER FACTOR: lobster's median wall at least FACTOR times
# faster than OTHER's in the same run.
faster() {
    local label=$1 id=$2 other=$3 factor=$4 mine=${result[$2|lobster]} theirs=${result[$2|$3]:-}
    if [[ $mine != ok* || $theirs != ok* ]]; then
        printf '| %s | not measured | n/a |\n' "$label"
        return 0
    fi
    local r verdict
    r=$(awk -v a="$(field "$theirs" 2)" -v b="$(field "$mine" 2)" 'BEGIN { printf "%.1f", a / b }')
    verdict=$(awk -v r="$r" -v f="$factor" 'BEGIN { print (r >= f) ? "pass" : "MISS" }')
    printf '| %s | %s× | %s |\n' "$label" "$r" "$verdict"
}
if has reference; then
    faster '1M items ≥ 20× the reference (wall)' items1m reference 20
    faster '100k items ≥ 15× the reference (wall)' items100k reference 15
fi
if has jq; then
    faster '1M items faster than jq (wall)' items1m jq 1
fi
