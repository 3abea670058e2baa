"""Where a sweep's results live: an append-only log that survives interruption, and the final table.

Each finished point is one JSON line appended to `OUT/points.jsonl` and flushed at once, so a
killed sweep loses at most the points that were running; a rerun reads the log and skips what is
done. The table (`OUT/results.parquet` with pyarrow, else `OUT/results.csv`) is rebuilt from the log
at the end of every run and written under a temporary name, then renamed.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Self

from hwsim.errors import SweepError, require_finite
from hwsim.files import write_atomically
from hwsim.sweep.run import HARDWARE_COLUMNS, METRIC_COLUMNS

Row = dict[str, object]

NUMBER_COLUMNS = frozenset(("batch", *HARDWARE_COLUMNS, *METRIC_COLUMNS, "wall_s"))
LOG_NAME = "points.jsonl"
TABLE_STEM = "results"
FORMATS = ("parquet", "csv")


def read_log(path: Path) -> dict[str, Row]:
    """The latest row of every point id in the log (a line cut short by a kill is ignored)."""
    rows: dict[str, Row] = {}
    if not path.exists():
        return rows
    with path.open(encoding="utf-8") as f:
        for line in f:
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(row, dict) and isinstance(row.get("point_id"), str):
                rows[row["point_id"]] = row
    return rows


class PointLog:
    """`OUT/points.jsonl` opened for appending: one flushed line per finished point."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: IO[str] = self._open(path)

    @staticmethod
    def _open(path: Path) -> IO[str]:
        try:
            f = path.open("a+", encoding="utf-8")
        except OSError as exc:
            raise SweepError(f"{path}: cannot write the sweep log ({exc.strerror}); give a writable --out") from None
        f.seek(0, 2)
        if f.tell() > 0:
            f.seek(f.tell() - 1)
            if f.read(1) != "\n":  # the last line was cut short by a kill: end it
                f.write("\n")
        return f

    def append(self, row: Row) -> None:
        require_finite(row, f"sweep point {row.get('point_id', '?')}")
        self._file.write(json.dumps(row, sort_keys=True) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def has_pyarrow() -> bool:
    return importlib.util.find_spec("pyarrow") is not None


def table_format(requested: str, shown: str) -> str:
    """parquet or csv for a sweep's `outputs.table` (auto: Parquet when pyarrow is installed)."""
    if requested == "auto":
        return "parquet" if has_pyarrow() else "csv"
    if requested == "parquet" and not has_pyarrow():
        raise SweepError(f"{shown}: outputs.table: parquet needs pyarrow, which is not installed; "
                         "pip install pyarrow, or write table: csv")
    return requested


def write_table(rows: Sequence[Row], columns: Sequence[str], out_dir: Path, fmt: str) -> Path:
    """The table of `rows` (missing columns empty) as OUT/results.<fmt>, written atomically; a table of
    the other format left by an earlier run is removed so one table remains."""
    path = out_dir / f"{TABLE_STEM}.{fmt}"
    data = [{c: row.get(c) for c in columns} for row in rows]
    write_atomically(str(path), lambda tmp: (_write_parquet if fmt == "parquet" else _write_csv)(data, columns, tmp))
    for other in FORMATS:
        stale = out_dir / f"{TABLE_STEM}.{other}"
        if other != fmt and stale.exists():
            stale.unlink()
    return path


def _write_csv(rows: Iterable[Row], columns: Sequence[str], path: str) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(columns))
        writer.writeheader()
        for row in rows:
            writer.writerow({k: "" if v is None else v for k, v in row.items()})


def _write_parquet(rows: Sequence[Row], columns: Sequence[str], path: str) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({c: pa.array([row[c] for row in rows]) for c in columns})
    pq.write_table(table, path)


def results_path(spec: str) -> Path:
    """A results table from a path to it or to the sweep's output directory."""
    path = Path(spec)
    if path.is_dir():
        for fmt in FORMATS:
            if (path / f"{TABLE_STEM}.{fmt}").is_file():
                return path / f"{TABLE_STEM}.{fmt}"
        raise SweepError(f"{spec}: no {TABLE_STEM}.parquet or {TABLE_STEM}.csv here; run hwsim sweep FILE --out {spec}")
    if not path.is_file():
        raise SweepError(f"{spec}: no such results table; "
                         "give results.parquet, results.csv or the sweep's --out folder")
    return path


def read_table(path: Path) -> list[Row]:
    """Rows of a results table; CSV cells of number columns come back as int or float, empty cells as None
    (other columns, such as point ids and axis values, stay text)."""
    if path.suffix == ".parquet":
        if not has_pyarrow():
            raise SweepError(f"{path}: reading Parquet needs pyarrow; pip install pyarrow")
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            rows: list[Row] = pq.read_table(path).to_pylist()
            return rows
        except (pa.ArrowException, OSError) as exc:  # a damaged file: ArrowInvalid, or OSError from a bad page
            raise SweepError(f"{path}: not a readable Parquet table ({exc}); rerun the sweep to rewrite it") from None
    try:
        with path.open(newline="", encoding="utf-8") as f:
            return [{k: _cell(v) if k in NUMBER_COLUMNS else (v or None) for k, v in row.items()}
                    for row in csv.DictReader(f)]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise SweepError(f"{path}: not a readable CSV table ({exc}); give a sweep's results.csv") from None


def _cell(text: str | None) -> int | float | None:
    if text is None or text == "":
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        raise SweepError(f"{text!r} in a number column; the results table was edited or damaged, "
                         "rerun the sweep to rewrite it") from None
    return None if math.isnan(value) else value


__all__ = ["LOG_NAME", "PointLog", "read_log", "read_table", "results_path", "table_format", "write_table"]
