"""`lobster mcp` driven by the official Python MCP SDK (PyPI `mcp`, pinned in
python-client.sh), a client nobody on this project wrote.

Usage: python_client.py LOBSTER_BIN MODE   (MODE: legacy | auto)

legacy: the 2025-11-25 initialize handshake; auto: the 2026-07-28 discovery
(stateless requests, "input required" results). Both run the same flow; auto
also runs `--approvals human`, where the server asks the human through an
elicitation form and resumes with their answer.
Prints one line per check and closes with `N passed, N failed`.
"""

import json
import os
import sys
import tempfile
import time

import anyio
from mcp import types
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

BIN, MODE = os.path.abspath(sys.argv[1]), sys.argv[2]
PASSED, FAILED = 0, 0

GREET = """name: greet
description: Greet someone.
args:
  who:
    type: string
    required: true
  times:
    type: integer
    default: 1
steps:
  - id: hello
    run: echo "hello ${who} x${times}"
"""


def check(name, cond, detail=""):
    global PASSED, FAILED
    if cond:
        PASSED += 1
        print(f"ok   [{MODE}] {name}")
    else:
        FAILED += 1
        print(f"FAIL [{MODE}] {name}: {detail}")


def env_of(result):
    return result.structured_content or {}


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "text", None))


def server(work, state, *extra, **kw):
    params = StdioServerParameters(
        command=BIN,
        args=["mcp", "--workflows", "workflows", *extra],
        cwd=work,
        env={**os.environ, "LOBSTER_STATE_DIR": state},
    )
    return Client(params, mode=MODE, **kw)


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return not f.read().rsplit(")", 1)[1].strip().startswith("Z")
    except OSError:
        return False


async def agent_flow(work, state):
    async with server(work, state) as client:
        tools = (await client.list_tools()).tools
        names = [t.name for t in tools]
        check("tools listed", names == ["lobster_run", "lobster_resume", "lobster_workflows", "greet"], names)
        check(
            "every tool has an output schema and annotations",
            all(t.output_schema and t.annotations and t.description for t in tools),
        )
        greet = next(t for t in tools if t.name == "greet")
        check("workflow args are the input schema", greet.input_schema.get("required") == ["who"], greet.input_schema)

        r = await client.call_tool(
            "lobster_run", {"pipeline": "exec --json --shell 'echo [1,2]' | approve --prompt 'Ship it?'"}
        )
        env = env_of(r)
        check("gated pipeline pauses", env.get("status") == "needs_approval", env)
        check("the text says to resume", "lobster_resume" in text_of(r), text_of(r))
        token = env["requiresApproval"]["resumeToken"]
        r = await client.call_tool("lobster_resume", {"token": token, "approve": True})
        check("resume gives the items", env_of(r).get("output") == [1, 2], env_of(r))

        r = await client.call_tool("lobster_run", {"pipeline": "nosuchcommand"})
        check("a failing run is isError", r.is_error is True and env_of(r).get("ok") is False, r)

        r = await client.call_tool("greet", {"who": "Ada", "times": 2})
        check("workflow tool runs with typed args", "hello Ada x2" in text_of(r), text_of(r))
        r = await client.call_tool("greet", {"who": 5})
        msg = env_of(r).get("error", {}).get("message", "")
        check("bad args refused by name", r.is_error and "Workflow arg who must be a string" in msg, msg)

        r = await client.call_tool("lobster_workflows", {})
        check("catalog lists the workflow", env_of(r)["workflows"][0]["name"] == "greet", env_of(r))

        # Cancellation: a call abandoned by the client ends its run.
        pid_file = os.path.join(work, "pid")
        async with anyio.create_task_group() as tg:

            async def slow():
                await client.call_tool(
                    "lobster_run", {"pipeline": "exec --shell 'echo $$ > pid; exec sleep 30'", "timeoutMs": 60000}
                )

            scope = anyio.CancelScope()

            async def run_slow():
                with scope:
                    await slow()

            tg.start_soon(run_slow)
            pid = None
            for _ in range(500):
                if os.path.exists(pid_file) and open(pid_file).read().strip():
                    pid = int(open(pid_file).read())
                    break
                await anyio.sleep(0.01)
            check("the slow run started", pid is not None and alive(pid))
            scope.cancel()
        deadline = time.time() + 5
        while pid and alive(pid) and time.time() < deadline:
            await anyio.sleep(0.02)
        check("cancelling the call killed the run", pid is not None and not alive(pid))
        r = await client.call_tool("lobster_run", {"pipeline": "exec --json --shell 'echo [3]'"})
        check("session goes on after a cancel", env_of(r).get("output") == [3], env_of(r))


async def human_flow(work, state):
    asked = []

    async def elicit(context, params):
        asked.append(params)
        return types.ElicitResult(action="accept", content={"approve": True})

    async with server(work, state, "--approvals", "human", elicitation_callback=elicit) as client:
        r = await client.call_tool(
            "lobster_run", {"pipeline": "exec --json --shell 'echo [7]' | approve --prompt 'Deploy now?'"}
        )
        token = env_of(r)["requiresApproval"]["resumeToken"]
        r = await client.call_tool("lobster_resume", {"token": token, "approve": True})
        check("the human was asked through the client", len(asked) == 1, asked)
        check("the form shows the prompt", asked and "Deploy now?" in asked[0].message, asked)
        check("the human's yes resumed the run", env_of(r).get("output") == [7], env_of(r))

    async def refuse(context, params):
        return types.ElicitResult(action="accept", content={"approve": False})

    async with server(work, state, "--approvals", "human", elicitation_callback=refuse) as client:
        r = await client.call_tool(
            "lobster_run", {"pipeline": "exec --json --shell 'echo [8]' | approve --prompt 'Deploy?'"}
        )
        token = env_of(r)["requiresApproval"]["resumeToken"]
        r = await client.call_tool("lobster_resume", {"token": token, "approve": True})
        check("the human's no rejects even when the agent said yes", env_of(r).get("status") == "cancelled", env_of(r))


async def legacy_human(work, state):
    async with server(work, state, "--approvals", "human") as client:
        r = await client.call_tool(
            "lobster_run", {"pipeline": "exec --json --shell 'echo [9]' | approve --prompt 'Deploy?'"}
        )
        token = env_of(r)["requiresApproval"]["resumeToken"]
        r = await client.call_tool("lobster_resume", {"token": token, "approve": True})
        msg = env_of(r).get("error", {}).get("message", "")
        check("a legacy client cannot approve in human mode", r.is_error and msg.startswith("approve: true is refused"), msg)


async def main():
    with tempfile.TemporaryDirectory() as work, tempfile.TemporaryDirectory() as state:
        os.mkdir(os.path.join(work, "workflows"))
        with open(os.path.join(work, "workflows", "greet.lobster"), "w") as f:
            f.write(GREET)
        await agent_flow(work, state)
        if MODE == "auto":
            await human_flow(work, state)
        else:
            await legacy_human(work, state)


anyio.run(main)
print(f"{PASSED} passed, {FAILED} failed")
sys.exit(1 if FAILED else 0)
