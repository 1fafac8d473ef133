#!/usr/bin/env bash
# Benchmark of `lobster serve` (issue 14): throughput and latency of
# `POST /v1/runs?wait=10000` for
#   (a) a 3-stage built-in pipeline that spawns no process
#       (`commands.list | where name==exec | pick name,description`) and
#   (b) a 5-step wasm workflow (the example steps inbox.categorize and
#       email.triage, alternating, on three inline messages),
# at 1, 16 and 64 clients, each side by side with the same load as one
# `lobster run --mode tool` process per request (lobster-load --exec); an
# open-loop case of each at a fixed offered rate (SERVE_BENCH_RATES); then
# the server's RSS (VmRSS) before and after SERVE_BENCH_RUNS runs of each.
# Each case also reports CPU per run: the server's user+sys time for serve,
# the spawned processes' (and the load generator's) for spawn.
# Prints a Markdown table on stdout; progress and errors go to stderr.
#
#   runtime/benches/serve.sh                         # from any directory
#   SERVE_BENCH_RUNS=2000 SERVE_BENCH_SECONDS=3 runtime/benches/serve.sh   # a quick run
#
# Environment:
#   SERVE_BENCH_RUNS=100000    runs per batch of the RSS check, two batches per case (0 skips it)
#   SERVE_BENCH_SECONDS=10     seconds per load case
#   SERVE_BENCH_CLIENTS="1 16 64"
#   SERVE_BENCH_RATES="2000 1000"   offered runs/s of (a) and (b) for the open-loop
#                              cases at 16 clients (the issue's targets; "" skips them)
#   SERVE_BENCH_READY_SECONDS=60   how long to wait for the server's ready line
#   SERVE_BENCH_KEEP=1         keep the temporary directory (config, logs)
#   SERVE_BENCH_SPAWN=0        skip the spawned baseline (serve only)
#   SERVE_BENCH_BIN_DIR=DIR    take lobster and lobster-load from DIR instead
#                              of building them (release) first
#   CARGO_TARGET_DIR           as for cargo (default: <repo>/target)
#
# The server gets a temporary serve.toml: listen 127.0.0.1:0, one tenant
# `bench` (token from $LOBSTER_BENCH_TOKEN via token_env, random per run),
# the default policy (untrusted, no roots), limits raised so the load is not
# rate-limited. The spawned baseline uses the same workflow and steps
# (LOBSTER_STEP_PATH) and its own state directory.
set -euo pipefail

script_dir=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd -- "$script_dir/../.." && pwd)
runs=${SERVE_BENCH_RUNS:-100000}
seconds=${SERVE_BENCH_SECONDS:-10}
clients_list=${SERVE_BENCH_CLIENTS:-1 16 64}
rates=${SERVE_BENCH_RATES-2000 1000}
spawn=${SERVE_BENCH_SPAWN:-1}
ready_seconds=${SERVE_BENCH_READY_SECONDS:-60}
if [[ -n ${CARGO_TARGET_DIR:-} ]]; then
    target_dir=$(realpath -m -- "$CARGO_TARGET_DIR")
else
    target_dir=$repo_root/target
fi

log() { printf '%s\n' "$*" >&2; }
die() {
    log "serve.sh: $*"
    exit 1
}

[[ $runs =~ ^[0-9]+$ ]] || die "SERVE_BENCH_RUNS must be a whole number, got '$runs'"
[[ $seconds =~ ^[1-9][0-9]*$ ]] || die "SERVE_BENCH_SECONDS must be a positive whole number, got '$seconds'"
[[ $ready_seconds =~ ^[1-9][0-9]*$ ]] || die "SERVE_BENCH_READY_SECONDS must be a positive whole number, got '$ready_seconds'"
for c in $clients_list; do
    [[ $c =~ ^[1-9][0-9]*$ ]] || die "SERVE_BENCH_CLIENTS must list positive whole numbers, got '$clients_list'"
done
command -v python3 >/dev/null || die "python3 is required (it reads the JSON reports)"
[[ -r /proc/self/status ]] || die "/proc is required (the server's VmRSS)"

# ---------------------------------------------------------------- build
if [[ -n ${SERVE_BENCH_BIN_DIR:-} ]]; then
    bin_dir=$(realpath -m -- "$SERVE_BENCH_BIN_DIR")
else
    log "building lobster and lobster-load (release)"
    (cd "$repo_root" && CARGO_TARGET_DIR=$target_dir cargo build --release -p lobster --bin lobster --bin lobster-load) >&2
    bin_dir=$target_dir/release
fi
lobster=$bin_dir/lobster
load=$bin_dir/lobster-load
[[ -x $lobster && -x $load ]] || die "no binaries at $lobster and $load after the build"

steps_out=$repo_root/examples/steps/target/wasm32-wasip2/release
if [[ ! -f $steps_out/inbox_categorize.wasm || ! -f $steps_out/email_triage.wasm ]]; then
    log "building the example steps (wasm32-wasip2, release)"
    cargo build --release --target wasm32-wasip2 --manifest-path "$repo_root/examples/steps/Cargo.toml" \
        --target-dir "$repo_root/examples/steps/target" >&2 ||
        die "building examples/steps failed (rustup target add wasm32-wasip2, or run tests/build-guests.sh)"
fi

# ---------------------------------------------------------------- set-up
work=$(mktemp -d "${TMPDIR:-/tmp}/lobster-serve-bench.XXXXXX")
server_pid=''
cleanup() {
    if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then
        kill -TERM "$server_pid" 2>/dev/null || true
        for _ in $(seq 50); do
            kill -0 "$server_pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$server_pid" 2>/dev/null || true
    fi
    if [[ -n ${SERVE_BENCH_KEEP:-} ]]; then
        log "kept $work"
    else
        rm -rf -- "$work"
    fi
}
trap cleanup EXIT

mkdir -p "$work/cli-state" "$work/cli-run"
# shellcheck source=runtime/benches/bench5.sh
. "$script_dir/bench5.sh"
bench5_setup "$work" "$steps_out"

bench_cases
token=$LOBSTER_BENCH_TOKEN pipeline_body=$body_a workflow_body=$body_b

# ---------------------------------------------------------------- server
log "starting lobster serve"
"$lobster" serve --config "$work/serve.toml" >"$work/serve.out" 2>"$work/serve.err" &
server_pid=$!

server_tail() {
    log "--- last lines of the server's stderr ($work/serve.err):"
    tail -n 20 -- "$work/serve.err" >&2 || true
    SERVE_BENCH_KEEP=1
}

base=''
for _ in $(seq $((ready_seconds * 10))); do
    if [[ -s $work/serve.out ]]; then
        first=$(head -n 1 -- "$work/serve.out")
        if [[ $first =~ ^lobster\ serve\ listening\ on\ (http://127\.0\.0\.1:[0-9]+)$ ]]; then
            base=${BASH_REMATCH[1]}
            break
        fi
        # A partial line may still be arriving; a complete wrong one is fatal.
        if [[ $(wc -l <"$work/serve.out") -ge 1 ]]; then
            server_tail
            die "the server's first stdout line is not the ready line: got '$first', expected 'lobster serve listening on http://127.0.0.1:PORT'"
        fi
    fi
    if ! kill -0 "$server_pid" 2>/dev/null; then
        wait "$server_pid" && status=0 || status=$?
        server_pid=''
        server_tail
        die "lobster serve exited (status $status) before printing its ready line"
    fi
    sleep 0.1
done
if [[ -z $base ]]; then
    server_tail
    die "no ready line ('lobster serve listening on http://127.0.0.1:PORT') on the server's stdout within ${ready_seconds}s"
fi
log "server $server_pid at $base"

# probe BODY: one run through the API must answer 200 with ok: true.
probe() {
    python3 - "$base/v1/runs?wait=10000" "$token" "$1" <<'PY' || return 1
import json, sys, urllib.request, urllib.error
url, token, body = sys.argv[1:]
req = urllib.request.Request(url, data=body.encode(), method="POST",
    headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
try:
    with urllib.request.urlopen(req, timeout=30) as r:
        status, text = r.status, r.read().decode()
except urllib.error.HTTPError as e:
    status, text = e.code, e.read().decode()
except OSError as e:
    sys.exit(f"POST {url}: {e}")
try:
    answer = json.loads(text)
except ValueError:
    answer = None
if status != 200 or not isinstance(answer, dict) or answer.get("ok") is not True:
    sys.exit(f"POST {url} {body} answered {status}: {text[:500]}")
PY
}
probe "$pipeline_body" || { server_tail; die "the pipeline case does not run through the API"; }
probe "$workflow_body" || { server_tail; die "the workflow case does not run through the API"; }

# The spawned baseline must work too.
export LOBSTER_STEP_PATH=$work/steps LOBSTER_STATE_DIR=$work/cli-state
spawn_pipeline="'$lobster' run --mode tool '$pipeline'"
spawn_workflow="'$lobster' run --mode tool '$work/workflows/bench5.lobster'"
for cmd in "$spawn_pipeline" "$spawn_workflow"; do
    (cd "$work/cli-run" && "$load" --exec "$cmd" -c 1 -n 1 >/dev/null) ||
        die "the spawned baseline fails: $cmd"
done

results=$work/results.jsonl
: >"$results"

# measure CASE MODE CLIENTS ARGS...: one lobster-load run, its report
# appended to $results with the case, mode and clients.
# CPU per run: for serve, the server's user+sys ticks (/proc/PID/stat)
# over the case; for spawn, everything the load generator and the
# processes it spawned used (/usr/bin/time), divided by the runs.
clk_tck=$(getconf CLK_TCK)
server_ticks() { awk '{ print $14 + $15 }' "/proc/$server_pid/stat"; }
measure() {
    local case=$1 mode=$2 clients=$3 report before cpu_s
    shift 3
    log "  $case / $mode / $clients client(s), ${seconds}s"
    before=$(server_ticks)
    : >"$work/time.out"
    local timer=()
    [[ $mode == spawn ]] && timer=(/usr/bin/time -f '%U %S' -o "$work/time.out")
    if ! report=$(cd "$work/cli-run" && "${timer[@]}" "$load" "$@" -c "$clients" -d "$seconds" 2>"$work/load.err"); then
        cat -- "$work/load.err" >&2
        [[ $mode == serve ]] && server_tail
        die "every request of $case / $mode / $clients failed"
    fi
    if [[ -s $work/load.err ]]; then
        sed 's/^/    /' -- "$work/load.err" >&2
    fi
    if [[ $mode == spawn ]]; then
        cpu_s=$(awk '{ print $1 + $2 }' "$work/time.out")
    else
        cpu_s=$(awk -v a="$before" -v b="$(server_ticks)" -v t="$clk_tck" 'BEGIN { print (b - a) / t }')
    fi
    python3 -c 'import json,sys; r=json.loads(sys.argv[4]); r.update(case=sys.argv[1], kind=sys.argv[2], c=int(sys.argv[3]), cpu_s=float(sys.argv[5])); print(json.dumps(r))' \
        "$case" "$mode" "$clients" "$report" "$cpu_s" >>"$results"
}

serve_args=(--url "$base/v1/runs?wait=10000" --header "Authorization: Bearer $token" --expect-status 200)

log "warming up"
"$load" "${serve_args[@]}" --body-json "$pipeline_body" -c 16 -n 500 >/dev/null
"$load" "${serve_args[@]}" --body-json "$workflow_body" -c 16 -n 500 >/dev/null

log "measuring"
for c in $clients_list; do
    measure "(a) 3-stage pipeline" serve "$c" "${serve_args[@]}" --body-json "$pipeline_body"
    if [[ $spawn == 1 ]]; then measure "(a) 3-stage pipeline" spawn "$c" --exec "$spawn_pipeline"; fi
    measure "(b) 5-step wasm workflow" serve "$c" "${serve_args[@]}" --body-json "$workflow_body"
    if [[ $spawn == 1 ]]; then measure "(b) 5-step wasm workflow" spawn "$c" --exec "$spawn_workflow"; fi
done

# Open loop: a fixed offered rate at 16 clients, latency from when each
# request was due (lobster-load --rate).
if [[ -n $rates ]]; then
    read -r rate_a rate_b <<<"$rates"
    [[ $rate_a =~ ^[1-9][0-9]*$ && $rate_b =~ ^[1-9][0-9]*$ ]] ||
        die "SERVE_BENCH_RATES must be two positive whole numbers, got '$rates'"
    measure "(a) 3-stage pipeline" "serve @${rate_a}/s" 16 "${serve_args[@]}" --body-json "$pipeline_body" --rate "$rate_a"
    measure "(b) 5-step wasm workflow" "serve @${rate_b}/s" 16 "${serve_args[@]}" --body-json "$workflow_body" --rate "$rate_b"
fi

rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$server_pid/status"; }
rss_lines=()
if [[ $runs -gt 0 ]]; then
    rss_lines+=("| before | $(rss_kib) |")
    # Each case twice: the first batch fills what is meant to fill (the run
    # log's last 4,096 records, warm pool slots, allocator arenas); growth
    # in the second batch would be a leak.
    for which in pipeline pipeline workflow workflow; do
        body=$pipeline_body
        [[ $which == workflow ]] && body=$workflow_body
        log "RSS: $runs runs of the $which case at 16 clients"
        if ! report=$("$load" "${serve_args[@]}" --body-json "$body" -c 16 -n "$runs" 2>"$work/load.err"); then
            cat -- "$work/load.err" >&2
            server_tail
            die "every request of the RSS run ($which) failed"
        fi
        errors=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["errors"])' "$report")
        rss_lines+=("| after $runs more $which runs ($errors errors) | $(rss_kib) |")
    done
fi

# ---------------------------------------------------------------- shutdown
kill -TERM "$server_pid"
shutdown_note='exited 0 on SIGTERM'
if wait "$server_pid"; then :; else shutdown_note="exited $? on SIGTERM (expected 0)"; fi
server_pid=''

# ---------------------------------------------------------------- report
printf '## lobster serve benchmark\n\n'
# shellcheck disable=SC2016 # the backquotes are Markdown
printf '%s, %s cores, %ss per case; serve = `POST /v1/runs?wait=10000` on kept-alive connections, spawn = one `lobster run --mode tool` per request. Server %s.\n\n' \
    "$(date -u +%Y-%m-%dT%H:%MZ)" "$(nproc)" "$seconds" "$shutdown_note"
python3 - "$results" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
spawn = {(r["case"], r["c"]): r["rps"] for r in rows if r["kind"] == "spawn"}
cpu = {(r["case"], r["c"]): r["cpu_s"] * 1000 / max(r["requests"], 1) for r in rows if r["kind"] == "spawn"}
print("| case | mode | clients | runs/s | p50 ms | p99 ms | errors | vs spawn | CPU ms/run | CPU vs spawn |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for r in rows:
    base = spawn.get((r["case"], r["c"]))
    ratio = "1.0" if r["kind"] == "spawn" else (f'{r["rps"] / base:.1f}x' if base else "n/a")
    if r["kind"].startswith("serve @"):
        ratio = "open loop"
    per_run = r["cpu_s"] * 1000 / max(r["requests"], 1)
    base_cpu = cpu.get((r["case"], r["c"]))
    cpu_ratio = "1.0" if r["kind"] == "spawn" else (f"{base_cpu / per_run:.1f}x" if base_cpu and per_run else "n/a")
    print(f'| {r["case"]} | {r["kind"]} | {r["c"]} | {r["rps"]:.0f} | {r["p50_ms"]:.2f} '
          f'| {r["p99_ms"]:.2f} | {r["errors"]} | {ratio} | {per_run:.3f} | {cpu_ratio} |')
PY
if [[ ${#rss_lines[@]} -gt 0 ]]; then
    printf '\n| server RSS | KiB |\n|---|---:|\n'
    printf '%s\n' "${rss_lines[@]}"
fi
