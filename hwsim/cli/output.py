"""Where command output goes: one JSON document, or rich tables for people."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console, JustifyMethod
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)

from hwsim.cli.plain_table import PlainTable
from hwsim.errors import require_finite
from hwsim.files import write_atomically
from hwsim.hardware.units import format_bytes, format_count


def emit_json(document: Any) -> None:
    """Print exactly one JSON document on stdout (never one holding NaN or infinity, which JSON has not)."""
    text = json.dumps(document, indent=2, default=_jsonable)
    require_finite(json.loads(text), "the JSON output")
    sys.stdout.write(text)
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


def print_notices(warnings: tuple[str, ...], notes: tuple[str, ...], quiet: bool) -> None:
    """Warnings (something may not be what the user meant) and notes (how the run was set up) before a run's
    report; none with `quiet` (--json puts them in the document)."""
    if quiet:
        return
    for warning in warnings:
        console().print(f"[yellow]warning:[/] {warning}")
    for note in notes:
        console().print(f"[cyan]note:[/] {note}")


def table(title: str, columns: list[tuple[str, JustifyMethod]]) -> PlainTable:
    """A table with (header, justify) columns (plain ones print without rich's layout: `hwsim.cli.plain_table`)."""
    t = PlainTable(title=title, title_justify="left", header_style="bold")
    for header, justify in columns:
        t.add_column(header, justify=justify, no_wrap=header != "description")
    return t


@contextmanager
def layer_progress(what: str, layers: int | None, quiet: bool) -> Iterator[Callable[..., None]]:
    """A transient progress bar over a run's layers (none when `quiet` or not on a terminal); yields the
    callback the simulator calls after each layer with its index and its run (which has a `name`), and a total
    when it knows one the bar did not (a search)."""
    out = console()
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=out, transient=True, disable=quiet or not out.is_terminal) as bar:
        task = bar.add_task(what, total=layers)

        def advance(index: int, run: Any, total: int | None = None) -> None:
            bar.update(task, advance=1, description=f"{what}: {run.name}", total=total or bar.tasks[0].total)
        yield advance


__all__ = ["console", "emit_json", "format_bytes", "format_count", "layer_progress", "print_notices", "table",
           "write_atomically"]
