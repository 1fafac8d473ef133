#!/usr/bin/env bash
# Pause + resume of a gated run, whole processes, with the files store and
# with PostgreSQL, side by side (Markdown table on stdout).
#
#   runtime/benches/store.sh
#
# Environment:
#   LOBSTER_BIN=PATH        the binary (default: target/release/lobster, built if missing)
#   BENCH_PG_URL=URL        the database (default: a throwaway cluster from tests/pg.sh)
#   BENCH_PAIRS=200         pause+resume pairs per case
#   BENCH_CONCURRENCY=1 4   client counts to run (each a row per store)
#
# One pair = `lobster run --mode tool '<source> | approve | exec …'` (pauses)
# then `lobster resume --id <approvalId> --approve yes` (claims, runs the
# last stage). Figures: pairs/s over the whole case, and p50/p99 of one pair.
set -euo pipefail
script_dir=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd -- "$script_dir/../.." && pwd)
cd "$repo_root"
bin=${LOBSTER_BIN:-$repo_root/target/release/lobster}
if [[ ! -x $bin ]]; then
    cargo build --release -p lobster >&2
fi
url=${BENCH_PG_URL:-}
started=
if [[ -z $url ]]; then
    url=$(bash tests/pg.sh start)
    started=1
fi
cleanup() { if [[ -n $started ]]; then bash tests/pg.sh stop; fi; }
trap cleanup EXIT
export LOBSTER_BIN=$bin BENCH_URL=$url
exec python3 - <<'PY'
import json, os, subprocess, tempfile, time
from concurrent.futures import ThreadPoolExecutor

bin_ = os.environ["LOBSTER_BIN"]
url = os.environ["BENCH_URL"]
pairs = int(os.environ.get("BENCH_PAIRS", "200"))
levels = [int(c) for c in os.environ.get("BENCH_CONCURRENCY", "1 4").split()]
pipeline = "exec --json --shell 'echo [1]' | approve --prompt ok? | exec --shell 'echo done'"

def pair(env):
    t0 = time.perf_counter()
    out = subprocess.run([bin_, "run", "--mode", "tool", pipeline], env=env,
                         capture_output=True, text=True, check=True).stdout
    ident = json.loads(out)["requiresApproval"]["approvalId"]
    r = subprocess.run([bin_, "resume", "--id", ident, "--approve", "yes"], env=env,
                       capture_output=True, text=True)
    assert r.returncode == 0 and json.loads(r.stdout)["status"] == "ok", r
    return time.perf_counter() - t0

def case(store, clients):
    with tempfile.TemporaryDirectory() as state:
        env = dict(os.environ, LOBSTER_STATE_DIR=state)
        env.pop("LOBSTER_STORE", None)
        if store == "postgres":
            env["LOBSTER_STORE"] = url
        pair(env)  # warm-up (and migration)
        t0 = time.perf_counter()
        with ThreadPoolExecutor(clients) as pool:
            times = sorted(pool.map(lambda _: pair(env), range(pairs)))
        wall = time.perf_counter() - t0
    p = lambda q: times[min(len(times) - 1, int(q * len(times)))] * 1000
    return f"| {store} | {clients} | {pairs / wall:.1f} | {p(0.5):.1f} | {p(0.99):.1f} |"

print(f"pause+resume pairs, {pairs} per case ({os.path.basename(bin_)}: {bin_})\n")
print("| store | clients | pairs/s | p50 ms | p99 ms |")
print("|---|---|---|---|---|")
for clients in levels:
    for store in ("files", "postgres"):
        print(case(store, clients), flush=True)
PY
