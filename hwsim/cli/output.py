"""Where command output goes: one JSON document, or rich tables for people."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console
from rich.table import Table

from hwsim.files import write_atomically
from hwsim.hardware.units import format_bytes, format_count


def emit_json(document: Any) -> None:
    """Print exactly one JSON document on stdout."""
    json.dump(document, sys.stdout, indent=2, default=_jsonable)
    sys.stdout.write("\n")


def _jsonable(value: Any) -> Any:
    if hasattr(value, "_asdict"):
        return list(value)
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"cannot encode {type(value).__name__} as JSON")


PIPE_WIDTH = 160  # columns when stdout is a file or pipe (rich would assume 80)


def console() -> Console:
    """A console on stdout; wide when piped, so tables are not squeezed into slivers."""
    out = Console(highlight=False, soft_wrap=False)
    if not out.is_terminal:
        out = Console(highlight=False, soft_wrap=False, width=PIPE_WIDTH)
    return out


def table(title: str, columns: list[tuple[str, str]]) -> Table:
    """A table with (header, justify) columns."""
    t = Table(title=title, title_justify="left", header_style="bold")
    for header, justify in columns:
        t.add_column(header, justify=justify, no_wrap=header != "description")  # type: ignore[arg-type]
    return t


__all__ = ["emit_json", "console", "table", "format_bytes", "format_count", "write_atomically"]
