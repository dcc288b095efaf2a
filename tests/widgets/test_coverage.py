"""Coverage: write/read counts over the grid, block footprints, click-to-block, SVG export."""
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import tileworkbench.tile as ct
from tileworkbench.tile import interpret
from tileworkbench.widgets.coverage import (
    READ,
    WRITE,
    CoverageView,
    access_counts,
    block_footprint,
    blocks_at,
    footprint_outlines,
    grid_rank,
)

SVG = "{http://www.w3.org/2000/svg}"


@ct.kernel
def copy2d(x, y):
    i, j = ct.bid(0), ct.bid(1)
    ct.store(y, (i, j), ct.load(x, (i, j), (4, 4)))


@ct.kernel
def pairs_overlap(x, y):
    i = ct.bid(0)
    ct.store(y, (i // 2,), ct.load(x, (i // 2,), (8,)))   # blocks 2k and 2k+1 both write tile k


def test_too_small_a_grid_leaves_holes():
    x = np.arange(256, dtype=np.float32).reshape(16, 16)
    trace = interpret(copy2d, (3, 4), (x, np.zeros_like(x)), trace=True)
    reads, writes = access_counts(trace, "y")
    assert (writes[:12] == 1).all() and (writes[12:] == 0).all()
    assert reads.sum() == 0 and access_counts(trace, "x")[0][:12].sum() == 12 * 16
    view = CoverageView.from_trace(trace)
    y = view.data["panels"][1]
    assert (y["name"], y["holes"], y["overlaps"], y["written"]) == ("y", 64, 0, True)
    assert view.data["rank"] == 2 and view.data["grid"] == [3, 4, 1]


def test_overlapping_stores_count_two():
    x = np.arange(16, dtype=np.float32)
    trace = interpret(pairs_overlap, (4,), (x, np.zeros_like(x)), trace=True)
    _, writes = access_counts(trace, "y")
    assert writes.tolist() == [2] * 16
    assert CoverageView.from_trace(trace).data["panels"][1]["overlaps"] == 16


def test_footprint_of_one_block():
    x = np.arange(256, dtype=np.float32).reshape(16, 16)
    trace = interpret(copy2d, (4, 4), (x, np.zeros_like(x)), trace=True)
    fp = block_footprint(trace, (1, 2))
    assert np.argwhere(fp["y"] == WRITE).min(axis=0).tolist() == [4, 8]
    assert np.argwhere(fp["y"] == WRITE).max(axis=0).tolist() == [7, 11]
    assert (fp["x"] == READ).sum() == 16 and (fp["y"] > 0).sum() == 16
    view = CoverageView.from_trace(trace)
    outlines = footprint_outlines(view.data, (1, 2, 0))
    assert [len(cells) for _, cells, _ in outlines] == [16, 0, 0, 16]   # x: read only; y: written only


def test_clicking_an_element_selects_the_block_that_wrote_it():
    x = np.arange(256, dtype=np.float32).reshape(16, 16)
    trace = interpret(copy2d, (4, 4), (x, np.zeros_like(x)), trace=True)
    assert blocks_at(trace, "y", (5, 9)) == [(1, 2, 0)]
    view = CoverageView.from_trace(trace)
    assert view.select("y", (5, 9)) == (1, 2, 0) and view.block == [1, 2, 0]
    assert view.select("x", (0, 0)) == (0, 0, 0)   # an input: the block that read it


def test_clicking_again_cycles_through_several_writers():
    x = np.arange(16, dtype=np.float32)
    trace = interpret(pairs_overlap, (4,), (x, np.zeros_like(x)), trace=True)
    assert blocks_at(trace, "y", (3,)) == [(0, 0, 0), (1, 0, 0)]
    view = CoverageView.from_trace(trace, arrays=["y"])
    view.block = [3, 0, 0]
    assert [view.select("y", (3,)) for _ in range(3)] == [(0, 0, 0), (1, 0, 0), (0, 0, 0)]


def test_arrays_picks_the_panels_and_unknown_names_are_refused():
    x = np.arange(16, dtype=np.float32)
    trace = interpret(pairs_overlap, (4,), (x, np.zeros_like(x)), trace=True)
    assert [p["name"] for p in CoverageView.from_trace(trace, arrays=["y"]).data["panels"]] == ["y"]
    with pytest.raises(ValueError, match="no array z"):
        CoverageView.from_trace(trace, arrays=["z"])


def test_grid_rank_counts_axes_up_to_the_last_long_one():
    assert [grid_rank(g) for g in [(1, 1, 1), (8, 1, 1), (2, 3, 1), (1, 1, 4)]] == [1, 1, 2, 3]


def test_svg_export_is_xml_with_one_cell_per_element_and_the_block_outlined():
    x = np.arange(256, dtype=np.float32).reshape(16, 16)
    view = CoverageView.from_trace(interpret(copy2d, (3, 4), (x, np.zeros_like(x)), trace=True))
    view.block = [1, 2, 0]
    root = ET.fromstring(view.to_svg())
    assert [len(root.findall(f".//{SVG}g[@data-panel='{k}']/{SVG}rect")) for k in range(2)] == [256, 256]
    outlined = [g for g in root.findall(f"{SVG}g") if g.get("fill") == "none"]
    assert sum(len(g) for g in outlined) == 32
    assert any("block (1, 2)" in (t.text or "") for t in root.iter(f"{SVG}text"))


def test_big_arrays_are_binned_so_the_svg_stays_small():
    big = np.zeros((512, 256), np.float32)
    view = CoverageView.from_trace(interpret(copy2d, (100, 64), (big, big.copy()), trace=True))
    y = view.data["panels"][1]
    assert y["binned"] == [1, 32, 32] and y["factors"] == [1, 16, 8]
    assert y["holes"] == 512 * 256 - 400 * 256
    svg = view.to_svg()
    assert len(svg) < 250_000
    fills = [r.get("fill") for r in ET.fromstring(svg).findall(f".//{SVG}g[@data-panel='1']/{SVG}rect")]
    assert fills.count("#e53935") == 32 * 7   # rows 400..511 never written: bins 25..31 of 32 hold holes


def test_widget_state_holds_the_data_as_binary_buffers():
    x = np.arange(16, dtype=np.float32)
    view = CoverageView.from_trace(interpret(pairs_overlap, (4,), (x, np.zeros_like(x)), trace=True))
    state = view.get_state()
    assert state["block"] == [0, 0, 0]
    assert isinstance(state["data"]["panels"][0]["fp_cells"]["buffer"], memoryview)
    assert "image/svg+xml" in view._repr_mimebundle_()[0]


@pytest.mark.parametrize("shape, grid", [((16, 16), (4, 4)), ((32,), (4,)), ((8, 8), (2, 2))])
def test_a_small_arrays_cells_grow_so_that_it_spans_the_legend(shape, grid):
    from tileworkbench.widgets.coverage import MAX_CELL, MAX_PANEL_H
    from tileworkbench.widgets.svg import legend_width
    x = np.zeros(shape, np.float32)
    kernel = copy2d if len(shape) == 2 else pairs_overlap
    view = CoverageView.from_trace(interpret(kernel, grid, (x, np.zeros_like(x)), trace=True))
    cell, legend = view.data["cell"], legend_width(view.data["legend"])
    for p in view.data["panels"]:
        width = int(p["cx"].max()) + cell - int(p["cx"].min())
        height = int(p["cy"].max()) + cell - int(p["cy"].min())
        assert width >= legend / 2 or cell == MAX_CELL or height > MAX_PANEL_H - cell, (width, legend)
        assert width <= legend and height <= MAX_PANEL_H
