"""Streamed trace reductions: `Trace.column_blocks` and the summary and query totals, against plain numpy over the
whole small datasets written here (several chunks, every compression, layers in runs and interleaved), and sums
past float64's exact range against Python integers."""

from __future__ import annotations

import csv
import json
from dataclasses import asdict
from pathlib import Path

import h5py
import numpy as np
import pytest

import hwsim.trace
from hwsim.flows.trace_stats import NamedRow, query_trace, summarize_trace
from hwsim.trace import OPERANDS, OPS, RECORD_DTYPE, TraceError, TraceWriter, empty_records
from hwsim.trace.seal import seal

LAYERS = ("conv1", "conv2", "conv3", "fc")
LAYER_WORD_BITS = (8, 16, 16, 32)
LEVELS = ("dram", "glb", "pe")
CHUNK_RECORDS = 1000
LEVEL_RECORDS = {"dram": 4321, "glb": 0, "pe": 2500}


def random_records(rng: np.random.Generator, n: int, negative_words: bool) -> np.ndarray:
    """`n` records of every op and operand, layers in order but for an interleaved stretch, words up to 2**30
    (some negative when `negative_words`: skipped MACs at the PE level)."""
    block = empty_records(n)
    block["start_cycle"] = np.sort(rng.integers(0, 1 << 34, n))
    block["end_cycle"] = block["start_cycle"] + rng.integers(0, 5000, n)
    block["op"] = rng.integers(0, len(OPS), n)
    block["operand"] = rng.integers(0, len(OPERANDS), n)
    block["layer"] = np.sort(rng.integers(0, len(LAYERS), n))
    block["layer"][n // 3:n // 2] = rng.integers(0, len(LAYERS), n // 2 - n // 3)
    block["step"] = np.arange(n)
    block["address"] = rng.integers(0, 1 << 40, n)
    block["words"] = rng.integers(1, 1 << 30, n)
    if negative_words:
        block["words"][::3] *= -1
    return block


@pytest.fixture(scope="module", params=["gzip", "lzf", "none"])
def written(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
            ) -> tuple[Path, dict[str, np.ndarray]]:
    """A trace of three levels in chunks of CHUNK_RECORDS (one level empty) and the records written to it."""
    rng = np.random.default_rng(11)
    levels = {level: random_records(rng, n, level == "pe") for level, n in LEVEL_RECORDS.items()}
    path = tmp_path_factory.mktemp("stream") / f"{request.param}.h5"
    attrs = {"network": "synthetic", "clock_hz": 2e8, "word_bits": 16,
             "layer_word_bits_json": json.dumps(LAYER_WORD_BITS)}
    with TraceWriter(path, LEVELS, LAYERS, [], attrs, compression=request.param,
                     chunk_records=CHUNK_RECORDS) as writer:
        for level, block in levels.items():
            for start in range(0, len(block), 777):  # appends that straddle the chunks
                writer.append(level, block[start:start + 777])
    return path, levels


def test_column_blocks_hold_every_field_of_every_record(written: tuple[Path, dict[str, np.ndarray]]) -> None:
    path, levels = written
    with hwsim.trace.open(path) as trace:
        for level, whole in levels.items():
            blocks = list(trace.column_blocks(level))
            assert all(0 < len(b) <= CHUNK_RECORDS for b in blocks)
            assert sum(len(b) for b in blocks) == len(whole)
            for name in RECORD_DTYPE.names or ():
                got = [b[name] for b in blocks]
                assert np.array_equal(np.concatenate(got) if got else whole[name][:0], whole[name]), (level, name)
            rows = [b.records() for b in blocks]
            assert np.array_equal(np.concatenate(rows) if rows else whole[:0], whole)


def test_filtered_column_blocks_are_the_filtered_records(written: tuple[Path, dict[str, np.ndarray]]) -> None:
    path, levels = written
    whole = levels["dram"]
    c0, c1 = int(np.quantile(whole["start_cycle"], 0.2)), int(np.quantile(whole["start_cycle"], 0.7))
    with hwsim.trace.open(path) as trace:
        for layer in (None, "conv2"):
            for op in (None, "read"):
                expected = trace.select("dram", layer=layer, op=op, window_cycles=(c0, c1))
                blocks = list(trace.column_blocks("dram", layer=layer, op=op, window_cycles=(c0, c1)))
                assert len(expected) and all(len(b) for b in blocks)
                assert np.array_equal(np.concatenate([b.records() for b in blocks]), expected)
                assert np.array_equal(np.concatenate([b["words"] for b in blocks]), expected["words"])
                words = [b.where(b["words"] % 2 == 0) for b in blocks]  # a filter of a filter
                assert np.array_equal(np.concatenate([b.records() for b in words]),
                                      expected[expected["words"] % 2 == 0])
                first = np.concatenate([b.records(5) for b in blocks])
                assert np.array_equal(first, np.concatenate([b[:5] for b in trace.records(
                    "dram", layer=layer, op=op, window_cycles=(c0, c1), chunk_records=CHUNK_RECORDS)]))


def numpy_summary(levels: dict[str, np.ndarray]) -> tuple[dict, list[dict]]:
    """Per-level and per-layer totals of the whole arrays: what `summarize_trace` reports."""
    word_bytes = np.array(LAYER_WORD_BITS) // 8
    per_level, per_layer = {}, []
    for level, r in levels.items():
        per_level[level] = {"records": len(r), "words": int(r["words"].sum()),
                            "bytes": int((r["words"] * word_bytes[r["layer"]]).sum()),
                            "first_cycle": int(r["start_cycle"].min()) if len(r) else None,
                            "last_cycle": int(r["end_cycle"].max()) if len(r) else None}
    for i, name in enumerate(LAYERS):
        mine = {level: r[r["layer"] == i] for level, r in levels.items()}
        starts = [int(m["start_cycle"].min()) for m in mine.values() if len(m)]
        ends = [int(m["end_cycle"].max()) for m in mine.values() if len(m)]
        per_layer.append({"name": name, "first_cycle": min(starts), "last_cycle": max(ends),
                          "records": {level: len(m) for level, m in mine.items()},
                          "words": {level: int(m["words"].sum()) for level, m in mine.items()}})
    return per_level, per_layer


def test_summary_equals_numpy_over_the_whole_levels(written: tuple[Path, dict[str, np.ndarray]]) -> None:
    path, levels = written
    with hwsim.trace.open(path) as trace:
        doc = asdict(summarize_trace(trace))
    per_level, per_layer = numpy_summary(levels)
    assert doc["levels"] == per_level
    assert list(doc["layers"]) == per_layer
    assert doc["first_cycle"] == min(v["first_cycle"] for v in per_level.values() if v["records"])
    assert doc["last_cycle"] == max(v["last_cycle"] for v in per_level.values() if v["records"])


def named(rows: np.ndarray) -> list[NamedRow]:
    """Records with their codes spelled out, as the query reports them."""
    return [(int(r["start_cycle"]), int(r["end_cycle"]), OPS[r["op"]], OPERANDS[r["operand"]], LAYERS[r["layer"]],
             int(r["step"]), int(r["address"]), int(r["words"]), "unit") for r in rows]


@pytest.mark.parametrize(("level", "layer", "op", "operand", "window"), [
    ("dram", None, None, None, False),
    ("dram", "conv2", None, None, False),
    ("dram", None, "read", "ifmap", True),
    ("pe", "conv3", "update", None, True),
    ("pe", None, None, "psum", False),
])
def test_query_equals_numpy_over_the_whole_level(written: tuple[Path, dict[str, np.ndarray]], level: str,
                                                 layer: str | None, op: str | None, operand: str | None,
                                                 window: bool) -> None:
    path, levels = written
    r = levels[level]
    cycles = (int(np.quantile(r["start_cycle"], 0.3)), int(np.quantile(r["end_cycle"], 0.8))) if window else None
    keep = np.ones(len(r), dtype=bool)
    if layer is not None:
        keep &= r["layer"] == LAYERS.index(layer)
    if op is not None:
        keep &= r["op"] == OPS.index(op)
    if operand is not None:
        keep &= r["operand"] == OPERANDS.index(operand)
    if cycles is not None:
        keep &= (r["start_cycle"] < cycles[1]) & (r["end_cycle"] > cycles[0])
    match = r[keep]
    sunk: list[NamedRow] = []
    with hwsim.trace.open(path) as trace:
        q = query_trace(trace, level, layer, op, operand, cycles, limit=1500, rows_sink=sunk.extend)
    assert 0 < q.records == len(match)
    assert q.words == int(match["words"].sum())
    word_bytes = np.array(LAYER_WORD_BITS) // 8
    assert q.bytes == (None if level == "pe" else int((match["words"] * word_bytes[match["layer"]]).sum()))
    assert (q.first_cycle, q.last_cycle) == (int(match["start_cycle"].min()), int(match["end_cycle"].max()))
    pairs = sorted(set(zip(match["op"].tolist(), match["operand"].tolist())))
    assert [(b.op, b.operand, b.records, b.words) for b in q.by_op_operand] == [
        (OPS[o], OPERANDS[x], int(((match["op"] == o) & (match["operand"] == x)).sum()),
         int(match["words"][(match["op"] == o) & (match["operand"] == x)].sum())) for o, x in pairs]
    assert list(q.first_records) == named(match[:1500])  # the limit spans several chunks
    assert sunk == named(match)


def test_a_query_matching_nothing_has_empty_totals(written: tuple[Path, dict[str, np.ndarray]]) -> None:
    path, _ = written
    with hwsim.trace.open(path) as trace:
        q = query_trace(trace, "glb")
    assert (q.records, q.words, q.bytes, q.first_cycle, q.last_cycle) == (0, 0, 0, None, None)
    assert q.by_op_operand == () and q.first_records == ()


def test_words_past_float64s_exact_range_sum_exactly(tmp_path: Path) -> None:
    """10,001 records of 2**40 - 1 words per layer: an odd total past 2**53, which float64 cannot hold; layers
    alternate (every chunk holds both) at the glb, one layer alone at the dram."""
    n, words = 10_001, (1 << 40) - 1
    total = n * words
    assert int(float(total)) != total
    glb = empty_records(2 * n)
    glb["layer"] = np.arange(2 * n) % 2
    glb["words"] = words
    dram = empty_records(n)
    dram["layer"] = 1
    dram["words"] = words
    path = tmp_path / "big-words.h5"
    with TraceWriter(path, ["glb", "dram"], LAYERS, [], {"word_bits": 8}, chunk_records=4096) as writer:
        writer.append("glb", glb)
        writer.append("dram", dram)
    with hwsim.trace.open(path) as trace:
        summary = summarize_trace(trace)
        q = query_trace(trace, "glb", layer="conv1")
    assert summary.layers[0].words == {"glb": total, "dram": 0}
    assert summary.layers[1].words == {"glb": total, "dram": total}
    assert summary.levels["glb"].words == 2 * total and summary.levels["dram"].bytes == total
    assert (q.records, q.words, q.by_op_operand[0].words) == (n, total, total)


def test_a_damaged_chunk_is_an_error_not_a_total(tmp_path: Path) -> None:
    path = tmp_path / "damaged.h5"
    block = empty_records(3000)
    block["words"] = 1
    with TraceWriter(path, ["glb"], LAYERS, [], {}, chunk_records=1000) as writer:
        writer.append("glb", block)
    with h5py.File(path, "a") as f:
        rows = f["levels/glb"][()]
        rows["op"][2500] = len(OPS)  # a code past the op table, in the third chunk
        f["levels/glb"][...] = rows
    seal(str(path))
    with hwsim.trace.open(path) as trace:
        with pytest.raises(TraceError, match="an op code past 4 in rows from 2,000"):
            summarize_trace(trace)
        with pytest.raises(TraceError, match="an op code past 4 in rows from 2,000"):
            query_trace(trace, "glb", op="read")


def test_cli_summary_and_query_report_the_streamed_totals(cli, written: tuple[Path, dict[str, np.ndarray]],
                                                          tmp_path: Path) -> None:
    path, levels = written
    per_level, per_layer = numpy_summary(levels)
    result = cli("trace", "summary", str(path), "--json")
    assert result.code == 0, result.err
    assert result.json()["levels"] == per_level and result.json()["layers"] == per_layer
    out = tmp_path / "pe.csv"
    result = cli("trace", "query", str(path), "--level", "pe", "--op", "read", "--csv", str(out), "--json")
    assert result.code == 0, result.err
    match = levels["pe"][levels["pe"]["op"] == OPS.index("read")]
    assert (result.json()["records"], result.json()["words"]) == (len(match), int(match["words"].sum()))
    with open(out, newline="") as f:
        assert [int(row["step"]) for row in csv.DictReader(f)] == match["step"].tolist()
