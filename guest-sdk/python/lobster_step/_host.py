"""The one place that talks to the host's imports (``lobster:step/host`` and
``lobster:step/broker`` of ``lobster:step@0.2.0``).

Inside a component the generated bindings (``wit_world``) exist and every call
goes to the host. Outside one (unit tests with plain ``python``) log lines go
to stderr, state lives in a dict, and broker calls go to the stand-in set with
``set_broker_for_tests`` (without one they fail: there is no host to ask).
"""

from __future__ import annotations

import sys
from typing import Any, Dict, Optional

try:  # present only when built by componentize-py
    from wit_world.imports import broker as _wit_broker  # type: ignore
    from wit_world.imports import host as _wit_host  # type: ignore
    from wit_world.imports import types as _wit_types  # type: ignore

    IN_COMPONENT = True
except ImportError:  # pragma: no cover - depends on the environment
    _wit_broker = None
    _wit_host = None
    _wit_types = None
    IN_COMPONENT = False

_LEVELS = ("trace", "debug", "info", "warn", "error")
_local_state: Dict[str, str] = {}


def log(level: str, message: str) -> None:
    if level not in _LEVELS:
        level = "info"
    if _wit_host is None:
        print(f"[{level}] {message}", file=sys.stderr)
        return
    _wit_host.log(_wit_types.LogLevel[level.upper()], message)


def state_get(key: str) -> Optional[str]:
    if _wit_host is None:
        return _local_state.get(key)
    return _wit_host.state_get(key)


def state_set(key: str, value: str) -> None:
    if _wit_host is None:
        _local_state[key] = value
        return
    try:
        _wit_host.state_set(key, value)
    except Exception as e:  # componentize_py_types.Err(str)
        raise StateError(f"state.set {key!r}: {getattr(e, 'value', e)}") from None


class StateError(Exception):
    """The host refused a ``state.set`` (reported as ``failed``)."""


class BrokerError(Exception):
    """The host refused or failed a broker call (the message says why)."""


_test_broker: Any = None


def set_broker_for_tests(broker: Any) -> None:
    """Outside a component: answer broker calls with ``broker``, an object with
    ``invoke_tool(tool, action, args_json) -> str`` and
    ``llm_json(request_json) -> str`` (raise to refuse)."""
    global _test_broker
    _test_broker = broker


def _broker() -> Any:
    if _wit_broker is not None:
        return _wit_broker
    if _test_broker is not None:
        return _test_broker
    raise BrokerError("no broker outside a component (set_broker_for_tests supplies one)")


def _call(fn: str, *args: Any) -> str:
    try:
        return getattr(_broker(), fn)(*args)
    except BrokerError:
        raise
    except Exception as e:  # componentize_py_types.Err(str) inside a component
        raise BrokerError(str(getattr(e, "value", e))) from None


def invoke_tool(tool: str, action: Optional[str], args_json: str) -> str:
    """``broker.invoke-tool``: the tool's result items as JSON text."""
    return _call("invoke_tool", tool, action, args_json)


def llm_json(request_json: str) -> str:
    """``broker.llm-json``: the model's schema-checked answer as JSON text."""
    return _call("llm_json", request_json)
