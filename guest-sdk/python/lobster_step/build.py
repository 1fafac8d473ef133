"""``python -m lobster_step build [DIR] [-o OUT]``: build the step project in
DIR (default ``.``) into a ``lobster:step`` component with the pinned
componentize-py.

The project's ``lobster-step.toml`` names the module (``entry = "app.py"``)
and the output (``wasm = "NAME.wasm"``). The WIT world is the copy shipped in
this package (``lobster_step/wit``), so a build needs no Lobster checkout.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import tomllib

COMPONENTIZE_PY = "0.25.1"
WORLD = "step"


def wit_dir() -> str:
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "wit")


def _componentize_py() -> list:
    exe = shutil.which("componentize-py", path=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    if exe is None:
        sys.exit(
            "componentize-py not found: install the SDK with `pip install ./guest-sdk/python` "
            f"(it pins componentize-py=={COMPONENTIZE_PY})"
        )
    return [exe]


def check_version() -> None:
    try:
        from importlib.metadata import version

        found = version("componentize-py")
    except Exception:
        return
    if found != COMPONENTIZE_PY:
        sys.exit(f"componentize-py {found} is installed; this SDK is pinned to {COMPONENTIZE_PY} "
                 f"(pip install componentize-py=={COMPONENTIZE_PY})")


def manifest(project: str) -> dict:
    path = os.path.join(project, "lobster-step.toml")
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        sys.exit(f"{path}: missing (create the project with `lobster step new NAME --lang python`)")
    except tomllib.TOMLDecodeError as e:
        sys.exit(f"{path}: {e}")


def build(project: str, out: str | None = None) -> str:
    project = os.path.abspath(project)
    m = manifest(project)
    entry = m.get("entry", "app.py")
    module = entry[:-3] if entry.endswith(".py") else entry
    if not os.path.isfile(os.path.join(project, module + ".py")):
        sys.exit(f"{project}/lobster-step.toml: entry {entry!r} does not exist")
    out = os.path.abspath(out or os.path.join(project, m.get("wasm", module + ".wasm")))
    check_version()
    sdk_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with tempfile.TemporaryDirectory(prefix="lobster-step-") as tmp:
        with open(os.path.join(tmp, "lobster_entry.py"), "w") as f:
            f.write(f"import {module}  # registers the @step\n"
                    "from lobster_step._world import WitWorld  # the exports\n")
        cmd = _componentize_py() + [
            "-d", wit_dir(), "-w", WORLD, "componentize", "lobster_entry",
            "-p", tmp, "-p", project, "-p", sdk_root, "-o", out,
        ]
        r = subprocess.run(cmd)
        if r.returncode != 0:
            sys.exit(f"componentize-py failed (exit {r.returncode})")
    return out


def main(argv: list | None = None) -> None:
    import argparse

    p = argparse.ArgumentParser(prog="lobster-step-py", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="build the step project into a component")
    b.add_argument("dir", nargs="?", default=".")
    b.add_argument("-o", "--output")
    sub.add_parser("wit", help="print the path of the shipped WIT directory")
    a = p.parse_args(argv)
    if a.cmd == "wit":
        print(wit_dir())
    else:
        print(build(a.dir, a.output))


if __name__ == "__main__":
    main()
