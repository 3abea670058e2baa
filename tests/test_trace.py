"""HDF5 traces: hand-built records round trip, queries with hand-counted answers, and files that must not look whole."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zlib
from pathlib import Path

import h5py
import numpy as np
import pytest

import hwsim.trace
from hwsim.errors import HwsimError
from hwsim.trace import (
    OCCUPANCY_DTYPE,
    OPERANDS,
    OPS,
    RECORD_DTYPE,
    TraceError,
    TraceWriter,
    _codec,
    attrs_json,
    empty_records,
)
from hwsim.trace.seal import seal

LAYERS = ("conv1", "conv2", "fc")
BUFFERS = ("glb_ifmap", "glb_psum")

# (start_cycle, end_cycle, op, operand, layer id, step, address, words); conv2 (1) interleaves with conv1 (0).
GLB = [
    (0, 4, "read", "ifmap", 0, 0, 0, 16),  # row 0
    (2, 6, "read", "filter", 0, 1, 512, 8),  # row 1
    (4, 9, "fill", "ifmap", 0, 2, 16, 16),  # row 2
    (6, 7, "update", "psum", 1, 0, 1024, 4),  # row 3
    (8, 12, "read", "ifmap", 0, 3, 32, 16),  # row 4
    (10, 11, "write", "ofmap", 1, 1, 2048, 2),  # row 5
    (12, 20, "read", "filter", 2, 0, 4096, 32),  # row 6
    (14, 15, "update", "psum", 1, 2, 1028, 4),  # row 7
    (16, 18, "read", "ifmap", 2, 1, 64, 8),  # row 8
    (20, 25, "fill", "psum", 2, 2, 1032, 4),  # row 9
]
DRAM = [
    (0, 50, "read", "ifmap", 0, 0, 0, 256),
    (0, 40, "read", "filter", 0, 1, 8192, 128),
    (60, 90, "write", "ofmap", 2, 5, 16384, 64),
]
# (buffer id, cycle, bytes after the event, layer id)
OCCUPANCY = [(0, 0, 512, 0), (1, 3, 128, 0), (0, 9, 0, 0), (1, 14, 256, 1), (0, 16, 1024, 2)]
ATTRS = {"network": "alexnet", "batch": 1, "clock_mhz": 200.0, "double_buffered": True}


def records(rows: list[tuple]) -> np.ndarray:
    block = empty_records(len(rows))
    for i, (start, end, op, operand, layer, step, address, words) in enumerate(rows):
        block[i] = (start, end, OPS.index(op), OPERANDS.index(operand), layer, step, address, words, 0)
    return block


def occupancy(rows: list[tuple]) -> np.ndarray:
    return np.array(rows, dtype=OCCUPANCY_DTYPE)


def write_sample(path: Path, compression: str = "gzip") -> None:
    """The sample trace, appended in uneven blocks through chunks of 4 records (10 glb rows: 3 chunks)."""
    glb = records(GLB)
    with TraceWriter(path, ["glb", "dram"], LAYERS, BUFFERS, ATTRS, compression=compression,
                     chunk_records=4) as writer:
        writer.append("glb", glb[:3])
        writer.append("dram", records(DRAM))
        writer.append("glb", glb[3:4])
        writer.append_occupancy(occupancy(OCCUPANCY[:2]))
        writer.append("glb", glb[4:])
        writer.append_occupancy(occupancy(OCCUPANCY[2:]))


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    path = tmp_path / "run.h5"
    write_sample(path)
    return path


def steps(block: np.ndarray) -> list[tuple[int, int]]:
    """(layer id, step) of each record: a readable identity for the rows a query returned."""
    return list(zip(block["layer"].tolist(), block["step"].tolist()))


def test_codes_keep_their_documented_values() -> None:
    assert OPERANDS[:4] == ("ifmap", "filter", "psum", "ofmap")
    assert OPS == ("read", "write", "fill", "update", "skip")
    # 8 + 8 + 1 + 1 + 4 + 8 + 8 + 8 + 2 bytes (16-bit unit ids), packed; occupancy 2 + 8 + 8 + 4 (16-bit buffer ids)
    assert RECORD_DTYPE.itemsize == 48 and OCCUPANCY_DTYPE.itemsize == 22
    assert issubclass(TraceError, HwsimError)


@pytest.mark.parametrize("compression", ["gzip", "lzf", "none"])
def test_round_trip_exact_values(tmp_path: Path, compression: str) -> None:
    path = tmp_path / "run.h5"
    write_sample(path, compression)
    with hwsim.trace.open(path) as trace:
        assert trace.levels == ("glb", "dram")
        assert trace.layers == LAYERS and trace.buffers == BUFFERS
        assert (trace.n_records("glb"), trace.n_records("dram")) == (10, 3)
        for key, value in ATTRS.items():
            assert trace.attrs[key] == value and type(trace.attrs[key]) is type(value)
        assert trace.attrs["complete"] is True and trace.attrs["hwsim_trace_version"] == 5
        assert trace.units["start_cycle"] == "cycles" and trace.units["bytes"] == "bytes"
        glb = trace.select("glb")
        assert glb.dtype == RECORD_DTYPE
        assert glb[6].tolist() == (12, 20, 0, 1, 2, 0, 4096, 32, 0)  # fc reads 32 filter words at 4096
        assert glb[9].tolist() == (20, 25, 2, 2, 2, 2, 1032, 4, 0)  # fc fills 4 psum words at 1032
        assert glb["address"].tolist() == [0, 512, 16, 1024, 32, 2048, 4096, 1028, 64, 1032]
        assert trace.select("dram")["words"].tolist() == [256, 128, 64]
        columns = trace.columns("glb")  # the same records as one contiguous array per field
        assert columns["address"].tolist() == [0, 512, 16, 1024, 32, 2048, 4096, 1028, 64, 1032]
        assert all(columns[name].flags.c_contiguous and columns[name].tolist() == glb[name].tolist()
                   for name in RECORD_DTYPE.names or ())
        occ = trace.occupancy()
        assert occ["bytes"].tolist() == [512, 128, 0, 256, 1024]
        assert occ["buffer"].tolist() == [0, 1, 0, 1, 0]


def test_plain_h5py_reads_the_same_records(sample: Path) -> None:
    """Chunks are written pre-compressed; HDF5's own shuffle + deflate filters must decode them."""
    with h5py.File(sample, "r") as f:
        glb = f["levels/glb"]
        assert (glb.compression, glb.shuffle, glb.chunks) == ("gzip", True, (4,))
        assert np.array_equal(glb[()], records(GLB))
        assert np.array_equal(f["occupancy"][()], occupancy(OCCUPANCY))
        assert [n.decode() for n in f["names/layers"][()]] == list(LAYERS)


@pytest.mark.parametrize("deflater", ["installed", "zlib"])
def test_chunks_of_either_deflater_are_read_by_hdf5(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     deflater: str) -> None:
    """The writer deflates with ISA-L where it is installed, else zlib: HDF5's own filter must inflate either, and
    the reader's own decoding must give the same records."""
    if deflater == "zlib":
        monkeypatch.setattr(_codec, "_zlib_streams", zlib)
    rng = np.random.default_rng(3)
    block = empty_records(5_000)
    block["start_cycle"] = np.sort(rng.integers(0, 1 << 40, 5_000))
    block["end_cycle"] = block["start_cycle"] + rng.integers(1, 100, 5_000)
    block["address"] = rng.integers(0, 1 << 30, 5_000)
    block["words"] = 32
    path = tmp_path / f"{deflater}.h5"
    with TraceWriter(path, ["glb"], LAYERS, [], {}, chunk_records=1000) as writer:
        writer.append("glb", block)
    with h5py.File(path, "r") as f:
        assert np.array_equal(f["levels/glb"][()], block)
    with hwsim.trace.open(path) as trace:
        assert np.array_equal(trace.select("glb"), block)


def test_filters_by_layer_operand_op_and_window(sample: Path) -> None:
    with hwsim.trace.open(sample) as trace:
        # conv1 = rows 0, 1, 2, 4; conv2 = rows 3, 5, 7; fc = rows 6, 8, 9
        assert steps(trace.select("glb", layer="conv1")) == [(0, 0), (0, 1), (0, 2), (0, 3)]
        assert steps(trace.select("glb", layer=1)) == [(1, 0), (1, 1), (1, 2)]
        # ifmap = rows 0, 2, 4, 8; psum = rows 3, 7, 9; filter = 1, 6; ofmap = 5
        assert len(trace.select("glb", operand="ifmap")) == 4
        assert len(trace.select("glb", operand=OPERANDS.index("psum"))) == 3
        assert len(trace.select("glb", operand="ofmap")) == 1
        # read = rows 0, 1, 4, 6, 8; fill = 2, 9; update = 3, 7; write = 5
        assert len(trace.select("glb", op="read")) == 5
        assert steps(trace.select("glb", op="update")) == [(1, 0), (1, 2)]
        # [5, 10): start < 10 and end > 5 keeps rows 1 (2-6), 2 (4-9), 3 (6-7), 4 (8-12); row 0 ends at 4,
        # row 5 starts at 10
        assert steps(trace.select("glb", window_cycles=(5, 10))) == [(0, 1), (0, 2), (1, 0), (0, 3)]
        assert len(trace.select("glb", layer="conv1", operand="ifmap")) == 3  # rows 0, 2, 4
        # reads overlapping [11, 16): row 4 (8-12) and row 6 (12-20); row 8 starts at 16
        assert steps(trace.select("glb", op="read", window_cycles=(11, 16))) == [(0, 3), (2, 0)]
        assert len(trace.select("dram", layer="conv2")) == 0  # conv2 never touched dram
        assert trace.select("dram", layer="conv2").dtype == RECORD_DTYPE
        assert trace.occupancy(buffer="glb_psum")["bytes"].tolist() == [128, 256]
        assert trace.occupancy(window_cycles=(5, 15))["cycle"].tolist() == [9, 14]
        assert trace.occupancy(buffer=0, window_cycles=(5, 17))["bytes"].tolist() == [0, 1024]


def test_layer_index_covers_interleaved_layers(sample: Path) -> None:
    with h5py.File(sample, "r") as f:
        # conv1 rows 0..4 -> [0, 5); conv2 rows 3..7 -> [3, 8); fc rows 6..9 -> [6, 10)
        assert f["index/glb"][()].tolist() == [[0, 5], [3, 8], [6, 10]]
        # dram: conv1 rows 0, 1; conv2 none; fc row 2
        assert f["index/dram"][()].tolist() == [[0, 2], [0, 0], [2, 3]]


def test_layer_query_on_many_chunks_matches_a_full_filter(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    block = empty_records(10_000)
    block["layer"] = np.sort(rng.integers(0, 3, 10_000))  # layers in order ...
    block["layer"][5000:5100] = 0  # ... except a late burst of conv1 rows
    block["step"] = np.arange(10_000)
    block["start_cycle"] = rng.integers(0, 1 << 40, 10_000)
    block["end_cycle"] = block["start_cycle"] + rng.integers(1, 100, 10_000)
    block["address"] = rng.integers(0, 1 << 30, 10_000)
    path = tmp_path / "many.h5"
    with TraceWriter(path, ["glb"], LAYERS, [], {}, chunk_records=1000) as writer:
        for start in range(0, 10_000, 333):
            writer.append("glb", block[start:start + 333])
    with hwsim.trace.open(path) as trace:
        assert np.array_equal(trace.select("glb", chunk_records=777), block)
        for layer in range(3):
            assert np.array_equal(trace.select("glb", layer=layer, chunk_records=777),
                                  block[block["layer"] == layer])
        with h5py.File(path, "r") as f:
            assert f["index/glb"][0].tolist()[1] == 5100  # the burst stretches conv1's range


@pytest.mark.parametrize("chunk_records", [1, 3, 4, 5, 100])
def test_streaming_blocks_never_exceed_chunk_records(sample: Path, chunk_records: int) -> None:
    with hwsim.trace.open(sample) as trace:
        blocks = list(trace.records("glb", chunk_records=chunk_records))
        assert all(0 < len(b) <= chunk_records for b in blocks)
        assert np.array_equal(np.concatenate(blocks), records(GLB))
        blocks = list(trace.records("glb", layer="conv1", chunk_records=chunk_records))
        assert all(0 < len(b) <= chunk_records for b in blocks)
        assert sum(len(b) for b in blocks) == 4


def test_exception_inside_with_leaves_no_file(tmp_path: Path) -> None:
    path = tmp_path / "run.h5"
    for interrupt in (RuntimeError("simulator failed"), KeyboardInterrupt()):
        with (pytest.raises(type(interrupt)),
              TraceWriter(path, ["glb"], LAYERS, BUFFERS, ATTRS, chunk_records=4) as writer):
            writer.append("glb", records(GLB))  # two full chunks already handed to the file
            raise interrupt
        assert os.listdir(tmp_path) == []


def test_abort_deletes_the_temporary_and_refuses_close(tmp_path: Path) -> None:
    path = tmp_path / "run.h5"
    writer = TraceWriter(path, ["glb"], LAYERS, BUFFERS, ATTRS)
    assert sorted(os.listdir(tmp_path)) == [".run.h5.lock", ".run.h5.partial"]
    writer.append("glb", records(GLB))
    writer.abort()
    writer.abort()  # twice is harmless
    assert os.listdir(tmp_path) == []
    with pytest.raises(TraceError, match="aborted"):
        writer.close()
    with pytest.raises(TraceError, match="does not exist"):
        hwsim.trace.open(path)


def test_aborted_rewrite_keeps_the_old_trace(sample: Path) -> None:
    with pytest.raises(RuntimeError), TraceWriter(sample, ["glb"], LAYERS, BUFFERS, {"network": "vgg16"}) as writer:
        writer.append("glb", records(GLB[:1]))
        raise RuntimeError("stop")
    with hwsim.trace.open(sample) as trace:
        assert trace.attrs["network"] == "alexnet" and trace.n_records("glb") == 10
    with TraceWriter(sample, ["glb"], LAYERS, BUFFERS, {"network": "vgg16"}) as writer:
        writer.append("glb", records(GLB[:1]))
    with hwsim.trace.open(sample) as trace:
        assert trace.attrs["network"] == "vgg16" and trace.n_records("glb") == 1


def test_killed_run_leaves_only_a_partial_file_that_open_rejects(tmp_path: Path) -> None:
    script = (
        "import os, sys\n"
        "from hwsim.trace import TraceWriter, empty_records\n"
        "with TraceWriter(sys.argv[1], ['glb'], ['conv1'], [], {}, chunk_records=4) as w:\n"
        "    w.append('glb', empty_records(10))\n"
        "    os._exit(0)\n")
    subprocess.run([sys.executable, "-c", script, str(tmp_path / "run.h5")], check=True, timeout=60)
    assert sorted(os.listdir(tmp_path)) == [".run.h5.lock", ".run.h5.partial"]
    with pytest.raises(TraceError, match=r"\.run\.h5\.partial .*the run was interrupted"):
        hwsim.trace.open(tmp_path / ".run.h5.partial")
    with pytest.raises(TraceError):  # killed mid-write: not even a readable HDF5 file
        hwsim.trace.open(tmp_path / ".run.h5.partial", allow_incomplete=True)
    # the kernel dropped the killed run's lock: the next run on the path writes it and tidies up
    with TraceWriter(tmp_path / "run.h5", ["glb"], LAYERS, BUFFERS, ATTRS) as writer:
        writer.append("glb", records(GLB))
    assert os.listdir(tmp_path) == ["run.h5"]


def test_a_second_run_on_the_same_path_stops_at_once(tmp_path: Path) -> None:
    """Two runs given one output: the second is refused, naming the first's pid, and touches neither the first
    run's temporary file nor its result; once the first is done the path is free again."""
    path = tmp_path / "run.h5"
    first = TraceWriter(path, ["glb"], LAYERS, BUFFERS, ATTRS)
    first.append("glb", records(GLB))
    with pytest.raises(TraceError, match=rf"run\.h5: another hwsim run \(pid {os.getpid()}\) is writing it"):
        TraceWriter(path, ["glb"], LAYERS, BUFFERS, {"network": "vgg16"})
    assert sorted(os.listdir(tmp_path)) == [".run.h5.lock", ".run.h5.partial"]
    first.close()
    with hwsim.trace.open(path) as trace:
        assert trace.n_records("glb") == len(GLB)
    with TraceWriter(path, ["glb"], LAYERS, BUFFERS, {"network": "vgg16"}) as second:
        second.append("glb", records(GLB[:1]))
    with hwsim.trace.open(path) as trace:
        assert trace.attrs["network"] == "vgg16" and trace.n_records("glb") == 1
    assert os.listdir(tmp_path) == ["run.h5"]


def test_file_without_complete_flag_is_rejected(sample: Path, tmp_path: Path) -> None:
    with h5py.File(sample, "a") as f:
        del f.attrs["complete"]
    seal(str(sample))  # as if written without the flag
    with pytest.raises(TraceError, match="the run was interrupted; re-run the simulation") as err:
        hwsim.trace.open(sample)
    assert str(sample) in str(err.value)
    with hwsim.trace.open(sample, allow_incomplete=True) as trace:
        assert trace.n_records("glb") == 10
    bare = tmp_path / "bare.h5"
    with h5py.File(bare, "w") as f:
        f.create_dataset("levels/glb", data=records(GLB))
    with pytest.raises(TraceError, match="not an hwsim trace"):
        hwsim.trace.open(bare)


def test_missing_and_non_hdf5_files_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="does not exist"):
        hwsim.trace.open(tmp_path / "nope.h5")
    text = tmp_path / "notes.h5"
    text.write_text("not a trace\n")
    with pytest.raises(TraceError, match="not a readable HDF5 file"):
        hwsim.trace.open(text)


def test_identical_inputs_give_identical_files(tmp_path: Path) -> None:
    write_sample(tmp_path / "a.h5")
    write_sample(tmp_path / "b.h5")
    with h5py.File(tmp_path / "a.h5", "r") as a, h5py.File(tmp_path / "b.h5", "r") as b:
        for name in ("levels/glb", "levels/dram", "occupancy", "index/glb", "index/dram", "names/layers"):
            assert np.array_equal(a[name][()], b[name][()]), name
    assert (tmp_path / "a.h5").read_bytes() == (tmp_path / "b.h5").read_bytes()


def test_writer_rejects_bad_blocks(tmp_path: Path) -> None:
    path = tmp_path / "run.h5"
    with TraceWriter(path, ["glb"], LAYERS, BUFFERS, {}) as writer:
        with pytest.raises(TraceError, match="not declared; declared levels: glb"):
            writer.append("noc", records(GLB))
        with pytest.raises(TraceError, match="not declared"):
            writer.append("l3", records(GLB))
        with pytest.raises(TraceError, match="expected a 1-D numpy array"):
            writer.append("glb", np.zeros(10))
        with pytest.raises(TraceError, match="expected a 1-D numpy array"):
            writer.append("glb", records(GLB).astype(np.dtype(RECORD_DTYPE.descr, align=True)))
        with pytest.raises(TraceError, match="expected a 1-D numpy array"):
            writer.append_occupancy(records(GLB))
        writer.append("glb", records(GLB))  # the writer is still usable after rejected blocks
    with hwsim.trace.open(path) as trace:
        assert trace.n_records("glb") == 10


def test_out_of_table_codes_abandon_the_trace(tmp_path: Path) -> None:
    path = tmp_path / "run.h5"
    bad = records(GLB)
    bad["layer"][7] = 3  # only ids 0..2 exist
    writer = TraceWriter(path, ["glb"], LAYERS, BUFFERS, {})
    writer.append("glb", bad)
    with pytest.raises(TraceError, match="layer id 3 but only 3 exist"):
        writer.close()
    assert os.listdir(tmp_path) == []
    bad = occupancy(OCCUPANCY)
    bad["buffer"][0] = 2
    with (pytest.raises(TraceError, match="buffer id 2 but only 2 exist"),
          TraceWriter(path, ["glb"], LAYERS, BUFFERS, {}) as writer):
        writer.append_occupancy(bad)
    assert os.listdir(tmp_path) == []


def test_writer_rejects_bad_setup(tmp_path: Path) -> None:
    path = tmp_path / "run.h5"
    with pytest.raises(TraceError, match="must be distinct names from dram"):
        TraceWriter(path, ["glb", "l3"], LAYERS, BUFFERS, {})
    with pytest.raises(TraceError, match="distinct non-empty names"):
        TraceWriter(path, ["glb"], ["conv1", "conv1"], BUFFERS, {})
    with pytest.raises(TraceError, match="reserved"):
        TraceWriter(path, ["glb"], LAYERS, BUFFERS, {"complete": True})
    with pytest.raises(TraceError, match="attrs_json"):
        TraceWriter(path, ["glb"], LAYERS, BUFFERS, {"hardware": {"glb_bytes": 110592}})
    with pytest.raises(TraceError, match="compression 'zstd'"):
        TraceWriter(path, ["glb"], LAYERS, BUFFERS, {}, compression="zstd")
    assert os.listdir(tmp_path) == []


def test_structured_attrs_go_through_json(tmp_path: Path) -> None:
    path = tmp_path / "run.h5"
    hardware = {"glb": {"size_bytes": 110592, "banks": 27}, "clock_mhz": 200}
    with TraceWriter(path, ["glb"], LAYERS, BUFFERS, {"hardware": attrs_json(hardware)}):
        pass
    with hwsim.trace.open(path) as trace:
        assert json.loads(trace.attrs["hardware"]) == hardware
        assert trace.n_records("glb") == 0 and len(trace.select("glb")) == 0


def test_queries_naming_unknown_things_list_the_valid_names(sample: Path) -> None:
    with hwsim.trace.open(sample) as trace:
        with pytest.raises(TraceError, match="no level 'rf'; levels in this trace: glb, dram"):
            trace.records("rf")  # raised at the call, before iterating
        with pytest.raises(TraceError, match=r"no layer 'conv9'.*conv1, conv2, fc"):
            trace.records("glb", layer="conv9")
        with pytest.raises(TraceError, match="no layer 3"):
            trace.records("glb", layer=3)
        with pytest.raises(TraceError, match=r"no operand 'weights'.*ifmap, filter, psum, ofmap, other"):
            trace.records("glb", operand="weights")
        with pytest.raises(TraceError, match=r"no op 9.*read, write, fill, update"):
            trace.records("glb", op=9)
        with pytest.raises(TraceError, match=r"no buffer 'l2'.*glb_ifmap, glb_psum"):
            trace.occupancy(buffer="l2")
        with pytest.raises(TraceError, match="start <= end"):
            trace.records("glb", window_cycles=(10, 5))
    with pytest.raises(TraceError, match="was closed"):
        trace.select("glb")


def _damaged(sample: Path, damage) -> Path:
    """`sample` changed by `damage(h5py file)` and sealed again, as a hand-edited trace would be."""
    with h5py.File(sample, "a") as f:
        damage(f)
    seal(str(sample))
    return sample


def _rename_layer_as_first(f: h5py.File) -> None:
    names = f["names/layers"][()]
    names[1] = names[0]
    del f["names/layers"]
    f.create_dataset("names/layers", data=names)


def _flatten_index(f: h5py.File) -> None:
    index = f["index/glb"][()]
    del f["index/glb"]
    f.create_dataset("index/glb", data=index.reshape(-1))


def _huge_words(f: h5py.File) -> None:
    rows = f["levels/glb"][()]
    rows["words"] = 2**62  # ten of them sum past 2**63: int64 would wrap to a negative total
    f["levels/glb"][...] = rows


@pytest.mark.parametrize(("damage", "message"), [
    (_rename_layer_as_first, "its layer table names 'conv1' twice"),
    (_flatten_index, r"index/glb has shape \(6,\) of int64, not 3 integer \(first, end\) row pairs"),
])
def test_damaged_tables_are_refused_at_open(sample: Path, damage, message: str) -> None:
    with pytest.raises(TraceError, match=message):
        hwsim.trace.open(_damaged(sample, damage))


def test_a_record_beyond_any_tensor_is_refused_when_read(sample: Path) -> None:
    with hwsim.trace.open(_damaged(sample, _huge_words)) as trace, \
            pytest.raises(TraceError, match="a record of more than 1,099,511,627,776 words"):
        list(trace.records("glb"))


def test_a_trace_without_a_clock_is_an_error_where_seconds_are_needed(sample: Path) -> None:
    with hwsim.trace.open(sample) as trace, pytest.raises(TraceError, match="has no clock_hz attribute"):
        trace.clock_hz  # noqa: B018 - the property is what is tested
