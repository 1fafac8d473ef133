#!/usr/bin/env python3
"""Whole-process figures for `lobster mcp` next to `lobster run --mode tool`.

    mcp_bench.py LOBSTER_BIN [--runs N] [--calls N]

Speaks raw JSON-RPC over the server's stdin/stdout (stdlib only, so the
client costs the same for every figure):

- session ready: spawn `lobster mcp`, send initialize + initialized +
  tools/list, stop the clock at the tools/list answer (median of --runs
  fresh processes);
- call on an open session: one `lobster_run` round trip of a 3-stage
  in-process pipeline (median of --calls calls, after 5 warm-up calls);
- the same pipeline as one `lobster run --mode tool` process per call
  (median of --runs processes).

Prints a Markdown table on stdout.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

PIPELINE = "commands.list | sort --key name | head --n 3"


def rpc(proc, msg):
    proc.stdin.write((json.dumps(msg) + "\n").encode())
    proc.stdin.flush()


def answer(proc, want_id):
    while True:
        line = proc.stdout.readline()
        if not line:
            raise SystemExit(f"lobster mcp closed stdout (waiting for id {want_id})")
        msg = json.loads(line)
        if msg.get("id") == want_id:
            return msg


def start(binary, env, cwd):
    return subprocess.Popen(
        [binary, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=cwd
    )


def handshake(proc):
    rpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"}}})
    answer(proc, 1)
    rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    rpc(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    tools = answer(proc, 2)["result"]["tools"]
    assert any(t["name"] == "lobster_run" for t in tools)


def stop(proc):
    proc.stdin.close()
    proc.wait(timeout=10)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--calls", type=int, default=201)
    a = ap.parse_args()
    a.binary = os.path.abspath(a.binary)
    with tempfile.TemporaryDirectory() as state, tempfile.TemporaryDirectory() as cwd:
        env = {**os.environ, "LOBSTER_STATE_DIR": state}

        ready = []
        for _ in range(a.runs):
            t0 = time.perf_counter()
            proc = start(a.binary, env, cwd)
            handshake(proc)
            ready.append((time.perf_counter() - t0) * 1000)
            stop(proc)

        proc = start(a.binary, env, cwd)
        handshake(proc)
        calls = []
        for i in range(5 + a.calls):
            t0 = time.perf_counter()
            rpc(proc, {"jsonrpc": "2.0", "id": 100 + i, "method": "tools/call", "params": {
                "name": "lobster_run", "arguments": {"pipeline": PIPELINE}}})
            res = answer(proc, 100 + i)["result"]
            if i >= 5:
                calls.append((time.perf_counter() - t0) * 1000)
            assert res["structuredContent"]["status"] == "ok", res
        stop(proc)

        spawned = []
        for _ in range(a.runs):
            t0 = time.perf_counter()
            out = subprocess.run([a.binary, "run", "--mode", "tool", PIPELINE],
                                 env=env, cwd=cwd, capture_output=True, check=True)
            spawned.append((time.perf_counter() - t0) * 1000)
            assert json.loads(out.stdout)["status"] == "ok"

    med = statistics.median
    print(f"Pipeline: `{PIPELINE}`; medians, whole processes, wall ms.\n")
    print("| figure | lobster mcp | lobster run --mode tool per call |")
    print("|---|---:|---:|")
    print(f"| session ready (spawn → tools/list answer) | {med(ready):.2f} | — |")
    print(f"| one 3-stage pipeline call | {med(calls):.3f} (open session) | {med(spawned):.2f} (new process) |")
    print(f"| {a.calls} calls | {sum(calls):.0f} | {med(spawned) * a.calls:.0f} (estimated) |")


if __name__ == "__main__":
    sys.exit(main())
