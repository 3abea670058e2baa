"""tests/data: every file of published figures names its source and reads as the tests expect."""

from __future__ import annotations

import pytest
from conftest import DATA, reference

FILES = sorted(p.name for p in DATA.iterdir() if p.suffix in (".csv", ".yaml"))


@pytest.mark.parametrize("name", FILES)
def test_every_reference_file_names_its_source(name: str) -> None:
    text = (DATA / name).read_text()
    if name.endswith(".csv"):
        header = [line for line in text.splitlines() if line.startswith("#")]
        assert header, f"{name}: no provenance lines before the header"
        rows = reference(name)
        assert rows and all(None not in row for row in rows), name  # no ragged rows
        assert any("Source:" in line for line in header) or all(row.get("source") for row in rows), name
    else:
        doc = reference(name)
        sources = [doc.get("source")] if "source" in doc else [v.get("source") for v in doc.values()]
        assert sources and all(isinstance(s, str) and s for s in sources), name

