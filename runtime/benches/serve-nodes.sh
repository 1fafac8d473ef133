#!/usr/bin/env bash
# `lobster serve` over the store (issue 15): pause + resume of a gated run
# through the HTTP API with the files store (1 node), PostgreSQL (1 node)
# and PostgreSQL (2 nodes on one database: each pair pauses on one node and
# resumes on the other). Markdown table on stdout, progress on stderr.
#
# A node per machine, modelled on one box: each node is pinned to a core of
# its own with `taskset -c` (one node: CPU 0; two nodes: CPU 0 and CPU 1);
# PostgreSQL and the client are not pinned. So one node has one core, two
# nodes have two, and the ratio says how far the work spreads over nodes
# sharing one database. The CPU each part used over a case (utime+stime
# from /proc/<pid>/stat; a node's reaped children, the shells `exec`
# starts, included; PostgreSQL: the postmaster and its backends) is
# reported as cores busy (CPU seconds / wall seconds), so the reader sees
# where the time goes: a part at 1.0 is the bottleneck.
#
#   runtime/benches/serve-nodes.sh
#
# A node per machine can also be modelled with a CPU budget: BENCH_NODE_CPU=0.5
# starts every node in a cgroup of its own capped at half a core (cgroup v1
# cpu.cfs_quota_us or v2 cpu.max; the shells a node starts count against its
# budget), pinning off. The database and the client then have the rest of
# the machine, as they would on machines of their own, and one node's
# throughput is what half a core of node buys.
#
# Environment:
#   LOBSTER_BIN=PATH        the binary (default: target/release/lobster, built if missing)
#   BENCH_PG_URL=URL        the database (default: a throwaway cluster from tests/pg.sh)
#   BENCH_PAIRS=400         pause+resume pairs per case
#   BENCH_CLIENTS=8         concurrent clients (keep-alive connections)
#   BENCH_PIN=1             pin node i to CPU i (0: no pinning)
#   BENCH_CASES=files1,pg1,pg2  which cases to run (default: all three)
#   BENCH_NODE_CPU=F        cap each node at F cores with a cgroup (needs root and a
#                           writable cgroup cpu controller; implies BENCH_PIN=0)
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
from urllib.parse import urlparse, parse_qs

bin_ = os.environ["LOBSTER_BIN"]
url = os.environ["BENCH_URL"]
pairs = int(os.environ.get("BENCH_PAIRS", "400"))
clients = int(os.environ.get("BENCH_CLIENTS", "8"))
node_cpu = float(os.environ.get("BENCH_NODE_CPU", "0") or 0)
pin = os.environ.get("BENCH_PIN", "1") != "0" and not node_cpu
ncpu = os.cpu_count() or 1
tick = os.sysconf("SC_CLK_TCK")

def cpu_of(pid, children=True):
    # utime+stime (+ reaped children's) of pid, in seconds.
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    n = int(fields[11]) + int(fields[12])
    if children:
        n += int(fields[13]) + int(fields[14])
    return n / tick

def pg_pids():
    # The postmaster of the database's socket directory (tests/pg.sh keeps
    # its data there) and its backends.
    host = parse_qs(urlparse(url).query).get("host", [""])[0]
    try:
        with open(os.path.join(host, "postmaster.pid")) as f:
            master = int(f.readline())
    except (OSError, ValueError):
        return []
    pids = [master]
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == master:
                        pids.append(int(d))
            except (OSError, ValueError):
                pass
    return pids

def pg_cpu():
    return sum(cpu_of(p, children=False) for p in pg_pids())
pipeline = "exec --json --shell 'echo [1]' | approve --prompt ok? | exec --shell 'echo done'"

PERIOD_US = 100_000

def cgroup_for(name):
    # A cgroup capped at node_cpu cores: v1 (cpu controller mounted at
    # /sys/fs/cgroup/cpu) or v2 (cpu.max). Returns (its cgroup.procs, its dir).
    quota = int(node_cpu * PERIOD_US)
    v1 = "/sys/fs/cgroup/cpu"
    if os.path.isfile(os.path.join(v1, "cgroup.procs")):
        d = os.path.join(v1, f"lobster-bench-{name}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "cpu.cfs_period_us"), "w") as f: f.write(str(PERIOD_US))
        with open(os.path.join(d, "cpu.cfs_quota_us"), "w") as f: f.write(str(quota))
    else:
        d = os.path.join("/sys/fs/cgroup", f"lobster-bench-{name}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "cpu.max"), "w") as f: f.write(f"{quota} {PERIOD_US}")
    return os.path.join(d, "cgroup.procs"), d

cgroups = []

def node(dirpath, state, name, token, cpu):
    cfg = os.path.join(dirpath, f"{name}.toml")
    with open(os.path.join(dirpath, "trusted.toml"), "w") as f:
        f.write('trust = "trusted"\n')
    with open(cfg, "w") as f:
        f.write(f'state = "{state}"\nnode_id = "{name}"\n'
                f'[[tenant]]\nname = "bench"\ntoken_env = "BENCH_TOKEN"\nself_approve = true\npolicy = "trusted.toml"\n'
                f'max_concurrent_runs = 256\nrequests_per_minute = 10000000\n')
    env = dict(os.environ, BENCH_TOKEN=token, LOBSTER_STATE_DIR=os.path.join(dirpath, name))
    pinned = ["taskset", "-c", str(cpu % ncpu)] if pin else []
    argv = [bin_, "serve", "--config", cfg, "--listen", "127.0.0.1:0"]
    if node_cpu:
        procs, d = cgroup_for(name)
        cgroups.append(d)
        # Join the cgroup, then become the node: its shells are born inside.
        argv = ["sh", "-c", f'echo $$ > "{procs}" && exec "$@"', "sh"] + argv
    p = subprocess.Popen(pinned + argv, env=env, stdout=subprocess.PIPE, text=True)
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
        procs = [node(d, state if state != "files" else os.path.join(d, "state"), f"n{i}-{secrets.token_hex(3)}", token, i)
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
            nodes0 = [cpu_of(p.pid) for p, _ in procs]
            pg0 = pg_cpu() if state != "files" else 0.0
            me0 = sum(os.times()[:2])
            t0 = time.perf_counter()
            ts = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
            for t in ts: t.start()
            for t in ts: t.join()
            wall = time.perf_counter() - t0
            busy = lambda s: f"{s / wall:.2f}"
            node_cpu = " + ".join(busy(cpu_of(p.pid) - c0) for (p, _), c0 in zip(procs, nodes0))
            pg_busy = busy(pg_cpu() - pg0) if state != "files" else "–"
            me_busy = busy(sum(os.times()[:2]) - me0)
        finally:
            for p, _ in procs:
                p.terminate(); p.wait()
            while cgroups:
                try:
                    os.rmdir(cgroups.pop())
                except OSError:
                    pass
    times.sort()
    p = lambda q: times[min(len(times) - 1, int(q * len(times)))] * 1000
    return (f"| {label} | {n_nodes} | {clients} | {pairs / wall:.1f} | {p(0.5):.1f} | {p(0.99):.1f} "
            f"| {node_cpu} | {pg_busy} | {me_busy} |")

where = (f"each node capped at {node_cpu:g} cores by a cgroup" if node_cpu
         else "node i pinned to CPU i" if pin else "not pinned")
print(f"pause+resume pairs through lobster serve, {pairs} per case ({bin_}; {where}, {ncpu} CPUs)\n")
print("| store | nodes | clients | pairs/s | p50 ms | p99 ms | node cores busy | PostgreSQL cores busy | client cores busy |")
print("|---|---|---|---|---|---|---|---|---|")
wanted = os.environ.get("BENCH_CASES", "files1,pg1,pg2").split(",")
for key, label, state, n in (("files1", "files", "files", 1), ("pg1", "postgres", url, 1),
                             ("pg2", "postgres", url, 2)):
    if key in wanted:
        print(case(label, state, n), flush=True)
PY
