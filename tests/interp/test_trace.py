"""Access traces: per-lane statuses, shape-op maps, and the versioned on-disk format."""
import json

import numpy as np
import pytest

import tileworkbench.tile as ct
from tileworkbench.interp import InvalidTraceError, Status, Trace, executor


@ct.kernel
def copy_ragged(x, y, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(y, (i,), ct.load(x, (i,), (TILE,), padding_mode=ct.PaddingMode.ZERO))


@ct.kernel
def gather_scatter(x, y, idx):
    index = ct.load(idx, (0,), (8,))
    values = ct.gather(x, index, mask=index != 3, padding_value=-1)
    ct.scatter(y, index, values)


@ct.kernel
def transposed(x, y):
    t = ct.load(x, (0, 0), (4, 2), order="F")
    ct.store(y, (0, 0), ct.permute(t, (1, 0)))


def test_ragged_load_marks_padded_lanes_and_store_marks_dropped_lanes():
    x = np.arange(10, dtype=np.float32)
    y = np.zeros_like(x)
    trace = ct.interpret(copy_ragged, (3,), (x, y, 4), trace=True)
    load, store = trace.by_op("load")[0], trace.by_op("store")[0]
    assert load.array == "x" and store.array == "y"
    assert load.counts() == {"LOADED": 10, "PADDED": 2}
    assert store.counts() == {"STORED": 10, "DROPPED": 2}
    last = load.for_block((2,))
    assert last.coords[0, :, 0].tolist() == [8, 9, 10, 11]
    assert last.status[0].tolist() == [Status.LOADED, Status.LOADED, Status.PADDED, Status.PADDED]
    assert load.source.strip().startswith("ct.store(y, (i,), ct.load(x")
    assert load.line == copy_ragged._pyfunc.__code__.co_firstlineno + 3


def test_gather_and_scatter_statuses_cover_masks_bounds_and_collisions():
    x = np.arange(10, dtype=np.int32)
    y = np.zeros(10, np.int32)
    idx = np.array([0, 3, -1, 12, 5, 5, 7, 1], np.int32)
    trace = ct.interpret(gather_scatter, (1,), (x, y, idx), trace=True)
    gather, scatter = trace.by_op("gather")[0], trace.by_op("scatter")[0]
    assert gather.status[0].tolist() == [Status.LOADED, Status.MASKED, Status.OUT_OF_BOUNDS, Status.OUT_OF_BOUNDS,
                                         Status.LOADED, Status.LOADED, Status.LOADED, Status.LOADED]
    assert scatter.status[0].tolist() == [Status.STORED, Status.STORED, Status.OUT_OF_BOUNDS, Status.OUT_OF_BOUNDS,
                                          Status.COLLISION, Status.COLLISION, Status.STORED, Status.STORED]
    assert gather.coords[0, :, 0].tolist() == idx.tolist()


def test_shape_ops_record_where_each_element_came_from():
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    y = np.zeros((2, 4), np.float32)
    trace = ct.interpret(transposed, (1,), (x, y), trace=True)
    load = trace.by_op("load")[0]
    # order='F': tile element (r, c) reads array element (c, r)
    assert load.coords[0, 1, 0].tolist() == [0, 1]
    permute = trace.by_op("permute")[0]
    assert permute.array is None and permute.shape == (2, 4)
    # output (0, 1) came from operand 0, flat position 2 of the (4, 2) tile, i.e. element (1, 0)
    assert permute.coords[0, 0, 1].tolist() == [0, 2]
    np.testing.assert_array_equal(y, x)


def test_trace_round_trips_through_its_file_format(tmp_path):
    x = np.arange(10, dtype=np.float32)
    trace = ct.interpret(copy_ragged, (3,), (x, np.zeros_like(x), 4), trace=True)
    path = tmp_path / "copy.npz"
    trace.save(path)
    back = Trace.load(path)
    assert back.kernel == "copy_ragged" and back.grid == (3, 1, 1)
    assert back.arrays == {"x": {"shape": [10], "dtype": "float32"}, "y": {"shape": [10], "dtype": "float32"}}
    assert len(back.events) == len(trace.events)
    for a, b in zip(trace.events, back.events):
        assert (a.op, a.array, a.line, a.source) == (b.op, b.array, b.line, b.source)
        np.testing.assert_array_equal(a.coords, b.coords)
        np.testing.assert_array_equal(a.status, b.status)
        np.testing.assert_array_equal(a.blocks, b.blocks)
    assert not list(tmp_path.glob("*.tmp"))


def test_trace_file_of_another_version_is_refused(tmp_path):
    path = tmp_path / "old.npz"
    meta = {"format": "tileworkbench-trace", "version": 99, "kernel": "k", "grid": [1, 1, 1], "arrays": {},
            "events": []}
    np.savez(path, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8))
    with pytest.raises(ValueError, match="version 99 trace"):
        Trace.load(path)


def test_traces_of_large_grids_are_merged_across_batches(monkeypatch):
    monkeypatch.setattr(executor, "BATCH_ELEMENTS", 1024)  # force several batches
    x = np.arange(1 << 16, dtype=np.float32)
    trace = ct.interpret(copy_ragged, (64,), (x, np.zeros_like(x), 1024), trace=True)
    assert len(trace.by_op("load")) == 1
    assert trace.by_op("load")[0].blocks[:, 0].tolist() == list(range(64))


def test_shape_op_events_record_their_operand_shapes_and_keep_them_on_disk(tmp_path):
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    trace = ct.interpret(transposed, (1,), (x, np.zeros((2, 4), np.float32)), trace=True)
    assert trace.by_op("permute")[0].operand_shapes == ((4, 2),)
    trace.save(tmp_path / "t.npz")
    assert Trace.load(tmp_path / "t.npz").by_op("permute")[0].operand_shapes == ((4, 2),)


@ct.kernel
def load_modes(xf, xi, y):
    i = ct.bid(0)
    a = ct.load(xf, (i,), (4,), padding_mode=ct.PaddingMode.NEG_ZERO)
    b = ct.load(xf, (i,), (4,), padding_mode=ct.PaddingMode.NAN)
    c = ct.load(xi, (i,), (4,))                                  # UNDETERMINED: zero
    ct.store(y, (i,), a + b + ct.astype(c, ct.float32))


@ct.kernel
def gather_per_block_padding(x, y, idx):
    values = ct.gather(x, ct.load(idx, (0,), (4,)), padding_value=ct.bid(0) * 10)
    ct.store(y, (ct.bid(0),), values)


def test_loads_record_their_padding_mode_and_the_value_padded_lanes_read():
    trace = ct.interpret(load_modes, (3,), (np.arange(10, dtype=np.float32), np.arange(10, dtype=np.int32),
                                   np.zeros(10, np.float32)), trace=True)
    neg_zero, nan, undetermined = trace.by_op("load")
    assert neg_zero.padding_mode == "NEG_ZERO" and str(neg_zero.padding_value) == "-0.0"
    assert nan.padding_mode == "NAN" and np.isnan(nan.padding_value)
    assert undetermined.padding_mode == "UNDETERMINED" and undetermined.padding_value == 0
    store = trace.by_op("store")[0]
    assert store.padding_mode is None and store.padding_value is None


def test_gather_records_its_padding_value_as_a_scalar_or_per_lane():
    x, idx = np.arange(10, dtype=np.int32), np.array([0, 3, -1, 12, 5, 5, 7, 1], np.int32)
    gather = ct.interpret(gather_scatter, (1,), (x, np.zeros(10, np.int32), idx), trace=True).by_op("gather")[0]
    assert gather.padding_mode is None and gather.padding_value == -1 and type(gather.padding_value) is int
    trace = ct.interpret(gather_per_block_padding, (3,), (x, np.zeros(12, np.int32), idx[:4]), trace=True)
    per_lane = trace.by_op("gather")[0]
    assert per_lane.padding_value.shape == (3, 4)
    assert per_lane.for_block((2,)).padding_value.tolist() == [[20, 20, 20, 20]]


def test_padding_survives_the_file_format(tmp_path):
    trace = ct.interpret(load_modes, (3,), (np.arange(10, dtype=np.float32), np.arange(10, dtype=np.int32),
                                   np.zeros(10, np.float32)), trace=True)
    trace.save(tmp_path / "t.npz")
    with np.load(tmp_path / "t.npz") as data:
        meta = json.loads(bytes(data["meta"]).decode(), parse_constant=lambda c: pytest.fail(f"non-JSON {c}"))
    assert meta["version"] == 3 and [e["padding_value"] for e in meta["events"][:3]] == [-0.0, "nan", 0]
    back = Trace.load(tmp_path / "t.npz")
    for a, b in zip(trace.events, back.events):
        assert a.padding_mode == b.padding_mode and repr(a.padding_value) == repr(b.padding_value)
    x, idx = np.arange(10, dtype=np.int32), np.array([0, 3, -1, 12], np.int32)
    ct.interpret(gather_per_block_padding, (3,), (x, np.zeros(12, np.int32), idx), trace=True).save(tmp_path / "g.npz")
    gather = Trace.load(tmp_path / "g.npz").by_op("gather")[0]
    assert gather.padding_value.tolist() == [[0] * 4, [10] * 4, [20] * 4]


def test_version_1_files_still_load_without_padding(tmp_path):
    meta = {"format": "tileworkbench-trace", "version": 1, "kernel": "k", "grid": [2, 1, 1],
            "arrays": {"x": {"shape": [8], "dtype": "float32"}},
            "events": [{"op": "load", "array": "x", "line": 3, "col": 4, "source": "ct.load(x, (i,), (4,))",
                        "shape": [4], "operand_shapes": None}]}
    np.savez(tmp_path / "v1.npz", meta=np.frombuffer(json.dumps(meta).encode(), np.uint8),
             e0_blocks=np.array([[0, 0, 0], [1, 0, 0]], np.int32),
             e0_coords=np.arange(8, dtype=np.int32).reshape(2, 4, 1), e0_status=np.ones((2, 4), np.uint8))
    (event,) = Trace.load(tmp_path / "v1.npz").events
    assert event.op == "load" and event.padding_mode is None and event.padding_value is None
    assert event.for_block((1,)).coords[0, :, 0].tolist() == [4, 5, 6, 7]


def test_padding_is_kept_when_traces_of_several_batches_are_merged(monkeypatch):
    monkeypatch.setattr(executor, "BATCH_ELEMENTS", 4)   # one block per batch
    x, idx = np.arange(10, dtype=np.int32), np.array([0, 3, -1, 12], np.int32)
    trace = ct.interpret(gather_per_block_padding, (8,), (x, np.zeros(32, np.int32), idx), trace=True)
    assert trace.by_op("gather")[0].padding_value[:, 0].tolist() == [0, 10, 20, 30, 40, 50, 60, 70]
    trace = ct.interpret(load_modes, (3,), (np.arange(10, dtype=np.float32), np.arange(10, dtype=np.int32),
                                   np.zeros(10, np.float32)), trace=True)
    assert [e.padding_mode for e in trace.by_op("load")] == ["NEG_ZERO", "NAN", "UNDETERMINED"]
    assert str(trace.by_op("load")[0].padding_value) == "-0.0"


# ---- malformed files ------------------------------------------------------------------------------------

def _meta(**changes) -> dict:
    meta = {"format": "tileworkbench-trace", "version": 1, "kernel": "k", "grid": [2, 1, 1],
            "arrays": {"x": {"shape": [8], "dtype": "float32"}},
            "events": [{"op": "load", "array": "x", "line": 3, "col": 4, "source": "ct.load(x, (i,), (4,))",
                        "shape": [4], "operand_shapes": None}]}
    meta.update(changes)
    return meta


def _write(path, meta, **arrays):
    text = meta if isinstance(meta, bytes) else json.dumps(meta).encode()
    entries = {"e0_blocks": np.array([[0, 0, 0], [1, 0, 0]], np.int32),
               "e0_coords": np.arange(8, dtype=np.int32).reshape(2, 4, 1), "e0_status": np.ones((2, 4), np.uint8)}
    entries.update(arrays)
    np.savez(path, meta=np.frombuffer(text, np.uint8), **{k: v for k, v in entries.items() if v is not None})
    return path


def _zip_bomb(path):
    """A small zip whose status entry claims 2 GiB (and holds the first 16 MiB of them: they compress
    a thousandfold, and nothing past the claim is read anyway)."""
    import zipfile
    header = np.lib.format.header_data_from_array_1_0(np.zeros(1, np.uint8))
    header["shape"] = (2, 1 << 30)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("meta.npy", _npy(np.frombuffer(json.dumps(_meta(events=[dict(_meta()["events"][0],
                                                                              shape=[1 << 24])])).encode(), np.uint8)))
        z.writestr("e0_blocks.npy", _npy(np.array([[0, 0, 0], [1, 0, 0]], np.int32)))
        with z.open("e0_status.npy", "w", force_zip64=True) as member:
            np.lib.format.write_array_header_1_0(member, header)
            member.write(bytes(1 << 24))
    return path


def _npy(array) -> bytes:
    import io
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array)
    return buffer.getvalue()


@pytest.mark.parametrize("make, reason", [
    (lambda p: p.write_bytes(b"not a zip at all"), "BadZipFile"),
    (lambda p: p.write_bytes(b""), "BadZipFile"),
    (lambda p: _write(p, b"{not json"), "JSONDecodeError"),
    (lambda p: _write(p, b"\xff\xfe"), "UnicodeDecodeError"),
    (lambda p: _write(p, b"[" * 100000 + b"]" * 100000), "RecursionError"),
    (lambda p: _write(p, _meta(events=[{"op": "load"}])), "event 0's array None is not one of the trace's arrays"),
    (lambda p: _write(p, _meta(), e0_status=None), "entry e0_status is missing"),
    (lambda p: _write(p, _meta(), e0_status=np.ones((2, 5), np.uint8)), "do not match its shape"),
    (lambda p: _write(p, _meta(), e0_coords=np.zeros((2, 4, 3), np.int32)), "coordinates"),
    (lambda p: _write(p, _meta(), e0_status=np.array([None] * 8, object)), "Python objects"),
    (lambda p: _write(p, _meta(format="something else")), "is not a tileworkbench trace"),
    (lambda p: _write(p, _meta(version="nine")), "version 'nine' trace"),
    (lambda p: p.write_bytes(_write(p, _meta()).read_bytes()[:200]), "BadZipFile"),
])
def test_a_malformed_trace_file_is_one_invalid_trace_error_naming_the_file(tmp_path, make, reason):
    path = tmp_path / "bad.npz"
    make(path)
    with pytest.raises(InvalidTraceError, match=reason) as info:
        Trace.load(path)
    assert str(path) in str(info.value)


def test_a_trace_version_written_as_a_string_loads(tmp_path):
    (event,) = Trace.load(_write(tmp_path / "t.npz", _meta(version="2"))).events
    assert event.coords[1, :, 0].tolist() == [4, 5, 6, 7]


def test_a_zip_bomb_is_refused_before_its_arrays_are_allocated(tmp_path):
    path = _zip_bomb(tmp_path / "bomb.npz")
    assert path.stat().st_size < 8 << 20
    with pytest.raises(InvalidTraceError, match=r"e0_status of shape \(2, 1073741824\) needs 2147483648 bytes"):
        Trace.load(path)


@ct.kernel
def copy_2d(x, y):
    i, j = ct.bid(0), ct.bid(1)
    ct.store(y, (i, j), ct.load(x, (i, j), (16, 16)))


def test_coordinates_are_saved_as_lane_differences_that_compress_well(tmp_path):
    x = np.zeros((256, 256), np.float32)
    trace = ct.interpret(copy_2d, (16, 16), (x, np.zeros_like(x)), trace=True)
    trace.save(tmp_path / "t.npz")
    raw = sum(e.coords.nbytes for e in trace.events)
    assert (tmp_path / "t.npz").stat().st_size < raw / 50
    for a, b in zip(trace.events, Trace.load(tmp_path / "t.npz").events):
        np.testing.assert_array_equal(a.coords, b.coords)


@ct.kernel
def zero_d_copy(x, y):
    ct.store(y, (), ct.load(x, (), ()))


def test_a_trace_of_0d_arrays_round_trips(tmp_path):
    trace = ct.interpret(zero_d_copy, (2,), (np.array(3.0, np.float32), np.array(0.0, np.float32)), trace=True)
    trace.save(tmp_path / "t.npz")
    back = Trace.load(tmp_path / "t.npz").events
    assert [e.coords.shape for e in back if e.op in ("load", "store")] == [(2, 0)] * 2
    for a, b in zip(trace.events, back):
        np.testing.assert_array_equal(a.coords, b.coords)
