"""Which views a traced launch gets: one per memory or shape op line, each showing its own op."""
import xml.etree.ElementTree as ET

import numpy as np

import tileworkbench.tile as ct
from tileworkbench.interp import Status
from tileworkbench.widgets.svg import MIN_FONT
from tileworkbench.widgets.tile_space import TileSpaceView
from tileworkbench.widgets.views import views_of_trace


@ct.kernel
def two_loads(x, y):
    a = ct.load(x, (0, 0), (2, 4))
    b = ct.load(x, (1, 0), (2, 4))
    ct.store(y, (0, 0), a + b)


def test_a_second_load_of_the_same_array_gets_its_own_view():
    x, y = np.arange(32, dtype=np.float32).reshape(4, 8), np.zeros((2, 4), np.float32)
    trace = ct.interpret(two_loads, (1,), (x, y), trace=True)
    loads = [v for v in views_of_trace(trace) if isinstance(v, TileSpaceView) and "load" in v.to_svg()[:2000]]
    first = two_loads._pyfunc.__code__.co_firstlineno
    titles = [next(line for line in (f"line {first + 2}", f"line {first + 3}") if line in v.to_svg()) for v in loads]
    assert titles == [f"line {first + 2}", f"line {first + 3}"]


@ct.kernel
def add_1d(a, b, c):
    i = ct.bid(0)
    ct.store(c, (i,), ct.load(a, (i,), (1024,)) + ct.load(b, (i,), (1024,)))


@ct.kernel
def copy_rows(x, y):
    i = ct.bid(0)
    ct.store(y, (i, 0), ct.load(x, (i, 0), (1024, 4)))


@ct.kernel
def copy_3d(x, y):
    i = ct.bid(0)
    ct.store(y, (i, 0, 0), ct.load(x, (i, 0, 0), (2, 4, 4)))


def test_views_of_big_and_3d_arrays_build_and_draw():
    n = 1 << 20
    a = np.ones(n, np.float32)
    x = np.ones((1 << 17, 4), np.float32)
    cube = np.ones((5, 4, 4), np.float32)
    for trace, values in ((ct.interpret(add_1d, (n // 1024,), (a, a, np.zeros_like(a)), trace=True), {"a": a}),
                          (ct.interpret(copy_rows, (128,), (x, np.zeros_like(x)), trace=True), {"x": x}),
                          (ct.interpret(copy_3d, (3,), (cube, np.zeros_like(cube)), trace=True), {"x": cube})):
        views = views_of_trace(trace, values)
        assert [type(v).__name__ for v in views][:2] == ["CoverageView", "TileSpaceView"]
        for view in views:
            ET.fromstring(view.to_svg())


@ct.kernel
def ragged_copy(x, y):
    i, j = ct.bid(0), ct.bid(1)
    ct.store(y, (i, j), ct.load(x, (i, j), (4, 4), padding_mode=ct.PaddingMode.ZERO))


def test_each_view_shows_the_first_block_whose_lanes_do_more_than_a_plain_load_or_store():
    x = np.ones((4, 6), np.float32)
    trace = ct.interpret(ragged_copy, (1, 2), (x, np.zeros_like(x)), trace=True)
    load, store = views_of_trace(trace)[1:]
    assert load.data["index"] == store.data["index"] == [0, 1]   # block (0, 1) hangs over the right edge
    assert Status.PADDED in load.data["lane_status"] and Status.DROPPED in store.data["lane_status"]


@ct.kernel
def gather_rows(table, idx, out):
    i = ct.load(idx, (0,), (8,))
    ct.store(out, (0, 0), ct.gather(table, (i[:, None], ct.arange(4, dtype=ct.int32)[None, :])))


@ct.kernel
def transposed(x, y):
    ct.store(y, (0, 0), ct.transpose(ct.load(x, (0, 0), (2, 4))))


def test_views_show_the_ops_the_user_wrote_by_the_name_they_wrote():
    table = np.arange(40, dtype=np.float32).reshape(10, 4)
    trace = ct.interpret(gather_rows, (1,), (table, np.arange(8, dtype=np.int32), np.zeros((8, 4), np.float32)),
                trace=True)
    kinds = [type(v).__name__ for v in views_of_trace(trace)]
    assert "IndexMapView" in kinds and "TransformView" not in kinds   # no reshape/broadcast of the gather's own
    trace = ct.interpret(transposed, (1,), (np.ones((2, 4), np.float32), np.zeros((4, 2), np.float32)), trace=True)
    transform, = [v for v in views_of_trace(trace) if type(v).__name__ == "TransformView"]
    assert "transposed: transpose, line" in transform.data["title"]


@ct.kernel
def offset_rows(x, y, start):
    cols = start + ct.arange(8, dtype=ct.int32)     # start is broadcast to the tile's shape: not written
    row = ct.gather(x, cols)
    ct.store(y, (0, 0), ct.broadcast_to(row[None, :], (2, 8)))


def test_shape_ops_that_an_operator_makes_get_no_panel_and_the_written_ones_do():
    trace = ct.interpret(offset_rows, (1,), (np.arange(16, dtype=np.float32), np.zeros((2, 8), np.float32), 3), trace=True)
    assert any(e.op == "broadcast" and "cols = start" in e.source for e in trace.events)
    titles = [v.data["title"] for v in views_of_trace(trace, limit=10) if type(v).__name__ == "TransformView"]
    assert [t.split(",")[0] for t in titles] == ["offset_rows: reshape", "offset_rows: broadcast_to"]
    assert all("ct.store(y, (0, 0), ct.broadcast_to(row[None, :]" in t for t in titles)


@ct.kernel
def gather_transposed(x, rows, z, start):
    r = ct.load(rows, (0,), (4,))
    g = ct.gather(x, (r[:, None], start + ct.arange(8, dtype=ct.int32)[None, :]), padding_value=0)
    ct.store(z, (0, 0), ct.transpose(ct.reshape(g, (8, 4))))


def test_every_text_of_every_view_is_at_least_the_smallest_legible_size_and_scales_with_the_output():
    x = np.arange(80, dtype=np.float32).reshape(8, 10)
    trace = ct.interpret(gather_transposed, (1,), (x, np.array([6, 0, 3, 7], np.int32), np.zeros((8, 4), np.float32), 1),
                trace=True)
    views = views_of_trace(trace, limit=10)
    assert {type(v).__name__ for v in views} >= {"CoverageView", "TileSpaceView", "IndexMapView", "TransformView"}
    for view in views:
        root = ET.fromstring(view.to_svg())
        assert "max-width: 100%" in root.get("style"), type(view).__name__
        sizes = [float(e.get("font-size")) for e in root.iter() if e.get("font-size")]
        assert sizes and min(sizes) >= MIN_FONT, type(view).__name__


@ct.kernel
def executes_nothing(a, T: ct.Constant[int]):
    pass


def test_a_kernel_that_executes_no_op_gets_no_stepper():
    trace = ct.interpret(executes_nothing, (2,), (np.zeros(4, np.float32), 4), values=True)
    assert [type(v).__name__ for v in views_of_trace(trace)] == ["CoverageView"]
