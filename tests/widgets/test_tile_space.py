"""Tile space view: geometry read back from real loads/stores, padding regions, sliders, SVG export."""
import dataclasses
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import tileworkbench.tile as ct
from tileworkbench.interp import Status
from tileworkbench.kernels import transpose
from tileworkbench.profile.access import analyze_trace
from tileworkbench.widgets.tile_space import (
    MIN_CELL,
    PALETTE,
    TileSpaceView,
    padding_mode_of,
    probe,
    tile_geometry,
    tile_space_data,
    warp_fill,
)

SVG = "{http://www.w3.org/2000/svg}"


@ct.kernel
def copy_ragged(x, y):
    i, j = ct.bid(0), ct.bid(1)
    ct.store(y, (i, j), ct.load(x, (i, j), (4, 8), padding_mode=ct.PaddingMode.NAN))


@ct.kernel
def copy_fortran(x, y):
    i, j = ct.bid(0), ct.bid(1)
    ct.store(y, (i, j), ct.load(x, (i, j), (4, 2), order="F"), order="F")


@ct.kernel
def copy_1d(x, y):
    i = ct.bid(0)
    ct.store(y, (i,), ct.load(x, (i,), (4,)))


def cells(svg_text, cls):
    root = ET.fromstring(svg_text)
    return [e for e in root.iter(f"{SVG}rect") if e.get("class") == cls]


def test_ragged_edge_tile_splits_into_inside_and_padding():
    x = np.arange(10 * 12, dtype=np.float32).reshape(10, 12)
    trace = ct.interpret(copy_ragged, (3, 2), (x.copy(), np.zeros_like(x)), trace=True)
    view = TileSpaceView.from_trace(trace, op="load", array="x", block=(2, 1), values=x)
    d = view.data
    assert (d["index"], d["tile_shape"], d["order"]) == ([2, 1], [4, 8], [0, 1])
    assert d["padding_mode"] == "NAN" and d["tiles2"] == [3, 2]
    status = d["lane_status"].reshape(4, 8)
    assert (status[:2, :4] == Status.LOADED).all() and (status[2:] == Status.PADDED).all()
    assert (status[:, 4:] == Status.PADDED).all()
    assert d["lane_r"].reshape(4, 8)[:, 0].tolist() == [8, 9, 10, 11]
    assert d["lane_c"].reshape(4, 8)[0].tolist() == list(range(8, 16))
    # padding regions: tiles (2, 0) and (2, 1) hang below the array, tiles (0..2, 1) past its right edge
    padding = d["regions"][d["regions"][:, 4] == 1]
    assert sorted({(int(r), int(c)) for r, c in padding[:, 5:]}) == [(0, 1), (1, 1), (2, 0), (2, 1)]
    assert d["values"].shape == (10, 12) and d["values"][9, 11] == x[9, 11]
    svg = view.to_svg()
    assert len(cells(svg, "lane")) == 32 and len(cells(svg, "padding")) == len(padding) == 5
    assert len(cells(svg, "inside")) == 1 and len(cells(svg, "tile")) == 1
    assert sum(c.get("data-status") == "PADDED" for c in cells(svg, "lane")) == 24
    assert all(c.get("fill") == PALETTE["NAN"] for c in cells(svg, "padding"))


def test_order_f_lane_r_c_reads_element_c_r():
    x = np.arange(6 * 4, dtype=np.float32).reshape(6, 4)
    trace = ct.interpret(copy_fortran, (1, 3), (x, np.zeros_like(x)), trace=True)
    d = TileSpaceView.from_trace(trace, op="load", array="x", block=(0, 2)).data
    assert (d["index"], d["tile_shape"], d["order"]) == ([0, 2], [4, 2], [1, 0])
    assert d["box2"] == [2, 4]   # the (4, 2) tile of the transposed tile space is 2 x 4 in the array
    lanes = np.stack([d["lane_r"], d["lane_c"]], 1).reshape(4, 2, 2)
    assert lanes[1, 0].tolist() == [4, 1] and lanes[0, 1].tolist() == [5, 0]
    assert (d["lane_status"] == Status.LOADED).all()


def test_store_marks_dropped_lanes_and_the_outside_as_dropped():
    x = np.arange(10 * 12, dtype=np.float32).reshape(10, 12)
    trace = ct.interpret(copy_ragged, (3, 2), (x, np.zeros_like(x)), trace=True)
    view = TileSpaceView.from_trace(trace, op="store", array="y", block=(2, 1))
    assert set(np.unique(view.data["lane_status"])) == {Status.STORED, Status.DROPPED}
    assert all(c.get("fill") == PALETTE["dropped"] for c in cells(view.to_svg(), "padding"))


def test_1d_array_is_one_row():
    x = np.arange(10, dtype=np.float32)
    trace = ct.interpret(copy_1d, (3,), (x, np.zeros_like(x)), trace=True)
    d = TileSpaceView.from_trace(trace, op="load", array="x", block=(2,), values=x).data
    assert d["shape2"] == [1, 10] and d["index"] == [2] and d["tile_shape"] == [4]
    assert d["lane_r"].tolist() == [0, 0, 0, 0] and d["lane_c"].tolist() == [8, 9, 10, 11]
    assert d["padding_mode"] == "UNDETERMINED"
    ET.fromstring(TileSpaceView.from_trace(trace, op="load", array="x", block=(2,)).to_svg())


def test_explorer_runs_a_real_load_and_sliders_recompute():
    view = TileSpaceView(array_shape=(10, 12), tile_shape=(4, 8), index=(2, 1), order="F", padding_mode="ZERO")
    d = view.data
    assert d["order"] == [1, 0] and d["box2"] == [8, 4] and d["index"] == [2, 1]
    assert d["lane_r"].min() == 8 and d["lane_c"].min() == 8   # tile (2, 1) of the transposed space
    assert view.slider_ranges() == {"index_max": [2, 1], "shape_max": [16, 16]}
    view.tile_shape = [8, 8]             # fewer tiles: the index is clamped and the picture recomputed
    assert view.index == [1, 1] and view.data["tile_shape"] == [8, 8] and view.data["index"] == [1, 1]
    view.index = [0, 0]
    assert view.data["lane_r"].min() == 0 and "(0, 0), (8, 8)" in view.data["title"]


def test_probe_matches_the_formula_with_negative_index():
    e = probe((5,), (4,), (-1,))
    assert e.coords[0, :, 0].tolist() == [-4, -3, -2, -1] and (e.status == Status.PADDED).all()
    assert tile_geometry(e.coords[0], 1) == ((-1,), (4,), (0,))


def test_refusals_are_clear():
    with pytest.raises(ValueError, match="1-D and 2-D"):
        TileSpaceView(array_shape=(2, 3, 4), tile_shape=(1, 2, 2))
    with pytest.raises(ValueError, match="powers of two"):
        TileSpaceView(array_shape=(8, 8), tile_shape=(3, 4))
    x = np.zeros((4, 4, 4), np.float32)
    event = probe((4, 4), (2, 2), (0, 0))
    with pytest.raises(ValueError, match="shape \\(4, 4, 4\\)"):
        tile_space_data(event, x.shape)


MODE = ct.PaddingMode.NEG_INF


@ct.kernel
def copy_with_mode(x, y):
    i = ct.bid(0)
    ct.store(y, (i,), ct.load(x, (i,), (8,), padding_mode=MODE))   # the line does not say which mode


def test_the_recorded_padding_mode_colours_the_padding_and_the_legend_shows_its_value():
    x = np.arange(10, dtype=np.float32)
    view = TileSpaceView.from_trace(ct.interpret(copy_with_mode, (2,), (x, np.zeros_like(x)), trace=True), array="x",
                                    block=(1,))
    d = view.data
    assert d["padding_mode"] == "NEG_INF" and d["padding_text"] == "-inf"
    assert d["legend"][1]["label"] == "padding (NEG_INF): reads -inf" and d["legend"][1]["colour"] == PALETTE["NEG_INF"]
    svg = view.to_svg()
    assert all(c.get("fill") == PALETTE["NEG_INF"] for c in cells(svg, "padding")) and cells(svg, "padding")
    assert "padding (NEG_INF): reads -inf" in svg


def test_an_undetermined_integer_load_shows_that_it_reads_zero():
    x = np.arange(10, dtype=np.int32)
    trace = ct.interpret(copy_1d, (3,), (x, np.zeros_like(x)), trace=True)
    d = TileSpaceView.from_trace(trace, array="x", block=(2,)).data
    assert d["padding_mode"] == "UNDETERMINED" and d["legend"][1]["label"] == "padding (UNDETERMINED): reads 0"


def test_a_version_1_trace_falls_back_to_the_source_line_or_the_given_mode():
    trace = ct.interpret(copy_ragged, (3, 2), (np.arange(120, dtype=np.float32).reshape(10, 12),
                                      np.zeros((10, 12), np.float32)), trace=True)
    trace.events = [dataclasses.replace(e, padding_mode=None, padding_value=None) for e in trace.events]
    d = TileSpaceView.from_trace(trace, array="x", block=(2, 1)).data
    assert d["padding_mode"] == "NAN" and d["padding_text"] == "NaN"
    assert TileSpaceView.from_trace(trace, array="x", block=(2, 1), padding_mode="ZERO").data["padding_mode"] == "ZERO"
    assert padding_mode_of("t = ct.load(x, (i,), (4,), padding_mode=ct.PaddingMode.NEG_INF)") == "NEG_INF"
    assert padding_mode_of("t = ct.load(x, (i,), (4,))") == "UNDETERMINED"


def test_a_big_array_is_drawn_zoomed_on_the_blocks_tile_in_whole_tiles_with_legible_cells():
    view = TileSpaceView(array_shape=(1000, 3000), tile_shape=(64, 64), index=(3, 5))
    d = view.data
    assert d["cell"] >= MIN_CELL and d["width"] < 900 and d["height"] < 700
    lo, hi = np.array(d["lo"]), np.array(d["lo"]) + d["ext"]
    assert (lo <= [192, 320]).all() and (hi >= [256, 384]).all() and (lo % 64 == 0).all()
    assert (np.array(d["ext"]) * d["cell"] <= [520, 720]).all()
    assert any(f"shown: x[{lo[0]}:{hi[0]}, {lo[1]}:{hi[1]}]" in t["text"] for t in d["texts"])
    assert len(cells(view.to_svg(), "lane")) == 64 * 64


@ct.kernel
def add_1d(a, b, c):
    i = ct.bid(0)
    ct.store(c, (i,), ct.load(a, (i,), (1024,)) + ct.load(b, (i,), (1024,)))


@ct.kernel
def copy_3d(x, y):
    i = ct.bid(0)
    ct.store(y, (i, 0, 0), ct.load(x, (i, 0, 0), (2, 4, 4), padding_mode=ct.PaddingMode.ZERO))


def test_a_vector_of_millions_of_elements_draws_the_blocks_tile_and_its_values():
    n = 1 << 22
    a = np.arange(n, dtype=np.float32)
    trace = ct.interpret(add_1d, (n // 1024,), (a, a, np.zeros_like(a)), trace=True)
    d = TileSpaceView.from_trace(trace, array="a", block=(7,), values=a).data
    assert d["lo"][1] <= 7 * 1024 and d["lo"][1] + d["ext"][1] >= 8 * 1024 and d["ext"][1] < 2048
    assert d["cell"] > 0 and d["values"].shape == (1, d["ext"][1])
    assert d["values"][0, 7 * 1024 - d["values_lo"][1]] == 7 * 1024


def test_a_3d_array_is_drawn_as_the_slice_where_the_blocks_tile_starts():
    x = np.arange(5 * 4 * 4, dtype=np.float32).reshape(5, 4, 4)
    trace = ct.interpret(copy_3d, (3,), (x, np.zeros_like(x)), trace=True)
    view = TileSpaceView.from_trace(trace, array="x", block=(2,), values=x)
    d = view.data
    assert d["lead"] == [4] and d["shape2"] == [4, 4] and d["box"] == [2, 4, 4]
    assert len(d["lane_id"]) == 16 and d["lane_id"].tolist() == list(range(16))   # the first 4x4 of the 2x4x4 tile
    assert (d["lane_status"] == Status.LOADED).all() and d["values"][3, 3] == x[4, 3, 3]
    assert any("shown: x[4, 0:4, 0:4]" in t["text"] for t in d["texts"])
    assert len(cells(view.to_svg(), "lane")) == 16


def test_widget_state_and_palette_travel_with_the_data():
    view = TileSpaceView(array_shape=(8, 8), tile_shape=(4, 4), index=(1, 0), values=np.arange(64).reshape(8, 8))
    state = view.get_state()
    assert state["index"] == [1, 0] and state["tile_shape"] == [4, 4]
    assert state["data"]["palette"] == PALETTE
    assert state["data"]["lane_status"]["dtype"] == "uint8" and state["data"]["values"]["shape"] == [8, 8]
    assert "image/svg+xml" in view._repr_mimebundle_()[0]


# ---- coloured by warp: the generated code's thread layout ----------------------------------------

def transpose_trace():
    x = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    args = (x, np.zeros_like(x), 32)
    trace = ct.interpret(transpose, (2, 2), args, trace=True)
    return trace, analyze_trace(transpose.specialize(args), trace)


@pytest.mark.parametrize("op, array", [("load", "x"), ("store", "y")])
def test_warp_colouring_follows_the_thread_layout_in_the_arrays_own_order(op, array):
    trace, access = transpose_trace()
    d = TileSpaceView.from_trace(trace, op=op, array=array, block=(1, 0), access=access).data
    # each thread moves TW_VEC neighbours along the array's rows, whatever the tile's order (the load's is "F")
    offset = (d["lane_r"] % 32) * 32 + d["lane_c"] % 32
    assert (d["lane_thread"] == offset // access.vec % access.threads).all()
    g = next(g for g in access.global_ops if (g.op, g.array) == (op, array))
    assert d["warps"]["sectors_per_request"] == g.sectors_per_request
    assert d["warps"]["warp_sectors_per_request"] == [s / r for s, r in zip(g.warp_sectors, g.warp_requests)]
    warps = access.threads // 32
    assert [e["label"] for e in d["legend"] if e["label"].startswith("warp")] == [f"warp {w}" for w in range(warps)]
    lanes = cells(TileSpaceView(data=d).to_svg(), "lane")
    first = next(e for e in lanes if e.get("data-lane") == "1")
    thread = int(d["lane_thread"][1])
    assert first.get("data-thread") == str(thread) and first.get("fill") == warp_fill(thread // 32, thread % 32)


def test_lanes_that_reach_no_memory_keep_their_status_colour():
    x = np.arange(10 * 12, dtype=np.float32).reshape(10, 12)
    args = (x.copy(), np.zeros_like(x))
    trace = ct.interpret(copy_ragged, (3, 2), args, trace=True)
    access = analyze_trace(copy_ragged.specialize(args), trace)
    d = TileSpaceView.from_trace(trace, op="load", array="x", block=(2, 1), access=access).data
    fills = {e.get("data-status"): e.get("fill") for e in cells(TileSpaceView(data=d).to_svg(), "lane")}
    assert fills["PADDED"] == PALETTE["NAN"]
    loaded = [e for e in cells(TileSpaceView(data=d).to_svg(), "lane") if e.get("data-status") == "LOADED"]
    assert {e.get("fill") for e in loaded} == {warp_fill(int(e.get("data-thread")) // 32, int(e.get("data-thread")) % 32)
                                               for e in loaded}
    assert "block's tile: padded" in [e["label"] for e in d["legend"]]


def test_warp_colouring_needs_the_access_report_of_the_same_kernel():
    trace, _ = transpose_trace()
    x = np.zeros((10, 12), np.float32)
    args = (x, np.zeros_like(x))
    other = analyze_trace(copy_ragged.specialize(args), ct.interpret(copy_ragged, (3, 2), args, trace=True))
    with pytest.raises(ValueError, match=r"the access report of copy_ragged has no load of x on line \d+"):
        TileSpaceView.from_trace(trace, op="load", array="x", block=(0, 0), access=other)
