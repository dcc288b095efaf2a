"""Transform panels: the source map of each shape op and ordered load, and its SVG export."""
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import tileworkbench.tile as ct
from tileworkbench.tile import interpret
from tileworkbench.widgets.svg import text_width
from tileworkbench.widgets.transform import TransformView, infer_operand_shapes, mapping, same_source

SVG = "{http://www.w3.org/2000/svg}"


@ct.kernel
def load_f(x, y):
    t = ct.load(x, (0, 0), (4, 2), order="F")
    ct.store(y, (0, 0), t)


@ct.kernel
def cat_extract(x, y):
    a = ct.load(x, (0, 0), (4, 2))
    b = ct.load(x, (0, 1), (4, 2))
    ct.store(y, (0, 0), ct.extract(ct.cat((a, b), 1), (1, 0), (2, 4)))


def _output(view):
    return view.data["panels"][-1]["text"].reshape(view.data["panels"][-1]["shape"])


def _cells(svg, panel):
    root = ET.fromstring(svg)
    return root.findall(f".//{SVG}g[@data-panel='{panel}']/{SVG}rect")


def test_permute_of_iota_moves_every_element_to_its_numpy_place():
    permute = lambda t: ct.permute(t, (2, 0, 1))
    view = TransformView.of(permute, (4, 2, 2))
    assert _output(view).tolist() == [[[0, 2], [4, 6], [8, 10], [12, 14]], [[1, 3], [5, 7], [9, 11], [13, 15]]]
    assert view.data["panels"][0]["shape"] == [4, 2, 2] and view.data["op"] == "permute"
    assert "ct.permute(t, (2, 0, 1))" in view.data["title"]


def test_transpose_and_broadcast_to_are_shown_as_their_ir_ops():
    transpose = lambda t: ct.transpose(t)
    view = TransformView.of(transpose, (4, 2))
    assert view.data["op"] == "permute" and _output(view).tolist() == [[0, 2, 4, 6], [1, 3, 5, 7]]
    broadcast = lambda t: ct.broadcast_to(t, (2, 4))
    view = TransformView.of(broadcast, (1, 4))
    assert view.data["op"] == "broadcast" and _output(view).tolist() == [[0, 1, 2, 3], [0, 1, 2, 3]]


def test_cat_numbers_the_second_operand_after_the_first():
    cat = lambda a, b: ct.cat((a, b), 1)
    view = TransformView.of(cat, (4, 2), (4, 2))
    assert _output(view).tolist() == [[0, 1, 0, 1], [2, 3, 2, 3], [4, 5, 4, 5], [6, 7, 6, 7]]
    assert view.data["panels"][-1]["ids"].reshape(4, 4)[0].tolist() == [0, 1, 8, 9]
    assert [p["shape"] for p in view.data["panels"]] == [[4, 2], [4, 2], [4, 4]]


def test_insert_and_reshape_track_every_element():
    insert = lambda a, b: ct.insert(a, (1, 0), b)
    view = TransformView.of(insert, (4, 4), (2, 4))
    assert view.data["panels"][-1]["ids"].reshape(4, 4)[2:].ravel().tolist() == list(range(16, 24))
    reshape = lambda t: ct.reshape(t, (2, 4))
    assert _output(TransformView.of(reshape, (4, 2))).tolist() == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_hovering_a_source_finds_every_copy_in_the_output():
    broadcast = lambda t: ct.broadcast_to(t, (2, 4))
    view = TransformView.of(broadcast, (1, 4))
    assert same_source(view.data, 0, 2) == [(0, [2]), (1, [2, 6])]   # input element 2 went to two places
    assert same_source(view.data, 1, 6) == [(0, [2]), (1, [2, 6])]   # and output (1, 2) came from it


def test_extract_of_a_cat_in_a_real_kernel_from_its_trace():
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    trace = interpret(cat_extract, (1,), (x, np.zeros((2, 4), np.float32)), trace=True)
    cat = TransformView.from_trace(trace, op="cat")
    assert [p["shape"] for p in cat.data["panels"]] == [[4, 2], [4, 2], [4, 4]]   # inferred from the map
    extract = TransformView.from_trace(trace, op="extract")
    assert [p["shape"] for p in extract.data["panels"]] == [[4, 4], [2, 4]]
    assert _output(extract).tolist() == [[8, 9, 10, 11], [12, 13, 14, 15]]
    assert "cat_extract: extract, line" in extract.data["title"]


def test_load_order_f_reads_the_array_transposed():
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    trace = interpret(load_f, (1,), (x, np.zeros((4, 2), np.float32)), trace=True)
    view = TransformView.from_trace(trace, op="load")
    assert view.data["panels"][0]["shape"] == [2, 4]
    assert _output(view).tolist() == [[0, 4], [1, 5], [2, 6], [3, 7]]
    m = mapping(trace.by_op("load")[0], (0,))
    assert m["names"] == ["x[0:2, 0:4]"]


def test_operand_shapes_are_read_back_from_the_map():
    position = np.arange(16).reshape(4, 2, 2).transpose(2, 0, 1)
    assert infer_operand_shapes("permute", np.zeros_like(position), position) == [(4, 2, 2)]
    position = np.broadcast_to(np.arange(4), (2, 4))
    assert infer_operand_shapes("broadcast", np.zeros_like(position), position) == [(1, 4)]


def test_an_op_missing_from_the_trace_is_named():
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    trace = interpret(load_f, (1,), (x, np.zeros((4, 2), np.float32)), trace=True)
    with pytest.raises(ValueError, match="has no permute"):
        TransformView.from_trace(trace, op="permute")


def test_svg_export_is_xml_with_one_cell_per_element():
    cat = lambda a, b: ct.cat((a, b), 1)
    svg = TransformView.of(cat, (4, 2), (4, 2)).to_svg()
    assert [len(_cells(svg, k)) for k in range(3)] == [8, 8, 16]
    assert ET.fromstring(svg).tag == f"{SVG}svg"


def test_big_tiles_are_sampled_so_the_svg_stays_small():
    reshape = lambda t: ct.reshape(t, (64, 128))
    view = TransformView.of(reshape, (128, 64))
    svg = view.to_svg()
    assert [len(_cells(svg, k)) for k in range(2)] == [32 * 32, 32 * 32]
    assert len(svg) < 400_000


def test_widget_state_holds_the_data_as_binary_buffers():
    permute = lambda t: ct.permute(t, (2, 0, 1))
    view = TransformView.of(permute, (4, 2, 2))
    state = view.get_state()
    assert state["data"]["panels"][1]["ids"]["shape"] == [16]
    assert isinstance(state["data"]["panels"][1]["ids"]["buffer"], memoryview)
    assert "image/svg+xml" in view._repr_mimebundle_()[0]


def test_the_input_and_result_headers_never_overlap_however_long_the_operand_name():
    data = TransformView.of(lambda an_operand_with_a_long_name: ct.reshape(an_operand_with_a_long_name, (1, 2)),
                            (2,)).data
    label, result = (next(t for t in data["texts"] if t["text"].startswith(s)) for s in ("an_operand", "reshape"))
    assert result["x"] >= label["x"] + text_width(label["text"], label["size"], bold=True)
    assert data["width"] >= result["x"] + text_width(result["text"], result["size"], bold=True)
