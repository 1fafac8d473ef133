"""hostile-py: misbehaves on request, so the sandbox tests can check that
every limit holds for Python steps too.

``--do broker`` calls gateway tools and models through the host's broker:
``describe`` asks for tool ``echo`` and model calls; ``--tool NAME`` calls
whatever it names (described or not, so the tests can watch the host
refuse); ``--llm`` asks the model about every input item. (One Python
component for both jobs: each costs ~20 s to build and ~16 s to compile.)"""

import json
import os

from lobster_step import Flag, env, llm, llm_calls, log, read_dir, state, step, tool, tools

SCHEMA = {
    "type": "object",
    "properties": {"intent": {"type": "string"}, "draft": {"type": "string"}},
    "required": ["intent", "draft"],
}


@step(
    "hostile-py",
    summary="Misbehave as asked (--do loop|alloc|raise|count|read|env|state|log|broker)",
    flags=[
        Flag.text("do", "What to do"),
        Flag.number("n", "How many"),
        Flag.text("tool", "Tool to call (--do broker)"),
        Flag.text("args", "Tool arguments, a JSON object (--do broker)", default="{}"),
        Flag.switch("llm", "Classify every item with the model (--do broker)"),
    ],
    capabilities=[read_dir("/data"), env("GREETING"), tool("echo"), llm_calls()],
)
def run(args, items):
    what = args.str("do", "count")
    if what == "broker":
        out = []
        name = args.str("tool")
        if name:
            out.extend(tools.invoke(name, json.loads(args.str("args", "{}"))))
        if args.switch("llm"):
            out.extend(llm.ask("Classify and draft a reply.", item, SCHEMA) for item in items)
        return out
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
