"""hostile-py: misbehaves on request, so the sandbox tests can check that
every limit holds for Python steps too."""

import os

from lobster_step import Flag, env, log, read_dir, state, step


@step(
    "hostile-py",
    summary="Misbehave as asked (--do loop|alloc|raise|count|read|env|state|log)",
    flags=[Flag.text("do", "What to do"), Flag.number("n", "How many")],
    capabilities=[read_dir("/data"), env("GREETING")],
)
def run(args, items):
    what = args.str("do", "count")
    if what == "loop":
        while True:
            pass
    if what == "alloc":
        hoard = []
        while True:
            hoard.append(bytearray(1 << 20))
    if what == "raise":
        return {"x": 1}["missing"]
    if what == "read":
        return [{"file": f, "text": open(f"/data/{f}").read()} for f in sorted(os.listdir("/data"))]
    if what == "escape":
        return [{"etc": sorted(os.listdir("/etc"))}]
    if what == "env":
        return [{"GREETING": os.environ.get("GREETING"), "HOME": os.environ.get("HOME")}]
    if what == "state":
        n = (state.get("runs") or 0) + 1
        state.set("runs", n)
        return [{"runs": n}]
    if what == "log":
        log.info("hello from python")
        return items
    # count: a realistic job over the items
    n = int(args.number("n", 0) or 0)
    items = items or [{"id": i, "subject": f"message {i}"} for i in range(n)]
    return [{**i, "words": len(str(i.get("subject", "")).split())} for i in items]
