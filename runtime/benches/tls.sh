#!/usr/bin/env bash
# Brokered call latency over loopback, plain http against https (each call
# is one connection, so the https figure includes a full TLS handshake):
# `openclaw.invoke --each` over N distinct items against `lobster-stubs
# gateway` and `lobster-stubs gateway --tls`, best of R runs.
#
#   runtime/benches/tls.sh            # BENCH_ITEMS=200 BENCH_RUNS=5, debug build
#   BENCH_PROFILE=release runtime/benches/tls.sh
set -euo pipefail
script_dir=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd -- "$script_dir/../.." && pwd)
target_dir=${CARGO_TARGET_DIR:-$repo_root/target}
profile=${BENCH_PROFILE:-debug}
items=${BENCH_ITEMS:-200}
runs=${BENCH_RUNS:-5}
flag=""; [ "$profile" = release ] && flag="--release"
echo "building lobster ($profile)" >&2
cargo build --quiet $flag -p lobster --manifest-path "$repo_root/Cargo.toml"
bin="$target_dir/$profile"
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
python3 -c "import json,sys; print(json.dumps([{'n': i} for i in range(int(sys.argv[1]))]))" "$items" >"$work/items.json"
printf '[gateway]\nca_file = "ca.pem"\n' >"$work/policy.toml"
start_stub() { # name, extra flags…
    local name=$1; shift
    "$bin/lobster-stubs" gateway "$@" >"$work/$name.url" &
    pids+=($!)
    for _ in $(seq 100); do [ -s "$work/$name.url" ] && break; sleep 0.05; done
}
start_stub plain
start_stub tls --tls --ca-out "$work/ca.pem"
pipeline="exec --json cat items.json | openclaw.invoke --tool echo --action x --each --item-key item"
measure() { # url -> "wall_ms cpu_ms" (medians, lobster's own process; see timeit.py)
    python3 "$script_dir/timeit.py" --runs "$runs" --cwd "$work" --env "OPENCLAW_URL=$1" -- \
        "$bin/lobster" run --mode tool --policy policy.toml "$pipeline" | awk -F'\t' '$1 == "ok" { print $2, $3 }'
}
read -r plain_wall plain_cpu <<<"$(measure "$(head -1 "$work/plain.url")")"
read -r tls_wall tls_cpu <<<"$(measure "$(head -1 "$work/tls.url")")"
awk -v n="$items" -v pw="$plain_wall" -v pc="$plain_cpu" -v tw="$tls_wall" -v tc="$tls_cpu" -v prof="$profile" 'BEGIN {
    printf "profile %s, %d calls per run, medians of the runs (client process only for cpu)\n", prof, n
    printf "http : %7.1f ms wall %7.1f ms cpu, %.2f ms wall per call\n", pw, pc, pw / n
    printf "https: %7.1f ms wall %7.1f ms cpu, %.2f ms wall per call (handshake + request)\n", tw, tc, tw / n
    printf "TLS adds %.2f ms wall, %.2f ms client cpu per call\n", (tw - pw) / n, (tc - pc) / n
}'
