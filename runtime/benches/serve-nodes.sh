#!/usr/bin/env bash
# `lobster serve` over the store (issue 15): pause + resume of a gated run
# through the HTTP API with the files store (1 node), PostgreSQL (1 node)
# and PostgreSQL (2 nodes on one database: each pair pauses on one node and
# resumes on the other). Markdown table on stdout, progress on stderr.
#
#   runtime/benches/serve-nodes.sh
#
# Environment:
#   LOBSTER_BIN=PATH        the binary (default: target/release/lobster, built if missing)
#   BENCH_PG_URL=URL        the database (default: a throwaway cluster from tests/pg.sh)
#   BENCH_PAIRS=400         pause+resume pairs per case
#   BENCH_CLIENTS=8         concurrent clients (keep-alive connections)
#
# One pair = `POST /v1/runs` {pipeline: "exec … | approve | exec …"} (trusted policy)
# (answers needs_approval) then `POST /v1/runs/{id}/resume {approve: true}`
# (answers ok). Figures: pairs/s over the whole case, p50/p99 of one pair.
set -euo pipefail
script_dir=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd -- "$script_dir/../.." && pwd)
cd "$repo_root"
bin=${LOBSTER_BIN:-$repo_root/target/release/lobster}
if [[ ! -x $bin ]]; then
    cargo build --release -p lobster --bin lobster >&2
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
import http.client, json, os, secrets, subprocess, sys, tempfile, threading, time

bin_ = os.environ["LOBSTER_BIN"]
url = os.environ["BENCH_URL"]
pairs = int(os.environ.get("BENCH_PAIRS", "400"))
clients = int(os.environ.get("BENCH_CLIENTS", "8"))
pipeline = "exec --json --shell 'echo [1]' | approve --prompt ok? | exec --shell 'echo done'"

def node(dirpath, state, name, token):
    cfg = os.path.join(dirpath, f"{name}.toml")
    with open(os.path.join(dirpath, "trusted.toml"), "w") as f:
        f.write('trust = "trusted"\n')
    with open(cfg, "w") as f:
        f.write(f'state = "{state}"\nnode_id = "{name}"\n'
                f'[[tenant]]\nname = "bench"\ntoken_env = "BENCH_TOKEN"\nself_approve = true\npolicy = "trusted.toml"\n'
                f'max_concurrent_runs = 256\nrequests_per_minute = 10000000\n')
    env = dict(os.environ, BENCH_TOKEN=token, LOBSTER_STATE_DIR=os.path.join(dirpath, name))
    p = subprocess.Popen([bin_, "serve", "--config", cfg, "--listen", "127.0.0.1:0"],
                         env=env, stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    addr = line.strip().rsplit("http://", 1)[1]
    host, port = addr.split(":")
    return p, (host, int(port))

def call(conn, path, body, token):
    conn.request("POST", path, json.dumps(body),
                 {"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    r = conn.getresponse()
    data = r.read()
    assert r.status == 200, (r.status, data)
    return json.loads(data)

def case(label, state, n_nodes):
    token = secrets.token_hex(16)
    with tempfile.TemporaryDirectory() as d:
        procs = [node(d, state if state != "files" else os.path.join(d, "state"), f"n{i}-{secrets.token_hex(3)}", token)
                 for i in range(n_nodes)]
        try:
            times, lock = [], threading.Lock()
            todo = iter(range(pairs))
            def client(i):
                a = http.client.HTTPConnection(*procs[i % n_nodes][1])
                b = http.client.HTTPConnection(*procs[(i + 1) % n_nodes][1])
                while True:
                    with lock:
                        if next(todo, None) is None:
                            return
                    t0 = time.perf_counter()
                    v = call(a, "/v1/runs", {"pipeline": pipeline}, token)
                    assert v["status"] == "needs_approval", v
                    w = call(b, f"/v1/runs/{v['runId']}/resume", {"approve": True}, token)
                    assert w.get("status") == "ok", w
                    with lock:
                        times.append(time.perf_counter() - t0)
            # warm-up
            call(http.client.HTTPConnection(*procs[0][1]), "/v1/runs", {"pipeline": "commands.list"}, token)
            t0 = time.perf_counter()
            ts = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
            for t in ts: t.start()
            for t in ts: t.join()
            wall = time.perf_counter() - t0
        finally:
            for p, _ in procs:
                p.terminate(); p.wait()
    times.sort()
    p = lambda q: times[min(len(times) - 1, int(q * len(times)))] * 1000
    return f"| {label} | {n_nodes} | {clients} | {pairs / wall:.1f} | {p(0.5):.1f} | {p(0.99):.1f} |"

print(f"pause+resume pairs through lobster serve, {pairs} per case ({bin_})\n")
print("| store | nodes | clients | pairs/s | p50 ms | p99 ms |")
print("|---|---|---|---|---|---|")
for label, state, n in (("files", "files", 1), ("postgres", url, 1), ("postgres", url, 2)):
    print(case(label, state, n), flush=True)
PY
