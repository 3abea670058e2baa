"""A rich table that writes itself as plain lines when nothing about it needs rich's layout engine.

Rich measures and renders every cell through its console (markup, emoji codes, wrapping, styles): some 2.5 ms per
row, a quarter of a CPU-second for a ResNet-50 estimate, most of what the command costs beside its imports. A
table printed without colour whose cells are plain one-line strings that fit the console comes out as the same
characters from string arithmetic: each column as wide as its widest cell plus a space either side, the title
justified over the table's width, the box rich would draw. Anything else (markup, emoji codes, a cell or title
that would wrap, colours, a caption or footer) is left to rich. `tests/test_plain_table.py` renders tables both
ways and compares them character for character.
"""

from __future__ import annotations

import re

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.padding import Padding
from rich.segment import Segment
from rich.table import Table

_MARKUP_OR_EMOJI = re.compile(r"\[|:\S*?:|[\n\r\t\x1b]")  # what rich would parse or lay out: not plain


class PlainTable(Table):
    """A `rich.table.Table` whose plain cases render without rich's per-cell layout (module docstring)."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        lines = self.plain_lines(console, options)
        if lines is None:
            yield from super().__rich_console__(console, options)
            return
        for line in lines:
            yield Segment(line)
            yield Segment.line()

    def plain_lines(self, console: Console, options: ConsoleOptions) -> list[str] | None:
        """The table's lines as rich would print them, or None when rich's own layout is needed."""
        cells = self._plain_cells()
        if cells is None or console.color_system is not None or self.box is None:
            return None
        widths = [max(cell_len(text) for text in column) + 2 for column in cells]
        table_width = sum(widths) + len(widths) + 1
        title = self.title if isinstance(self.title, str) else ""
        if table_width > options.max_width or cell_len(title) > table_width:
            return None
        box = self.box.substitute(options, safe=console.safe_box if self.safe_box is None else self.safe_box)
        lines = [_justify(title, table_width, str(self.title_justify))] if title else []
        justify = [str(column.justify) for column in self.columns]
        header = [column[0] for column in cells]
        lines.append(box.get_top(widths))
        lines.append(_row(box.head_left, box.head_vertical, box.head_right, header, widths, justify))
        lines.append(box.get_row(widths, "head", edge=True))
        for r in range(1, len(cells[0])):
            lines.append(_row(box.mid_left, box.mid_vertical, box.mid_right, [column[r] for column in cells],
                              widths, justify))
        lines.append(box.get_bottom(widths))
        return lines

    def _plain_cells(self) -> list[list[str]] | None:
        """Per column its header then its cells, if the table is one this class lays out itself."""
        if (not self.columns or not self.rows or not self.show_header or not self.show_edge or self.show_lines
                or self.show_footer or self.caption or self.width is not None or self.min_width is not None
                or self.expand or self.leading or self.padding != Padding.unpack((0, 1)) or not self.pad_edge
                or self.collapse_padding or any(row.style or row.end_section for row in self.rows)
                or not isinstance(self.title, str | None) or _not_plain(self.title or "")
                or self.title_justify not in ("left", "center", "right")):
            return None
        cells = []
        for column in self.columns:
            texts = [column.header, *column.cells]
            if (column.width is not None or column.min_width is not None or column.max_width is not None
                    or column.ratio is not None or column.justify not in ("left", "center", "right")
                    or not all(isinstance(text, str) and not _not_plain(text) for text in texts)):
                return None
            cells.append([str(text) for text in texts])
        return cells


def _not_plain(text: str) -> bool:
    """Whether rich would treat `text` other than as it stands (markup, emoji codes, line breaks, or spaces at its
    ends, which rich trims when it justifies)."""
    return _MARKUP_OR_EMOJI.search(text) is not None or text != text.strip(" ")


def _justify(text: str, width: int, how: str) -> str:
    """`text` padded to `width` cells as rich justifies a line: left, right, or centred (the odd space right)."""
    excess = width - cell_len(text)
    if how == "right":
        return " " * excess + text
    if how == "center":
        return " " * (excess // 2) + text + " " * (excess - excess // 2)
    return text + " " * excess


def _row(left: str, vertical: str, right: str, texts: list[str], widths: list[int], justify: list[str]) -> str:
    inner = (f" {_justify(text, width - 2, how)} " for text, width, how in zip(texts, widths, justify))
    return left + vertical.join(inner) + right

