"""The plain table renderer against rich's own layout: the same characters for every table it takes on, and rich's
output for those it leaves to rich."""

from __future__ import annotations

import io
import random

import pytest
from rich.console import Console
from rich.table import Table

from hwsim.cli.output import PIPE_WIDTH, table
from hwsim.cli.plain_table import PlainTable

WORDS = ["conv1", "layer1.0.conv2", "1.204 M", "58%", "µJ", "≤ 3", "dram", "", "x", "2513.21", "漢字", "a b c",
         "bound by", "12 × 14", "é", "—"]
JUSTIFY = ["left", "right", "center"]


def _render(t: PlainTable, width: int = PIPE_WIDTH, plain: bool = True) -> str:
    """`t` printed as hwsim prints to a pipe: no colour, `width` columns; with rich's own layout unless `plain`."""
    out = io.StringIO()
    console = Console(file=out, width=width, highlight=False, soft_wrap=False, color_system=None)
    console.print(t if plain else _as_rich(t))
    return out.getvalue()


def _as_rich(t: PlainTable) -> Table:
    """A plain rich Table with `t`'s title, columns and rows."""
    r = Table(title=t.title, title_justify=t.title_justify, header_style="bold")
    for column in t.columns:
        r.add_column(column.header, justify=column.justify, no_wrap=column.no_wrap)
    for row in zip(*(list(column.cells) for column in t.columns)):
        r.add_row(*row)
    return r


def _phrase(rng: random.Random, most: int) -> str:
    """Up to `most` words, now and then with spaces at an end (rich trims those: the plain path declines them)."""
    text = " ".join(w for w in (rng.choice(WORDS) for _ in range(rng.randint(0, most))) if w)
    return text + " " if rng.random() < 0.03 else text


def _random_table(rng: random.Random) -> PlainTable:
    title = _phrase(rng, 4)
    t = PlainTable(title=title or None, title_justify=rng.choice(JUSTIFY), header_style="bold")
    columns = rng.randint(1, 9)
    for _ in range(columns):
        t.add_column(rng.choice(WORDS), justify=rng.choice(JUSTIFY), no_wrap=rng.random() < 0.8)
    for _ in range(rng.randint(1, 12)):
        t.add_row(*(_phrase(rng, 3) for _ in range(columns)))
    return t


@pytest.mark.parametrize("seed", range(6))
def test_random_tables_print_as_rich_prints_them(seed: int) -> None:
    rng = random.Random(seed)
    plain = 0
    for _ in range(100):
        t = _random_table(rng)
        width = rng.choice([40, 80, PIPE_WIDTH])
        console = Console(file=io.StringIO(), width=width, color_system=None)
        plain += t.plain_lines(console, console.options) is not None
        assert _render(t, width) == _render(t, width, plain=False), (seed, width)
    assert 20 <= plain <= 95  # both paths are exercised: most tables are plain, wide ones and long titles not


def test_tables_it_leaves_to_rich() -> None:
    console = Console(file=io.StringIO(), width=PIPE_WIDTH, color_system=None)
    markup = table("with [bold]markup[/]", [("a", "left")])
    markup.add_row("1")
    emoji = table("t", [("a", "left")])
    emoji.add_row(":thumbs_up:")
    wide = table("t", [("a", "left")])
    wide.add_row("x" * PIPE_WIDTH)
    long_title = table("a title longer than the table it heads", [("a", "left")])
    long_title.add_row("1")
    empty = table("no rows", [("a", "left")])
    for t in (markup, emoji, wide, long_title, empty):
        assert t.plain_lines(console, console.options) is None
        assert _render(t) == _render(t, plain=False)
    coloured = Console(file=io.StringIO(), width=PIPE_WIDTH, color_system="truecolor")
    fits = table("t", [("a", "left")])
    fits.add_row("1")
    assert fits.plain_lines(coloured, coloured.options) is None  # styles are rich's to write


def test_an_estimate_table_by_hand() -> None:
    """The box, padding and justification worked out by hand for a small table."""
    t = table("net on hw", [("layer", "left"), ("MACs", "right")])
    t.add_row("conv1", "118 M")
    t.add_row("fc", "4 k")
    assert _render(t).splitlines() == [
        "net on hw        ",
        "┏━━━━━━━┳━━━━━━━┓",
        "┃ layer ┃  MACs ┃",
        "┡━━━━━━━╇━━━━━━━┩",
        "│ conv1 │ 118 M │",
        "│ fc    │   4 k │",
        "└───────┴───────┘",
    ]
