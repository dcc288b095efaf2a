"""Index map view: lane outcomes, targets, ghost cells and collisions of real gathers/scatters."""
import dataclasses
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import tileworkbench.tile as ct
from tileworkbench.interp import Status
from tileworkbench.widgets.index_map import IndexMapView, index_map_data, index_map_svg, padding_value_of, partners
from tileworkbench.widgets.tile_space import STATUS_COLOURS
from tileworkbench.widgets.views import views_of_trace

SVG = "{http://www.w3.org/2000/svg}"
IDX = np.array([0, 3, -1, 12, 5, 5, 7, 1], np.int32)


@ct.kernel
def gather_scatter(x, y, idx):
    index = ct.load(idx, (0,), (8,))
    values = ct.gather(x, index, mask=index != 3, padding_value=-1)
    ct.scatter(y, index, values)


@ct.kernel
def gather_2d(x, out):
    rows = ct.arange(4, dtype=ct.int32)[:, None] - 1
    cols = ct.arange(4, dtype=ct.int32)[None, :] * 2
    ct.store(out, (0, 0), ct.gather(x, (rows, cols)))


@ct.kernel
def rows_of_table(table, rows, out):
    r = ct.load(rows, (0,), (4,))
    ct.store(out, (0, 0), ct.load_advanced_indexing(table, (r, ct.Slice(0, 8))))


@ct.kernel
def embed(table, ids, out):
    r = ct.bid(0)
    row = ct.load(ids, (r,), ())
    ct.store(out, (r, 0), ct.gather(table, (ct.full((1, 8), row, ct.int32), ct.arange(8, dtype=ct.int32)[None, :])))


def traced():
    x = np.arange(10, dtype=np.int32) * 10
    before = x.copy()
    trace = ct.interpret(gather_scatter, (1,), (x, np.zeros(10, np.int32), IDX), trace=True)
    return trace, before


def rects(svg_text, cls):
    return [e for e in ET.fromstring(svg_text).iter(f"{SVG}rect") if e.get("class") == cls]


def test_gather_negative_index_is_out_of_bounds_and_masked_lanes_read_padding():
    trace, before = traced()
    d = IndexMapView.from_trace(trace, op="gather", block=(0,), values=before).data
    assert d["status"].tolist() == [Status.LOADED, Status.MASKED, Status.OUT_OF_BOUNDS, Status.OUT_OF_BOUNDS,
                                    Status.LOADED, Status.LOADED, Status.LOADED, Status.LOADED]
    assert [p["name"] for p in d["panels"]] == ["indices", "mask", "result"]
    assert d["panels"][0]["labels"] == [str(i) for i in IDX]
    assert d["panels"][1]["labels"] == ["1", "0", "1", "1", "1", "1", "1", "1"]
    assert d["panels"][2]["labels"] == ["0", "-1", "-1", "-1", "50", "50", "70", "10"]
    assert d["padding_value"] == "-1" and d["elem"].tolist() == [0, -1, -1, -1, 5, 5, 7, 1]
    assert d["panels"][2]["fill"][2] == STATUS_COLOURS[Status.OUT_OF_BOUNDS]
    # the masked lane points nowhere; the two out-of-bounds lanes point at ghost cells on each side
    assert d["tx"][1] == -1 and d["tx"][2] < d["ax0"] < d["tx"][0] and d["tx"][3] > d["tx"][7]
    assert len(d["ghost_x"]) == 2
    assert d["cell_fill"].tolist() == [1, 1, 0, 0, 0, 1, 0, 1, 0, 0]   # elements 0, 1, 5, 7 read


def test_scatter_collision_lights_up_every_lane_writing_the_element():
    trace, _ = traced()
    view = IndexMapView.from_trace(trace, op="scatter")
    d = view.data
    assert d["panels"][-1]["name"] == "values"
    assert (d["status"] == Status.COLLISION).sum() == 2 and partners(d, 4) == [4, 5]
    assert d["cell_fill"][5] == 3 and d["cell_fill"][0] == 2    # collision, stored once
    view.lane = 4
    svg = view.to_svg()
    highlight = next(g for g in ET.fromstring(svg).iter(f"{SVG}g") if g.get("class") == "highlight")
    assert len(highlight.findall(f"{SVG}line")) == 2           # one line per writer
    assert len(highlight.findall(f"{SVG}rect")) == 2 * 2 + 2   # each writer in 2 panels (no mask), plus its target


def test_svg_has_one_cell_per_lane_per_panel_and_per_element():
    trace, before = traced()
    svg = IndexMapView.from_trace(trace, op="gather", values=before).to_svg()
    lanes = rects(svg, "lane")
    assert len(lanes) == 8 * 3 and len(rects(svg, "element")) == 10 and len(rects(svg, "ghost")) == 2
    assert sum(r.get("data-status") == "OUT_OF_BOUNDS" for r in lanes) == 2 * 3


def test_2d_gather_has_one_index_panel_per_axis_and_no_mask_panel_without_a_mask():
    x = np.arange(4 * 6, dtype=np.float32).reshape(4, 6)
    trace = ct.interpret(gather_2d, (1,), (x, np.zeros((4, 4), np.float32)), trace=True)
    d = IndexMapView.from_trace(trace, op="gather", values=x).data
    assert [p["name"] for p in d["panels"]] == ["indices[0]", "indices[1]", "result"]
    assert "mask on" not in [item["label"] for item in d["legend"]]
    status = d["status"].reshape(4, 4)
    assert (status[0] == Status.OUT_OF_BOUNDS).all() and (status[1:, 3] == Status.OUT_OF_BOUNDS).all()
    assert (status[1:, :3] == Status.LOADED).all()
    assert d["panels"][2]["labels"][5] == "2" and d["panels"][2]["labels"][0] == "0"   # x[0, 2]; padding 0
    assert d["coords"].reshape(4, 4, 2)[0, 1].tolist() == [-1, 2]


def test_big_arrays_are_binned():
    table = np.arange(300 * 8, dtype=np.float32).reshape(300, 8)
    ids = np.array([0, 299, 150], np.int32)
    trace = ct.interpret(embed, (3,), (table, ids, np.zeros((3, 8), np.float32)), trace=True)
    d = IndexMapView.from_trace(trace, op="gather", block=(1,)).data
    assert d["factors"] == [5, 1] and d["binned"] == [60, 8]
    assert set(d["target"].tolist()) == {59 * 8 + c for c in range(8)}   # row 299 is in bin 59
    assert d["block"] == [1, 0, 0]


@ct.kernel
def gather_padded_per_lane(x, out, idx):
    index = ct.load(idx, (0,), (8,))
    fill = ct.arange(8, dtype=ct.int32) * -100          # lane k pads with -100 k
    ct.store(out, (0,), ct.gather(x, index, mask=index != 3, padding_value=fill))


def test_padded_lanes_show_the_recorded_padding_value_of_each_lane():
    x = np.arange(10, dtype=np.int32) * 10
    trace = ct.interpret(gather_padded_per_lane, (1,), (x.copy(), np.zeros(8, np.int32), IDX), trace=True)
    view = IndexMapView.from_trace(trace, op="gather", values=x)
    d = view.data
    assert d["panels"][-1]["labels"] == ["0", "-100", "-200", "-300", "50", "50", "70", "10"]
    labels = [item["label"] for item in d["legend"]]
    assert "masked off (reads padding_value -100)" in labels
    assert "out of bounds (reads padding_value -200 / -300)" in labels
    assert "-300" in view.to_svg()


def test_padded_lanes_are_labelled_without_the_arrays_values_too():
    trace, _ = traced()
    d = IndexMapView.from_trace(trace, op="gather").data
    assert d["panels"][-1]["labels"] == ["", "-1", "-1", "-1", "", "", "", ""]


def test_a_version_1_trace_falls_back_to_the_source_line():
    trace, before = traced()
    trace.events = [dataclasses.replace(e, padding_mode=None, padding_value=None) for e in trace.events]
    assert IndexMapView.from_trace(trace, op="gather", values=before).data["padding_value"] == "-1"
    assert IndexMapView.from_trace(trace, op="gather", values=before, padding_value=7).data["padding_value"] == "7"
    assert padding_value_of("ct.gather(x, i, padding_value=-2.5)") == -2.5
    assert padding_value_of("ct.gather(x, i)") == 0
    assert padding_value_of("ct.gather(x, i, padding_value=fill)") is None


def test_refusals_are_clear():
    trace, _ = traced()
    with pytest.raises(ValueError, match="no scatter_adv"):
        IndexMapView.from_trace(trace, op="scatter_adv")
    with pytest.raises(ValueError, match="block \\(1,\\)"):
        IndexMapView.from_trace(trace, op="gather", block=(1,))
    with pytest.raises(ValueError, match="gathers, scatters and advanced indexing"):
        index_map_data(trace.by_op("load")[0].for_block((0,)), (8,))


def test_widget_state_holds_the_lanes():
    trace, before = traced()
    view = IndexMapView.from_trace(trace, op="gather", values=before)
    state = view.get_state()
    assert state["lane"] == -1 and state["data"]["status"]["shape"] == [8]
    assert state["data"]["palette"] == view.data["palette"] and state["data"]["lines"] is True


def test_advanced_indexing_gets_an_index_map():
    table = np.arange(64, dtype=np.float32).reshape(8, 8)
    rows, out = np.array([3, 1, 0, 7], np.int32), np.zeros((4, 8), np.float32)
    trace = ct.interpret(rows_of_table, (1,), (table, rows, out), trace=True)
    data = index_map_data(trace.by_op("load_adv")[0].for_block((0,)), table.shape, values=table)
    assert [int(v) for v in data["panels"][0]["labels"][::8]] == [3, 1, 0, 7]
    assert [type(v).__name__ for v in views_of_trace(trace)] == ["CoverageView", "TileSpaceView", "IndexMapView",
                                                                 "TileSpaceView"]


@ct.kernel
def gather_3d_array(x, out):
    i = ct.arange(8, dtype=ct.int32)
    ct.store(out, (0,), ct.gather(x, (i % 2, i // 2 % 3, i + 2)))


def test_a_3d_array_is_drawn_with_a_row_per_leading_index():
    x = np.arange(2 * 3 * 8, dtype=np.float32).reshape(2, 3, 8)
    trace = ct.interpret(gather_3d_array, (1,), (x, np.zeros(8, np.float32)), trace=True)
    d = IndexMapView.from_trace(trace, op="gather", values=x).data
    assert d["shape2"] == [6, 8] and [p["name"] for p in d["panels"]][:3] == ["indices[0]", "indices[1]", "indices[2]"]
    inside = d["target"] >= 0
    rows, cols = np.divmod(d["target"][inside], 8)
    lanes = np.nonzero(inside)[0]
    assert (rows == (lanes % 2) * 3 + lanes // 2 % 3).all() and (cols == lanes + 2).all()
    assert (d["status"][lanes[-1] + 1:] == Status.OUT_OF_BOUNDS).all()   # i + 2 >= 8
    assert any("a row per x[i, j, :]" in t["text"] for t in d["texts"])


@ct.kernel
def gather16(table, lanes, out):
    ct.store(out, (0,), ct.gather(table, ct.load(lanes, (0,), (16,)), padding_value=-1.0))


def test_a_long_1d_array_is_drawn_in_rows_with_cells_big_enough_for_its_numbers():
    table, lanes = np.arange(48, dtype=np.float32), np.array([47, 3, 50, 12, 0, 33, -2, 20] * 2, np.int32)
    trace = ct.interpret(gather16, (1,), (table, lanes, np.zeros(16, np.float32)), trace=True)
    d = IndexMapView.from_trace(trace, op="gather", values=table).data
    assert d["acell"] >= 18 and d["array_labels"] == [str(v) for v in range(48)]   # numbers, not bare cells
    assert sorted(set(d["cell_y"])) == [d["ay0"] + r * d["acell"] for r in range(3)]   # 3 rows of 16
    assert d["cell_x"][16] == d["cell_x"][0] and d["cell_y"][16] == d["cell_y"][0] + d["acell"]
    lane = 0   # index 47: the last cell of the last row
    assert (d["tx"][lane] - d["acell"] / 2, d["ty"][lane] - d["acell"] / 2) == (d["cell_x"][47], d["cell_y"][47])
    assert d["tx"][6] < d["ax0"] and d["ty"][6] == d["ay0"] + d["acell"] / 2   # index -2: a ghost left of element 0
    assert "table (48,), in rows of 16" in index_map_svg(d)


def test_link_lines_are_drawn_dark_and_fan_out_over_room_of_their_own():
    from tileworkbench.widgets.index_map import LINK_ROOM
    trace, before = traced()
    d = IndexMapView.from_trace(trace, op="gather", block=(0,), values=before).data
    lanes_bottom = int(d["lane_y"].max()) + d["cell"]
    assert d["lines"] and d["ay0"] - lanes_bottom >= LINK_ROOM   # steep lines, not a flat tangle
    links = ET.fromstring(index_map_svg(d)).find(f".//{SVG}g[@class='links']")
    assert float(links.get("stroke-width")) >= 1.2 and float(links.get("stroke-opacity")) >= 0.85
    r, g, b = (int(links.get("stroke")[k:k + 2], 16) for k in (1, 3, 5))
    assert 0.2126 * r + 0.7152 * g + 0.0722 * b < 110   # a dark grey on the white page
