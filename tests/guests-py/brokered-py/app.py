"""brokered-py: calls gateway tools and models through the host's broker, so
the tests can check that Python steps get only described and granted calls.
``describe`` asks for tool ``echo`` and model calls; ``--tool NAME`` calls
whatever it names (described or not, so the tests can watch the host refuse);
``--llm`` asks the model about every input item."""

import json

from lobster_step import Flag, llm, llm_calls, step, tool, tools

SCHEMA = {
    "type": "object",
    "properties": {"intent": {"type": "string"}, "draft": {"type": "string"}},
    "required": ["intent", "draft"],
}


@step(
    "brokered-py",
    summary="Call gateway tools and models through the broker",
    flags=[
        Flag.text("tool", "Tool to call"),
        Flag.text("args", "Tool arguments (JSON object)", default="{}"),
        Flag.switch("llm", "Classify every item with the model"),
    ],
    capabilities=[tool("echo"), llm_calls()],
)
def run(args, items):
    out = []
    name = args.str("tool")
    if name:
        out.extend(tools.invoke(name, json.loads(args.str("args", "{}"))))
    if args.switch("llm"):
        out.extend(llm.ask("Classify and draft a reply.", item, SCHEMA) for item in items)
    return out
