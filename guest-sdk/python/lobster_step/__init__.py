"""Write a Lobster pipeline step in Python.

A step is one decorated function::

    from lobster_step import step, Flag

    @step("greet", version="0.1.0", summary="Add a greeting to every item",
          flags=[Flag.text("name", "Who to greet", default="world")])
    def greet(args, items):
        return [{"greeting": f"hello {args.str('name', 'world')}", "item": i} for i in items]

Build it with ``python -m lobster_step build DIR`` (or ``lobster step build DIR``):
the result is a WASI component of the ``lobster:step`` world that Lobster runs
in its sandbox. ``args`` follow the pipeline language's greedy flag rules;
``items`` are plain Python values (``json.loads``); raise ``InvalidArgs`` or
``Failed`` to fail the step; any other exception becomes ``failed(message)``.
Gateway tools and models go through the host's broker: ``tools.invoke`` and
``llm.ask`` (declare ``tool(NAME)`` / ``llm_calls()`` in ``capabilities``).
"""

from .api import (
    Args,
    Example,
    Failed,
    Flag,
    InvalidArgs,
    StepDef,
    env,
    llm,
    llm_calls,
    log,
    read_dir,
    registered,
    state,
    step,
    tool,
    tools,
    write_dir,
)

__all__ = [
    "Args",
    "Example",
    "Failed",
    "Flag",
    "InvalidArgs",
    "StepDef",
    "env",
    "llm",
    "llm_calls",
    "log",
    "read_dir",
    "registered",
    "state",
    "step",
    "tool",
    "tools",
    "write_dir",
]
