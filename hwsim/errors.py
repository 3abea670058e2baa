"""The one exception family users see.

Every bad input (a malformed network file, an unknown op, a config typo, an
impossible mapping) raises a `HwsimError` subclass whose message names the
file, the field and the fix. The CLI prints it as one line and exits with
code 2; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations


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
