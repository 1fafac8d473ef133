"""The step author's API: the ``@step`` decorator, flags, capabilities,
argument parsing, errors, logging and state.

Nothing here imports the generated WIT bindings, so a step's logic can be
unit-tested with plain ``python`` (``lobster_step.testing``); the bindings are
used only by ``lobster_step._world`` inside the component.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

# Imported here, not lazily: a component holds only the modules imported
# when componentize-py snapshots it.
from . import _host


class StepFailure(Exception):
    """Base of the two errors a step may raise on purpose."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class InvalidArgs(StepFailure):
    """The arguments were wrong; the message says how to fix them."""


class Failed(StepFailure):
    """The step could not do its work."""


@dataclass(frozen=True)
class Flag:
    """One flag the step accepts (``--name value``, ``--name=value`` or bare ``--name``)."""

    name: str
    kind: str  # "switch" | "text" | "number"
    description: str
    default: Optional[str] = None

    @staticmethod
    def switch(name: str, description: str) -> "Flag":
        return Flag(name, "switch", description)

    @staticmethod
    def text(name: str, description: str, default: Optional[str] = None) -> "Flag":
        return Flag(name, "text", description, default)

    @staticmethod
    def number(name: str, description: str, default: Optional[Union[int, float]] = None) -> "Flag":
        return Flag(name, "number", description, None if default is None else _num_text(default))


def _num_text(n: Union[int, float]) -> str:
    if isinstance(n, float) and n.is_integer():
        return str(int(n))
    return str(n)


@dataclass(frozen=True)
class Capability:
    """A directory (``kind="dir"``, ``access`` "read" or "read-write"), an env
    variable (``kind="env"``), a gateway tool (``kind="tool"``) or model calls
    (``kind="llm"``, no name)."""

    kind: str
    name: str
    access: str = "read"


def read_dir(guest_path: str) -> Capability:
    """The step reads files under this preopened guest path (``--allow-read``)."""
    return Capability("dir", guest_path, "read")


def write_dir(guest_path: str) -> Capability:
    """The step writes files under this preopened guest path (``--allow-write``)."""
    return Capability("dir", guest_path, "read-write")


def env(name: str) -> Capability:
    """The step reads this environment variable (``--allow-env``)."""
    return Capability("env", name)


def tool(name: str) -> Capability:
    """The step calls gateway tool ``name`` with ``tools.invoke`` (``--allow-tool NAME``)."""
    return Capability("tool", name)


def llm_calls() -> Capability:
    """The step asks a model with ``llm.ask``/``llm.json`` (``--allow-llm``)."""
    return Capability("llm", "")


@dataclass(frozen=True)
class Example:
    """A declared example: ``args`` and ``input`` items give ``output`` items.

    ``lobster step test`` runs every example of ``examples.json`` in the
    sandbox; these objects are the same examples for ``lobster_step.testing``.
    """

    args: Sequence[str]
    input: List[Any]
    output: List[Any]
    name: str = ""


class Args:
    """The stage's arguments, parsed with the pipeline language's greedy rules:
    ``--k=v`` splits at the first ``=``; ``--k v`` takes the next token unless
    it starts with ``--``; otherwise ``--k`` is ``True``. A repeated flag keeps
    its last value. Other tokens are positionals, in order."""

    def __init__(self, tokens: Sequence[str]):
        self.positional: List[str] = []
        self.flags: dict = {}
        i = 0
        while i < len(tokens):
            tok = tokens[i]
            if tok.startswith("--"):
                name = tok[2:]
                if "=" in name:
                    k, v = name.split("=", 1)
                    self.flags[k] = v
                elif i + 1 < len(tokens) and not tokens[i + 1].startswith("--"):
                    self.flags[name] = tokens[i + 1]
                    i += 1
                else:
                    self.flags[name] = True
            else:
                self.positional.append(tok)
            i += 1

    def flag(self, name: str) -> Union[str, bool, None]:
        """The raw value: text, ``True`` for a bare switch, ``None`` when absent."""
        return self.flags.get(name)

    def str(self, name: str, default: Optional[str] = None) -> Optional[str]:
        """The flag as text (``"true"`` for a bare switch), or ``default``."""
        v = self.flags.get(name)
        if v is None:
            return default
        return "true" if v is True else v

    def switch(self, name: str) -> bool:
        """Whether a switch is on (bare, ``=true`` or ``true``)."""
        v = self.flags.get(name)
        return v is True or v == "true"

    def number(self, name: str, default: Optional[float] = None) -> Optional[float]:
        """The flag as a number; ``InvalidArgs`` when it is not one."""
        v = self.flags.get(name)
        if v is None:
            return default
        try:
            n = float(v)
        except (TypeError, ValueError):
            raise InvalidArgs(f"--{name} must be a number, got {v!r}") from None
        return int(n) if n.is_integer() else n


RunFn = Callable[[Args, List[Any]], Any]


@dataclass
class StepDef:
    """What ``@step`` registered: describe data plus the ``run`` function."""

    name: str
    version: str
    summary: str
    flags: List[Flag] = field(default_factory=list)
    capabilities: List[Capability] = field(default_factory=list)
    run: Optional[RunFn] = None

    def call(self, argv: Sequence[str], input_json: str) -> str:
        """Parse, run, serialise: the ``run`` export without the bindings.
        Raises ``StepFailure`` (any other exception is mapped by the caller)."""
        try:
            items = json.loads(input_json) if input_json.strip() else []
        except ValueError as e:
            raise InvalidArgs(f"{self.name}: input is not JSON: {e}") from None
        if not isinstance(items, list):
            items = [items]
        assert self.run is not None
        out = self.run(Args(list(argv)), items)
        if out is None:
            out = []
        elif not isinstance(out, list):
            out = list(out) if _iterable(out) else [out]
        return json.dumps(out, ensure_ascii=False, separators=(",", ":"))


def _iterable(v: Any) -> bool:
    if isinstance(v, (str, bytes, dict)):
        return False
    try:
        iter(v)
    except TypeError:
        return False
    return True


_REGISTERED: List[StepDef] = []


def step(
    name: str,
    *,
    version: str = "0.1.0",
    summary: str = "",
    flags: Sequence[Flag] = (),
    capabilities: Sequence[Capability] = (),
) -> Callable[[RunFn], RunFn]:
    """Declare the module's step: ``describe`` data and the ``run`` function
    ``(args: Args, items: list) -> list``. One per component."""

    def register(fn: RunFn) -> RunFn:
        _REGISTERED.append(
            StepDef(name, version, summary or _first_line(fn.__doc__) or name,
                    list(flags), list(capabilities), fn)
        )
        return fn

    return register


def _first_line(doc: Optional[str]) -> str:
    lines = (doc or "").strip().splitlines()
    return lines[0].strip() if lines else ""


def registered() -> StepDef:
    """The step this component exports (exactly one ``@step`` is required)."""
    if len(_REGISTERED) != 1:
        raise RuntimeError(
            f"a Lobster step module must declare exactly one @step, found {len(_REGISTERED)}"
        )
    return _REGISTERED[0]


class _Log:
    """``log.info("...")`` etc.: lines go to the host's log, tagged with the
    step's name (they count towards the step's stderr limit). Outside a
    component they go to stderr."""

    def _write(self, level: str, message: str) -> None:
        _host.log(level, str(message))

    def trace(self, message: Any) -> None:
        self._write("trace", message)

    def debug(self, message: Any) -> None:
        self._write("debug", message)

    def info(self, message: Any) -> None:
        self._write("info", message)

    def warn(self, message: Any) -> None:
        self._write("warn", message)

    def error(self, message: Any) -> None:
        self._write("error", message)


log = _Log()


class _State:
    """Durable JSON values scoped to this step and the current run:
    ``state.get(key)`` (``None`` when absent) and ``state.set(key, value)``."""

    def get(self, key: str) -> Any:
        text = _host.state_get(key)
        return None if text is None else json.loads(text)

    def set(self, key: str, value: Any) -> None:
        try:
            _host.state_set(key, json.dumps(value, ensure_ascii=False, separators=(",", ":")))
        except _host.StateError as e:
            raise Failed(str(e)) from None


state = _State()


class _Tools:
    """Gateway tools through the host's broker (``lobster:step@0.2.0``):
    ``tools.invoke("message", {"to": "x"})`` returns the tool's result items
    as a list. The step must list ``tool(NAME)`` in its capabilities and the
    run must grant it; a refused or failed call raises ``Failed`` with the
    host's reason (nothing was sent when it was refused)."""

    def invoke(self, name: str, args: Any = None, action: Optional[str] = "json") -> List[Any]:
        text = json.dumps({} if args is None else args, ensure_ascii=False, separators=(",", ":"))
        try:
            answer = json.loads(_host.invoke_tool(name, action, text))
        except _host.BrokerError as e:
            raise Failed(str(e)) from None
        return answer if isinstance(answer, list) else [answer]


tools = _Tools()


class _Llm:
    """Model calls through the host's broker: ``llm.ask(prompt, input, schema)``
    returns the answer (a Python value) after it passed ``schema``;
    ``llm.json(request)`` sends a whole request object (``prompt``, ``input``,
    ``schema``, ``model``, ``temperature``, ``max-tokens``). The step must
    list ``llm_calls()`` and the run must grant ``--allow-llm``; a refusal
    raises ``Failed``."""

    def json(self, request: Any) -> Any:
        text = json.dumps(request, ensure_ascii=False, separators=(",", ":"))
        try:
            return json.loads(_host.llm_json(text))
        except _host.BrokerError as e:
            raise Failed(str(e)) from None

    def ask(self, prompt: str, input: Any = None, schema: Any = None) -> Any:
        request: dict = {"prompt": prompt, "input": input}
        if schema is not None:
            request["schema"] = schema
        return self.json(request)


llm = _Llm()


def failure_message(e: BaseException) -> str:
    """The ``failed(...)`` text for an unexpected exception: its type and
    message, and the innermost frame. (No ``traceback`` import: the
    component bundles only the modules a step imports.)"""
    where = ""
    tb = e.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is not None:
        code = tb.tb_frame.f_code
        where = f" (at {code.co_filename.rsplit('/', 1)[-1]}:{tb.tb_lineno} in {code.co_name})"
    text = str(e)
    return f"{type(e).__name__}: {text}{where}" if text else f"{type(e).__name__}{where}"


def capability_tuple(c: Capability) -> Tuple[str, str, str]:
    return (c.kind, c.name, c.access)
