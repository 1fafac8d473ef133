"""The one place that talks to the host's imports (``lobster:step/host``).

Inside a component the generated bindings (``wit_world``) exist and every call
goes to the host. Outside one (unit tests with plain ``python``) log lines go
to stderr and state lives in a dict. Host interfaces added to the world later
(e.g. a broker) get their wrapper here and nowhere else.
"""

from __future__ import annotations

import sys
from typing import Dict, Optional

try:  # present only when built by componentize-py
    from wit_world.imports import host as _wit_host  # type: ignore
    from wit_world.imports import types as _wit_types  # type: ignore

    IN_COMPONENT = True
except ImportError:  # pragma: no cover - depends on the environment
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
