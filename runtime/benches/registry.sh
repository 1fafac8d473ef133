#!/usr/bin/env bash
# Publish and pull times through a real OCI registry on loopback
# (tests/registry.sh: Debian's docker-registry), lobster against what a
# WebAssembly user runs instead: `wkg oci push/pull` (wasm-pkg-tools 0.16.1,
# built by tests/interop/wkg.sh). Whole processes, the four commands
# alternated per run so load drift hits both tools alike; every run pushes
# to a repository of its own (nothing is skipped as "already there") and
# every lobster pull starts from an empty state directory (no cache hit).
#
#   BENCH_RUNS=7 bash runtime/benches/registry.sh [FILE.wasm ...]
#
# Default files: the example steps and, when built (tests/build-polyglot.sh),
# the Python step examples/steps/target/polyglot/inbox-categorize-py.wasm.
# Needs a release lobster (cargo build --release -p lobster) and wkg
# (WKG=/path/to/wkg, default target/interop-tools/bin/wkg). Prints a
# markdown table: median wall and cpu (user+sys) milliseconds per command.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
lobster="${LOBSTER:-$root/target/release/lobster}"
wkg="${WKG:-$root/target/interop-tools/bin/wkg}"
runs="${BENCH_RUNS:-7}"
[ -x "$lobster" ] || { echo "no release lobster at $lobster (cargo build --release -p lobster)" >&2; exit 2; }
[ -x "$wkg" ] || { echo "no wkg at $wkg (bash tests/interop/wkg.sh builds it)" >&2; exit 2; }
if [ $# -eq 0 ]; then
  set -- "$root"/examples/steps/target/wasm32-wasip2/release/*.wasm
  py="$root/examples/steps/target/polyglot/inbox-categorize-py.wasm"
  [ -f "$py" ] && set -- "$@" "$py"
fi

lobster=$(realpath "$lobster")
wkg=$(realpath "$wkg")
files=()
for f in "$@"; do files+=("$(realpath "$f")"); done
set -- "${files[@]}"

work=$(mktemp -d)
reg="$work/registry"
cleanup() { bash "$root/tests/registry.sh" stop "$reg" || true; rm -rf "$work"; }
trap cleanup EXIT
addr=$(bash "$root/tests/registry.sh" start "$reg")
printf 'insecure_registries = ["%s"]\n' "$addr" >"$work/policy.toml"

echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "- machine: $(nproc) cores; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "- lobster: $("$lobster" --version 2>/dev/null | head -1) ($(git -C "$root" rev-parse --short HEAD)), $("$wkg" --version)"
echo "- registry: docker-registry $(docker-registry --version 2>/dev/null | awk '{print $3}') on $addr (plain http, filesystem storage); $runs runs each"
echo

python3 - "$lobster" "$wkg" "$addr" "$work" "$runs" "$@" <<'PY'
import os, statistics, subprocess, sys, time

lobster, wkg, addr, work, runs = sys.argv[1:6]
runs = int(runs)
files = sys.argv[6:]
policy = os.path.join(work, "policy.toml")


def timed(cmd, env=None):
    start = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=work)
    out, err = p.communicate()
    wall = time.monotonic() - start
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{out.decode()}\n{err.decode()}")
    return wall


def cpu_of(fn):
    before = os.times()
    wall = fn()
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return wall * 1000, cpu * 1000


results = {}
for i in range(runs):
    for f in files:
        name = os.path.basename(f).removesuffix(".wasm")
        r = results.setdefault(name, {"size": os.path.getsize(f)})
        lrepo = f"{addr}/bench/lobster-{name}-{i}:0.1"
        wrepo = f"{addr}/bench/wkg-{name}-{i}:0.1"
        steps = [
            ("lobster publish", lambda: timed([lobster, "step", "publish", f, f"oci://{lrepo}", "--policy", policy])),
            ("wkg push", lambda: timed([wkg, "oci", "push", "--insecure", addr, wrepo, f])),
        ]
        state = os.path.join(work, f"state-{name}-{i}")
        env = dict(os.environ, LOBSTER_STATE_DIR=state)
        out_l = os.path.join(work, f"l-{name}-{i}.wasm")
        out_w = os.path.join(work, f"w-{name}-{i}.wasm")
        steps += [
            ("lobster pull", lambda: timed([lobster, "step", "pull", f"oci://{lrepo}", "-o", out_l, "--policy", policy], env)),
            ("wkg pull", lambda: timed([wkg, "oci", "pull", "--insecure", addr, wrepo, "-o", out_w])),
        ]
        for label, fn in steps:
            r.setdefault(label, []).append(cpu_of(fn))
        for out in (out_l, out_w):
            with open(out, "rb") as a, open(f, "rb") as b:
                if a.read() != b.read():
                    sys.exit(f"{out}: other bytes than {f}")
            os.remove(out)
        subprocess.run(["rm", "-rf", state])

labels = ["lobster publish", "wkg push", "lobster pull", "wkg pull"]
print("| step (size) | " + " | ".join(labels) + " | publish ratio | pull ratio |")
print("|---|" + "---:|" * (len(labels) + 2))
for name, r in results.items():
    med = {l: (statistics.median(w for w, _ in r[l]), statistics.median(c for _, c in r[l])) for l in labels}
    cells = [f"{med[l][0]:.0f} ms ({med[l][1]:.0f} cpu)" for l in labels]
    pub = med["lobster publish"][0] / med["wkg push"][0]
    pull = med["lobster pull"][0] / med["wkg pull"][0]
    print(f"| {name} ({r['size'] / 1e6:.2f} MB) | " + " | ".join(cells) + f" | {pub:.2f}× | {pull:.2f}× |")
print()
print("Wall and cpu (user+sys of the process) medians in ms; ratio = lobster wall / wkg wall (below 1: lobster faster).")
PY
echo
echo "- load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
