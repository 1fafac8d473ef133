#!/usr/bin/env python3
"""Paired bursts for journal_pairs.sh (see there): two `lobster serve`
processes of one binary, journal on and journal off, started once and
warmed; then short closed-loop bursts against each in turn (on-off, then
off-on, ...), each burst's runs/s and the server's CPU per run (utime +
stime from /proc) taken; the ratio of each pair is what is reported."""

import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time

USAGE = "journal_pairs.py BIN_DIR WORK CASE BODY_JSON PAIRS SECONDS CLIENTS"


def fail(msg):
    sys.exit(f"journal_pairs.py: {msg}")


def main():
    if len(sys.argv) != 8:
        fail(f"usage: {USAGE}")
    bin_dir, work, case, body, pairs, secs, clients = sys.argv[1:]
    pairs, secs, clients = int(pairs), int(secs), int(clients)
    token = os.environ.get("LOBSTER_BENCH_TOKEN") or fail("LOBSTER_BENCH_TOKEN is not set")
    tick = os.sysconf("SC_CLK_TCK")
    servers = {}
    try:
        for mode in ("on", "off"):
            state = f"{work}/state-{mode}"
            os.makedirs(state, exist_ok=True)
            cfg = re.sub(r"(?m)^state = .*$", f'state = "{state}"', open(f"{work}/serve.toml").read())
            path = f"{work}/serve-{mode}.toml"
            with open(path, "w") as f:
                f.write(cfg)
            env = dict(os.environ)
            if mode == "off":
                env["LOBSTER_JOURNAL"] = "off"
            out = f"{work}/serve-{mode}.out"
            with open(out, "w") as o, open(f"{work}/serve-{mode}.err", "w") as e:
                p = subprocess.Popen([f"{bin_dir}/lobster", "serve", "--config", path], stdout=o, stderr=e, env=env)
            base = None
            for _ in range(300):
                m = re.search(r"listening on (http://127\.0\.0\.1:\d+)", open(out).read())
                if m:
                    base = m.group(1)
                    break
                if p.poll() is not None:
                    fail(f"serve ({mode}) exited: {open(f'{work}/serve-{mode}.err').read()[-2000:]}")
                time.sleep(0.1)
            if base is None:
                fail(f"serve ({mode}) printed no ready line in 30 s")
            servers[mode] = (p, base)

        def cpu(pid):
            fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / tick

        def burst(mode, limit):
            p, base = servers[mode]
            args = [f"{bin_dir}/lobster-load", "--url", f"{base}/v1/runs?wait=60000",
                    "--header", f"Authorization: Bearer {token}", "--expect-status", "200",
                    "--body-json", body, "-c", str(clients)] + limit
            before = cpu(p.pid)
            r = subprocess.run(args, capture_output=True, text=True)
            after = cpu(p.pid)
            try:
                d = json.loads(r.stdout.strip().splitlines()[-1])
            except (ValueError, IndexError):
                fail(f"lobster-load said: {r.stdout}{r.stderr}")
            if d.get("errors"):
                fail(f"case ({case}), journal {mode}: {d['errors']} requests failed: {d.get('statuses')}")
            return d["rps"], (after - before) * 1000 / d["requests"]

        for mode in servers:
            burst(mode, ["-n", "1500"])
        res = {"on": [], "off": []}
        for i in range(pairs):
            for mode in (("on", "off") if i % 2 == 0 else ("off", "on")):
                res[mode].append(burst(mode, ["-d", str(secs)]))
                print(f"  pair {i + 1}/{pairs}, journal {mode}: {res[mode][-1][0]:.0f} runs/s", file=sys.stderr)
    finally:
        for p, _ in servers.values():
            p.send_signal(signal.SIGTERM)
            p.wait()

    med = statistics.median
    rps = [100 * (a[0] / b[0] - 1) for a, b in zip(res["on"], res["off"])]
    cpu_ = [100 * (a[1] / b[1] - 1) for a, b in zip(res["on"], res["off"])]
    sem = lambda xs: statistics.stdev(xs) / len(xs) ** 0.5 if len(xs) > 1 else float("nan")
    label = {"a": "(a) 3-stage pipeline", "b": "(b) 5-step wasm workflow"}[case]
    print(f"| {label} runs/s | {med(x[0] for x in res['on']):.0f} | {med(x[0] for x in res['off']):.0f} "
          f"| {med(rps):+.1f} % | {statistics.mean(rps):+.1f} ± {sem(rps):.1f} % |")
    print(f"| {label} CPU ms/run | {med(x[1] for x in res['on']):.4f} | {med(x[1] for x in res['off']):.4f} "
          f"| {med(cpu_):+.1f} % | {statistics.mean(cpu_):+.1f} ± {sem(cpu_):.1f} % |")


if __name__ == "__main__":
    main()
