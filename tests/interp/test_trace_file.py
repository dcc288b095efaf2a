"""Trace files: what the interpreter records saves and loads again; a hostile file is one
InvalidTraceError naming it and the reason, within bounded memory and time."""
import io
import json
import os
import threading
import zipfile

import numpy as np
import pytest

import tileworkbench.tile as ct
from tileworkbench.interp import InvalidTraceError, Trace, executor
from tileworkbench.tile import interpret
from tileworkbench.widgets.views import views_of_trace

from ..fuzz.engine import trace_difference


@ct.kernel
def differences(t_in, out):
    t = ct.load(t_in, (0,), (8,))
    ct.store(out, (0, 0), t[:, None] - t[None, :])


@ct.kernel
def reshaped_in_a_loop(x, y):
    i = ct.bid(0)
    acc = ct.zeros((4, 4), ct.float32)
    for k in range(3):
        acc = acc + ct.reshape(ct.load(x, (i * 3 + k,), (16,)), (4, 4))
    ct.store(y, (i, 0), acc)


def _round_trip(trace, tmp_path) -> Trace:
    trace.save(tmp_path / "t.npz")
    loaded = Trace.load(tmp_path / "t.npz")
    assert trace_difference(trace, loaded) is None
    return loaded


def test_two_broadcasts_of_one_line_are_two_events_that_save_and_load(tmp_path):
    trace = interpret(differences, (2,), (np.arange(8, dtype=np.float32), np.zeros((8, 8), np.float32)), trace=True)
    broadcasts = trace.by_op("broadcast")
    assert len(broadcasts) == 2 and broadcasts[0].line == broadcasts[1].line
    assert broadcasts[0].coords[0, 0, 1, 1] != broadcasts[1].coords[0, 0, 1, 1]   # rows vs columns
    _round_trip(trace, tmp_path)


def test_shape_ops_in_loops_and_in_several_batches_save_and_load(tmp_path, monkeypatch):
    monkeypatch.setattr(executor, "BATCH_ELEMENTS", 16)   # one block per batch
    x, y = np.arange(4 * 48, dtype=np.float32), np.zeros((16, 4), np.float32)
    trace = interpret(reshaped_in_a_loop, (4,), (x, y), trace=True)
    (reshape,) = trace.by_op("reshape")
    assert len(reshape.blocks) == len(reshape.status) == 1   # the same map everywhere: recorded once
    views_of_trace(_round_trip(trace, tmp_path), limit=20)


def _saved(tmp_path) -> "os.PathLike":
    path = tmp_path / "good.npz"
    interpret(differences, (2,), (np.arange(8, dtype=np.float32), np.zeros((8, 8), np.float32)), trace=True).save(path)
    return path


def _rewritten(path, change) -> None:
    """Rewrite the trace zip at `path`: `change(entries)` edits {name: array or bytes} in place."""
    with zipfile.ZipFile(path) as z:
        entries = {i.filename[:-4]: np.load(io.BytesIO(z.read(i))) for i in z.infolist()}
    meta = json.loads(entries["meta"].tobytes())
    entries["meta"] = meta
    change(entries)
    with zipfile.ZipFile(path, "w") as z:
        for name, value in entries.items():
            if name == "meta":
                value = np.frombuffer(json.dumps(value).encode(), np.uint8)
            buffer = io.BytesIO()
            if isinstance(value, bytes):
                buffer.write(value)
            else:
                np.lib.format.write_array(buffer, value)
            z.writestr(name + ".npy", buffer.getvalue())


def _set(entries, name, value):
    entries[name] = value


def _event0(**fields):
    return lambda entries: entries["meta"]["events"][0].update(fields)


@pytest.mark.parametrize("change, reason", [
    (lambda e: _set(e, "e0_status", np.zeros_like(e["e0_status"])), "statuses are not all among"),
    (lambda e: _set(e, "e0_status", np.full_like(e["e0_status"], 255)), "statuses are not all among"),
    (lambda e: _set(e, "e0_blocks", -e["e0_blocks"] - 1), "names a block outside the grid"),
    (lambda e: e["meta"].update(grid=[-2, 1, 1]), r"its grid's sizes must be an integer in \[0, "),
    (lambda e: e["meta"].update(grid=[0, 1, 1]), "is not 3 positive sizes"),
    (lambda e: e["meta"]["arrays"]["out"].update(shape=[1 << 30, 8]), r"viewing a grid of \[2, 1, 1\] and arrays of shapes \[\[8\], \[1073741824, 8\]\]"),
    (lambda e: e["meta"]["arrays"]["out"].update(dtype="object"), "is not a tile dtype"),
    (_event0(padding_value="lanes"), "entry e0_padding is missing"),
    (lambda e: (_event0(padding_value="lanes")(e), _set(e, "e0_padding", np.zeros((3, 3), np.float32))),
     r"padding float32\(3, 3\) is not one value per lane"),
    (_event0(padding_mode="SOMETIMES"), "padding_mode 'SOMETIMES' is not a PaddingMode"),
    (_event0(op="print"), "op 'print' is not a memory or shape op"),
    (_event0(line=-1), "line must be an integer"),
    (lambda e: e["e0_coords"].__setitem__((0, 0), 100), "touches elements outside array 't_in'"),
    (lambda e: _set(e, "e0_coords", e["e0_coords"] + 1), "lanes do not form a tile"),
    (_event0(shape=[0]), r"shape \[0\] is not a tile shape"),
    (lambda e: e["meta"]["events"][1].update(operand_shapes=[[8], [8]]), r"operand_shapes are not the 1 tile shape\(s\) of a reshape"),
    (lambda e: _set(e, "e0_coords", np.zeros(e["e0_coords"].shape, np.int64)), "not 32-bit integers"),
])
def test_a_trace_file_the_views_cannot_show_is_refused(tmp_path, change, reason):
    path = _saved(tmp_path)
    _rewritten(path, change)
    with pytest.raises(InvalidTraceError, match=reason) as info:
        Trace.load(path)
    assert str(path) in str(info.value)


def test_metadata_of_millions_of_json_objects_is_refused_before_parsing(tmp_path):
    path = tmp_path / "objects.npz"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        text = b'{"format": "tileworkbench-trace", "events": [' + b"{}," * (1 << 18) + b"{}]}"
        buffer = io.BytesIO()
        np.lib.format.write_array(buffer, np.frombuffer(text, np.uint8))
        z.writestr("meta.npy", buffer.getvalue())
    assert path.stat().st_size < 20_000
    with pytest.raises(InvalidTraceError, match="more than 131072 JSON objects"):
        Trace.load(path)


def test_metadata_bigger_than_its_limit_is_not_read(tmp_path):
    path = tmp_path / "big.npz"
    np.savez_compressed(path, meta=np.zeros(20 << 20, np.uint8))
    with pytest.raises(InvalidTraceError, match="entry meta has 20971"):
        Trace.load(path)


def test_a_device_is_refused_unread():
    with pytest.raises(InvalidTraceError, match="/dev/zero is not a regular file"):
        Trace.load("/dev/zero")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    path = tmp_path / "pipe.npz"
    os.mkfifo(path)
    outcome = []
    reader = threading.Thread(target=lambda: outcome.append(pytest.raises(InvalidTraceError, Trace.load, path)),
                              daemon=True)
    reader.start()
    reader.join(10)
    assert outcome and "is not a regular file" in str(outcome[0].value)


def test_a_file_larger_than_max_bytes_is_refused_unread(tmp_path):
    path = _saved(tmp_path)
    with pytest.raises(InvalidTraceError, match="more than the 100 a trace may take"):
        Trace.load(path, max_bytes=100)


def test_an_npy_header_of_version_3_is_refused(tmp_path):
    path = _saved(tmp_path)

    def version_3(entries):
        buffer = io.BytesIO()
        np.lib.format.write_array(buffer, entries["e0_status"], version=(2, 0))
        data = bytearray(buffer.getvalue())
        data[6] = 3
        entries["e0_status"] = bytes(data)
    _rewritten(path, version_3)
    with pytest.raises(InvalidTraceError, match=r"e0_status is a .npy of version \(3, 0\)"):
        Trace.load(path)


def test_a_zip_entry_flagged_encrypted_is_refused(tmp_path):
    path = _saved(tmp_path)
    data = bytearray(path.read_bytes())
    at = data.find(b"PK\x01\x02")   # the first central directory entry
    data[at + 8] |= 0x1   # its general purpose flags: encrypted
    path.write_bytes(bytes(data))
    with pytest.raises(InvalidTraceError, match="is encrypted"):
        Trace.load(path)


@ct.kernel
def joined(x, y):
    t = ct.load(x, (0, 0), (2, 4))
    ct.store(y, (0, 0), ct.cat((t, t), 1))


def test_a_shape_op_that_loads_is_drawn_with_its_recorded_operand_shapes(tmp_path):
    trace = interpret(joined, (1,), (np.ones((2, 4), np.float32), np.zeros((2, 8), np.float32)), trace=True)
    (cat,) = trace.by_op("cat")
    cat.coords[..., 0], cat.coords[..., 1] = 0, 0   # every element from the first operand's first: odd, but a map
    trace.save(tmp_path / "t.npz")
    loaded = Trace.load(tmp_path / "t.npz")
    assert loaded.by_op("cat")[0].operand_shapes == ((2, 4), (2, 4))
    views_of_trace(loaded, limit=20)


def _plain_coordinates(entries):
    """Coordinates as versions 1 and 2 store them, from version 3's lane differences."""
    for name in [n for n in entries if n.endswith("_coords")]:
        lanes = entries[name[:-len("coords")] + "status"].shape
        rows = np.cumsum(entries[name], axis=1, dtype=np.int32)
        entries[name] = np.moveaxis(rows.reshape((rows.shape[0], *lanes)), 0, -1)


def test_a_version_1_shape_op_without_operand_shapes_is_shown_flat(tmp_path):
    path = tmp_path / "v1.npz"
    interpret(joined, (1,), (np.ones((2, 4), np.float32), np.zeros((2, 8), np.float32)), trace=True).save(path)
    _rewritten(path, lambda e: (_plain_coordinates(e), e["meta"].update(version=1),
                                e["meta"]["events"][1].update(operand_shapes=None)))
    loaded = Trace.load(path)
    assert loaded.by_op("cat")[0].operand_shapes == ((8,), (8,))
    views_of_trace(loaded, limit=20)
