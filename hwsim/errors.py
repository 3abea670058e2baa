"""The one exception family users see.

Every bad input (a malformed network file, an unknown op, a config typo, an
impossible mapping) raises a `HwsimError` subclass whose message names the
file, the field and the fix. The CLI prints it as one line and exits with
code 2; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import os


class HwsimError(Exception):
    """Bad input, described in one line: where, what, and how to fix it."""


class NetworkError(HwsimError):
    """A network (ONNX file or zoo request) cannot be turned into a graph."""


class ConfigError(HwsimError):
    """A hardware configuration file is missing, malformed or inconsistent."""


class ShapeError(NetworkError):
    """Layer shapes do not fit together (bad padding, mismatched concat, ...)."""


class SweepError(HwsimError):
    """A sweep file is malformed, or a sweep's output directory or results table cannot be used."""


def os_reason(exc: OSError) -> str:
    """The short reason of an OSError ("No space left on device"), not the library's whole report."""
    if exc.errno:
        return os.strerror(exc.errno)
    return (str(exc).splitlines() or [type(exc).__name__])[0][:120]


class NonFiniteError(HwsimError):
    """A result came out NaN or infinite: an input drove the arithmetic past its range."""


def require_finite(value: object, what: str) -> None:
    """Raise NonFiniteError naming a NaN or infinite number in `value` (numbers, numpy scalars and
    arrays, nested in dicts, lists and tuples; dataclass-free plain data) and where in `what` it sits, so that no
    report, JSON document or trace attribute ever carries one."""
    stack: list[tuple[str, object]] = [("", value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, (str, bytes, bool, int)) or item is None:
            continue
        if isinstance(item, float):
            if item != item or item in (float("inf"), float("-inf")):
                place = f" at {path.lstrip('.')}" if path else ""
                raise NonFiniteError(f"{what}: a result is {item}{place}; an input drove it out of range (check "
                                     "the config's energies, sizes and clock)")
            continue
        if isinstance(item, dict):
            stack.extend((f"{path}.{key}", sub) for key, sub in item.items())
        elif isinstance(item, (list, tuple)):
            stack.extend((f"{path}[{i}]", sub) for i, sub in enumerate(item))
        elif hasattr(item, "tolist"):  # numpy scalars and arrays
            stack.append((path, item.tolist()))
