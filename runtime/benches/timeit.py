#!/usr/bin/env python3
"""Time whole processes: median wall ms, median cpu ms (user+sys) and peak RSS.

Used by compare.sh. Each run is one child started with subprocess and reaped
with os.wait4, so the figures are that child's own rusage (Linux reports the
child together with the descendants it waited for: a shell and `cat` started
by `exec --shell` count; cpu is their sum, peak RSS the largest of them).

    timeit.py [--runs N] [--warmup W] [--cwd DIR] [--env K=V]... \
              [--save-stdout FILE] -- CMD ARG...
    timeit.py ... --roundtrip -- RUN_CMD... ::: RESUME_CMD... {TOKEN} ...

--roundtrip times two processes per run: RUN_CMD must print a tool envelope
with status needs_approval; its requiresApproval.resumeToken replaces {TOKEN}
in RESUME_CMD, which must print an envelope with status ok. Wall and cpu are
the sums over both processes, peak the larger of the two.

Peak RSS: when GNU time is at /usr/bin/time, min(N, 3) more runs are made under it
and their median peak is reported (source "gnu-time"); otherwise the peak is
wait4's, which includes the ~15 MiB this Python process hands to every child
it starts (source "wait4").

Prints one tab-separated line on stdout:
    ok <TAB> wall_ms <TAB> cpu_ms <TAB> peak_mib <TAB> runs <TAB> peak_source <TAB> best_wall_ms
    fail <TAB> reason
and exits 0 either way (exit 2 on bad usage).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


class RunFailed(Exception):
    pass


def run_once(cmd, cwd, env, gnu_time=None):
    """Run cmd once; return (wall_s, cpu_s, peak_kib, stdout_bytes).

    With gnu_time, cmd runs under `gnu_time -f %M` and peak_kib is what GNU
    time reports for it (wall and cpu then include GNU time's own cost, so
    callers take only the peak from such runs).
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile(mode="r") as peak_out:
        if gnu_time:
            cmd = [gnu_time, "-f", "%M", "-o", peak_out.name, "--", *cmd]
        start = time.perf_counter()
        try:
            proc = subprocess.Popen(
                cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err
            )
        except OSError as e:
            raise RunFailed(f"cannot start {cmd[0]}: {e.strerror}") from e
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        stdout = out.read()
        if proc.returncode != 0:
            err.seek(0)
            raise RunFailed(f"exit {proc.returncode}: {failure(stdout, err.read())[:160]}")
        peak = usage.ru_maxrss
        if gnu_time:
            lines = peak_out.read().split()
            if not lines or not lines[-1].isdigit():
                raise RunFailed(f"{gnu_time} printed no peak RSS")
            peak = int(lines[-1])
        return wall, usage.ru_utime + usage.ru_stime, peak, stdout


def failure(stdout, stderr):
    """One line saying why a run failed: a tool envelope's error message, else
    the first non-blank line of stderr, else of stdout."""
    try:
        env = json.loads(stdout)
        message = env["error"]["message"]
        if isinstance(message, str):
            return message.splitlines()[0] if message else "(empty error message)"
    except (ValueError, TypeError, KeyError, IndexError):
        pass
    for line in (stderr + stdout).decode("utf-8", "replace").splitlines():
        if line.strip():
            return line.strip()
    return "(no output)"


def envelope(stdout, want_status):
    try:
        env = json.loads(stdout)
    except ValueError as e:
        raise RunFailed(f"not a JSON envelope: {stdout[:80]!r}") from e
    status = env.get("status") if isinstance(env, dict) else None
    if status != want_status:
        raise RunFailed(f"envelope status {status!r}, wanted {want_status!r}")
    return env


def roundtrip_once(run_cmd, resume_cmd, cwd, env, gnu_time=None):
    w1, c1, p1, out1 = run_once(run_cmd, cwd, env, gnu_time)
    approval = envelope(out1, "needs_approval").get("requiresApproval") or {}
    token = approval.get("resumeToken")
    if not isinstance(token, str) or not token:
        raise RunFailed("envelope has no requiresApproval.resumeToken")
    cmd2 = [arg.replace("{TOKEN}", token) for arg in resume_cmd]
    w2, c2, p2, out2 = run_once(cmd2, cwd, env, gnu_time)
    envelope(out2, "ok")
    return w1 + w2, c1 + c2, max(p1, p2), out2


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--cwd")
    ap.add_argument("--env", action="append", default=[], metavar="K=V")
    ap.add_argument("--save-stdout", metavar="FILE", help="stdout of the warm-up run")
    ap.add_argument("--roundtrip", action="store_true")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd or args.runs < 1 or args.warmup < 0:
        ap.error("need a command after --, --runs >= 1 and --warmup >= 0")
    env = dict(os.environ)
    for kv in args.env:
        key, sep, value = kv.partition("=")
        if not sep:
            ap.error(f"--env wants K=V, got {kv!r}")
        env[key] = value

    if args.roundtrip:
        if ":::" not in cmd:
            ap.error("--roundtrip wants RUN_CMD ::: RESUME_CMD")
        cut = cmd.index(":::")
        run_cmd, resume_cmd = cmd[:cut], cmd[cut + 1 :]
        if not run_cmd or not resume_cmd:
            ap.error("--roundtrip wants RUN_CMD ::: RESUME_CMD")

        def once(gnu_time=None):
            return roundtrip_once(run_cmd, resume_cmd, args.cwd, env, gnu_time)

    else:

        def once(gnu_time=None):
            return run_once(cmd, args.cwd, env, gnu_time)

    gnu_time = find_gnu_time()
    walls, cpus, peaks = [], [], []
    try:
        for i in range(args.warmup + args.runs):
            wall, cpu, peak, stdout = once()
            if i == 0 and args.save_stdout:
                with open(args.save_stdout, "wb") as f:
                    f.write(stdout)
            if i >= args.warmup:
                walls.append(wall)
                cpus.append(cpu)
                peaks.append(peak)
        if gnu_time:
            # A child started from Python inherits Python's RSS high-water mark
            # (~15 MiB) through vfork+exec, so wait4's figure is only an upper
            # bound. GNU time is a small C program: measure the peak under it.
            # Peak RSS barely varies between runs: three are enough.
            peaks = [once(gnu_time)[2] for _ in range(min(args.runs, 3))]
    except RunFailed as e:
        print(f"fail\t{e}")
        return 0
    print(
        "ok\t{:.2f}\t{:.2f}\t{:.1f}\t{}\t{}\t{:.2f}".format(
            statistics.median(walls) * 1000,
            statistics.median(cpus) * 1000,
            statistics.median(peaks) / 1024,
            len(walls),
            "gnu-time" if gnu_time else "wait4",
            min(walls) * 1000,
        )
    )
    return 0


def find_gnu_time():
    """/usr/bin/time if it is GNU time (it has -f and -o), else None."""
    path = "/usr/bin/time"
    try:
        probe = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return path if "GNU" in probe.stdout + probe.stderr else None


if __name__ == "__main__":
    sys.exit(main())
