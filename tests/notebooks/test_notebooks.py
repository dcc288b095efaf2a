"""The notebooks in notebooks/ run top to bottom on the interpreter and show what they promise:
printed results, and views (a static SVG picture, then the live widget) of what the interpreter
recorded."""
import functools
import html
import re
from collections import Counter
from pathlib import Path

import nbformat
import numpy as np
import pytest
from nbclient import NotebookClient

from tileworkbench.magic.inspector import KERNEL_MIME

NOTEBOOKS = Path(__file__).parents[2] / "notebooks"
WIDGET = "application/vnd.jupyter.widget-view+json"


def execute(name: str):
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    return nb


def text_of(cell) -> str:
    parts = []
    for out in cell.outputs:
        parts.append(out.get("text", "") or out.get("data", {}).get("text/plain", ""))
    return "".join(parts)


@pytest.mark.slow
def test_quickstart_runs_and_shows_result_ir_and_trace():
    nb = execute("00_quickstart.ipynb")
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert "100., 101., 102., 103., 104., 105., 106., 107., 108., 109." in text_of(code[1]).replace("\n", "").replace("  ", " ")
    assert "kernel vector_add(%a: array<float32, 1d>" in text_of(code[2])
    assert "load a {'LOADED': 10, 'PADDED': 2}" in text_of(code[3])
    assert "store c {'STORED': 10, 'DROPPED': 2}" in text_of(code[3])
    assert "[ 8  9 10 11]" in text_of(code[3])


def test_notebooks_are_committed_without_outputs():
    for path in NOTEBOOKS.glob("*.ipynb"):
        nb = nbformat.read(path, as_version=4)
        assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), path.name
        assert "widgets" not in nb.metadata, path.name


@functools.cache
def executed(name: str):
    """The notebook run top to bottom (once per test session)."""
    return execute(name)


def outputs(name: str) -> list[str]:
    """The text of every code cell's outputs, after running the notebook top to bottom."""
    return [" ".join(text_of(c).split()) for c in executed(name).cells if c.cell_type == "code"]


# ---- the views a cell shows ---------------------------------------------------------------------

def views(name: str, source: str) -> list[str]:
    """The SVG pictures of the views shown by the one code cell whose source contains `source`.
    Every output of that cell but the kernel inspector's record must be a view's static picture
    followed by its live widget."""
    cells = [c for c in executed(name).cells if c.cell_type == "code" and source in c.source]
    assert len(cells) == 1, f"{len(cells)} cells of {name} contain {source!r}"
    bundles = [o.get("data", {}) for o in cells[0].outputs if KERNEL_MIME not in o.get("data", {})]
    pictures, widgets = bundles[::2], bundles[1::2]
    assert pictures and len(pictures) == len(widgets), (source, bundles)
    assert all("image/svg+xml" in p and WIDGET not in p and WIDGET in w for p, w in zip(pictures, widgets)), bundles
    return [p["image/svg+xml"] for p in pictures]


def svg_texts(svg: str) -> list[str]:
    return [html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg)]


def lane_statuses(svg: str) -> list[str]:
    """The status of every lane of a tile space or index map picture, by lane number."""
    found = re.findall(r'class="lane" data-status="(\w+)" data-lane="(\d+)"', svg)
    by_lane = {int(lane): status for status, lane in found}
    return [by_lane[k] for k in range(len(by_lane))]


def lane_corners(svg: str) -> list[tuple[float, float]]:
    """(x, y) of every lane of a tile space picture, by lane number."""
    found = re.findall(r'class="lane" data-status="\w+" data-lane="(\d+)" x="([\d.]+)" y="([\d.]+)"', svg)
    return [(float(x), float(y)) for _, x, y in sorted(found, key=lambda f: int(f[0]))]


def panel_labels(svg: str, panel: int) -> list[int]:
    """The numbers written in the cells of a transform picture's panel (inputs first, the result last)."""
    after = svg.split(f'<g class="panel" data-panel="{panel}"')[1]
    labels = after.split("</g>")[1]        # the panel's cells, then the group of their labels
    return [int(t) for t in re.findall(r">(-?\d+)</text>", labels)]


def overhanging_strips(array_shape, box) -> int:
    """Padding regions a tile space picture draws: one strip per edge tile per axis it overhangs."""
    tiles = [-(-n // t) for n, t in zip(array_shape, box)]
    return (array_shape[0] % box[0] > 0) * tiles[1] + (array_shape[1] % box[1] > 0) * tiles[0]


@pytest.mark.slow
def test_gather_scatter_tutorial_shows_padding_and_collisions():
    out = outputs("02_gather_scatter.ipynb")
    assert "array([ 0., -1., -1., -1., 50., 50., 70., 90.], dtype=float32)" in out
    assert any("'COLLISION': 2" in o and "'OUT_OF_BOUNDS': 2" in o for o in out)


@pytest.mark.slow
def test_advanced_indexing_tutorial_prints_the_documented_result():
    out = outputs("03_advanced_indexing.ipynb")
    assert "[[2, 3, 4, 5], [10, 11, 12, 13], [18, 19, 20, 21], [26, 27, 28, 29]]" in out


@pytest.mark.slow
def test_tile_operations_tutorial_matches_the_specification_examples():
    out = outputs("04_tile_operations.ipynb")
    expected = [
        "array([[42, 42], [42, 42]], dtype=int32)",
        "array([[ True, True, False, False], [False, False, True, False]])",
        "array([[[ 0, 2], [ 4, 6], [ 8, 10], [12, 14]], [[ 1, 3], [ 5, 7], [ 9, 11], [13, 15]]], dtype=int32)",
        "array([[[ 0, 1], [ 4, 5], [ 8, 9], [12, 13]], [[ 2, 3], [ 6, 7], [10, 11], [14, 15]]], dtype=int32)",
        "array([[0, 0, 1, 1], [0, 0, 1, 1], [0, 0, 1, 1], [0, 0, 1, 1]], dtype=int32)",
        "array([ 0, -1, 2, -3], dtype=int32)",
        "array([[2, 3], [6, 7]], dtype=int32)",
        "array([[-1], [-1], [-1], [-1]], dtype=int8)",
    ]
    for e in expected:
        assert e in out, e


@pytest.mark.slow
def test_cupy_tutorial_runs_pasted_definitions_with_cupys_documented_results_views_and_sweeps():
    out = outputs("06_cupy_kernels.ipynb")
    assert out.count("array([[ 0., 0., 0., 0., 0.], [25., 25., 25., 25., 25.]], dtype=float32)") == 2
    assert "array([[25., 16., 9., 4., 1.], [ 0., 1., 4., 9., 16.]], dtype=float32)" in out
    assert "array([ 5.477226 , 15.9687195], dtype=float32)" in out
    text = " ".join(out)
    assert "ct.gather(x, (_rest1, _c1))" in text and "ct.load(x, (_block,), (TILE,)" in text
    assert "(array([ 3, -3, -3, 3], dtype=int32), array([ 1, -1, 1, -1], dtype=int32))" in text
    assert "Loops are not in the supported C subset" in text and "^^^" in text
    assert "CoverageView" in text and "TileSpaceView" in text
    assert "SweepView(squared_diff: 5 of 5 configurations ok" in text
    assert "best: {'TM':" in text


@pytest.mark.slow
def test_tile_spaces_tutorial_shows_order_padding_and_the_trace():
    out = outputs("01_tile_spaces.ipynb")
    assert "array([[ 0, 4, 8, 12]], dtype=int32)" in out  # load(..., (1, 4), order='F')
    assert any("'NEG_ZERO': [-0.0, -0.0]" in o and "'UNDETERMINED': [0.0, 0.0]" in o for o in out)
    assert any("{'LOADED': 60, 'PADDED': 36}" in o for o in out)
    assert any(o.startswith("kernel copy(%x: array<float32, 2d>") and "# line 4" in o for o in out)


@pytest.mark.slow
def test_profiling_tutorial_sweeps_transpose_and_matmul():
    nb = execute("05_profiling_tile_shapes.ipynb")
    svgs = [o.data["image/svg+xml"] for c in nb.cells if c.cell_type == "code" for o in c.outputs
            if "image/svg+xml" in o.get("data", {})]
    assert len(svgs) == 2 and svgs[0].count('class="sweep-cell"') == 4 and svgs[1].count('class="sweep-cell"') == 9
    text = " ".join(text_of(c) for c in nb.cells if c.cell_type == "code")
    assert "SweepView(transpose: 4 of 4 configurations ok" in text
    assert "best: {'TM':" in text
    from tileworkbench.runtime import device
    # without a GPU the sweeps show compile-time results and say so; with one they are timed
    assert ("timings need a GPU" in text) == (not device.gpu_available())


@pytest.mark.slow
def test_tile_spaces_tutorial_draws_tile_spaces_padding_order_f_and_holes():
    name, shape, tile = "01_tile_spaces.ipynb", (6, 10), (4, 4)       # copy: a 6x10 array in 4x4 tiles
    lanes, strips = tile[0] * tile[1], overhanging_strips(shape, tile)
    inside = (shape[0] % tile[0]) * (shape[1] % tile[1])               # of the ragged corner tile (1, 2)
    coverage, load, store, stepper = views(name, '--args "x, y" --viz')
    assert "copy: coverage over grid 2 x 3" in svg_texts(coverage)
    assert "copy: block (1, 0), op 1 of 4" in svg_texts(stepper)    # the first block whose lanes pad
    assert "y (6, 10) float32 \u2014 written: 60 once, 0 holes, 0 overlaps" in svg_texts(coverage)
    assert svg_texts(load)[0].startswith("load x, line 4:") and svg_texts(store)[0].startswith("store y, line 5:")
    for svg in (load, store):
        assert len(lane_statuses(svg)) == lanes and svg.count('class="padding"') == strips

    # order="F": the (1, 4) tile is a column of `a`, its lanes numbered downwards
    _, column, _, _ = views(name, '--args "a, row" --viz')
    corners = lane_corners(column)
    assert len(corners) == 4 and len({x for x, _ in corners}) == 1
    assert [y for _, y in corners] == sorted({y for _, y in corners})
    assert "tile space order (1, 0)" in svg_texts(column)[1]

    ragged, = views(name, 'op="load", array="x", block=(1, 2)')
    assert Counter(lane_statuses(ragged)) == {"LOADED": inside, "PADDED": lanes - inside}
    assert ragged.count('class="padding"') == strips and "padding (ZERO): reads 0" in svg_texts(ragged)
    dropped, = views(name, 'op="store", array="y", block=(1, 2)')
    assert Counter(lane_statuses(dropped)) == {"STORED": inside, "DROPPED": lanes - inside}

    explorer, = views(name, "TileSpaceView(array_shape=(6, 10), tile_shape=(4, 8)")
    assert Counter(lane_statuses(explorer)) == {"LOADED": 6 * 2, "PADDED": 4 * 8 - 6 * 2}   # rows 0-5, columns 8-9
    assert explorer.count('class="padding"') == overhanging_strips(shape, (8, 4))
    assert "padding (NAN): reads NaN" in svg_texts(explorer)

    holes, = views(name, "CoverageView.from_trace(interpret(copy, (1, 3)")
    assert "y (6, 10) float32 \u2014 written: 40 once, 20 holes, 0 overlaps" in svg_texts(holes)


@pytest.mark.slow
def test_gather_scatter_tutorial_index_maps_mark_masked_out_of_bounds_and_colliding_lanes():
    name = "02_gather_scatter.ipynb"
    gather_3d, = views(name, "IndexMapView.from_trace(interpret(gather_3d")
    assert lane_statuses(gather_3d) == ["LOADED"] * 16
    assert "block (0,): 16 lanes of a (2, 4, 2) tile into x (10, 10) \u2014 16 loaded" in svg_texts(gather_3d)

    idx = [0, 3, -1, 12, 5, 5, 7, 9]    # the tutorial's indices; the mask is idx != 3; table has 10 elements
    gather = [svg for svg in views(name, '--args "table, idx, got" --viz') if "gather table" in svg_texts(svg)[0]]
    assert len(gather) == 1
    assert lane_statuses(gather[0]) == ["MASKED" if i == 3 else "LOADED" if 0 <= i < 10 else "OUT_OF_BOUNDS"
                                        for i in idx]
    assert gather[0].count('class="ghost"') == 2            # one past each end of table: -1 and 12
    legend = {"masked off (reads padding_value -1)", "out of bounds (reads padding_value -1)"}
    assert legend <= set(svg_texts(gather[0]))

    scatter, = views(name, 'IndexMapView.from_trace(trace, op="scatter")')
    writes = Counter(i for i in idx if 0 <= i < 10)
    assert lane_statuses(scatter) == ["OUT_OF_BOUNDS" if not 0 <= i < 10 else "COLLISION" if writes[i] > 1 else "STORED"
                                      for i in idx]
    highlight = scatter.split('<g class="highlight"')[1].split("</g>")[0]
    panels = scatter.count('<g class="panel"')
    assert highlight.count("<rect") == 2 * (panels + 1)      # lane 4 and its collision partner: every panel, the target


@pytest.mark.slow
def test_advanced_indexing_tutorial_shows_what_was_read_and_every_lane_of_the_gather():
    name = "03_advanced_indexing.ipynb"
    coverage = views(name, '--args "x, y, 2" --viz')[0]
    assert "x (8, 8) int32 \u2014 read: max 1 times, 48 never" in svg_texts(coverage)     # 4 rows x 4 columns
    coverage = views(name, '--args "x, rows, z, 5" --viz')[0]
    assert "x (8, 8) int32 \u2014 read: max 2 times, 55 never" in svg_texts(coverage)     # rows 7, 0, 0, 5; columns 5-7
    gather, = views(name, 'IndexMapView.from_trace(trace, op="gather", values=x)')
    assert lane_statuses(gather) == ["LOADED" if 5 + k % 8 < 8 else "OUT_OF_BOUNDS" for k in range(4 * 8)]


@pytest.mark.slow
def test_tile_operations_tutorial_transforms_number_every_result_cell_by_its_source():
    name = "04_tile_operations.ipynb"
    iota = lambda *shape: np.arange(np.prod(shape)).reshape(shape)
    expected = {   # the result panel: each cell's position in its operand, as NumPy moves it
        "ct.reshape(t, (4, 2)), (2, 4)": iota(2, 4).reshape(4, 2),
        "ct.permute(t, (2, 0, 1)), (4, 2, 2)": iota(4, 2, 2).transpose(2, 0, 1),
        "ct.transpose(t), (4, 2, 2)": iota(4, 2, 2).swapaxes(0, 1),
        "ct.cat((a, b), 1), (4, 2), (4, 2)": np.concatenate([iota(4, 2), iota(4, 2)], 1),
        "ct.extract(t, (0, 1), (2, 2)), (4, 4)": iota(4, 4)[0:2, 2:4],
        "ct.broadcast_to(t, (4, 4)), (4, 1)": np.broadcast_to(iota(4, 1), (4, 4)),
    }
    for source, result in expected.items():
        svg, = views(name, f"TransformView.of(lambda {'a, b' if 'cat' in source else 't'}: {source})")
        inputs = svg.count('<g class="panel"') - 1
        assert panel_labels(svg, inputs) == result.ravel().tolist(), source
        assert f"result {result.shape}" in " ".join(svg_texts(svg)), source


@pytest.mark.slow
def test_cpp_cells_tutorial_compiles_reports_and_points_at_errors():
    text = outputs("07_cpp_cells.ipynb")
    assert "interpreter: y == 2 * x for all 5000 elements" in text[2]
    assert "parameters (as compiled): x_ptr: .u64, y_ptr: .u64, n: .u32, a: .f32" in text[3]
    assert "C++ tile kernel scale: 1 specialization" in text[3]
    from tileworkbench.runtime.device import gpu_available
    assert ("GPU: the C++ kernel matches" if gpu_available() else "no GPU here") in text[4]
    assert text[5].startswith("scale_tiles_cpp<1024> (_Z15scale_tiles_cppILi1024EEvPfS0_if in the cubin) for sm_")
    assert "theoretical occupancy with 128-thread blocks" in text[5]
    registers = [int(r) for r in re.findall(r"(\d+) registers/thread", text[6])]
    assert len(registers) == 3 and registers == sorted(registers) and registers[0] < registers[2]  # bigger tiles
    assert "argument #0 for `float* x_ptr`: a NumPy array lives on the host" in text[7]
    broken = [c for c in executed("07_cpp_cells.ipynb").cells if c.cell_type == "code"][-1]
    (error,) = [o for o in broken.outputs if o.output_type == "error"]
    assert error.ename == "TileKernelCellError" and error.traceback[:2] == [
        'NvrtcError: identifier "a" is undefined', "  cell line 5, in broken:"]


@pytest.mark.slow
def test_cuda_tile_cpp_tutorial_compiles_traces_and_points_at_errors():
    text = outputs("08_cuda_tile_cpp.ipynb")
    assert text[1].startswith("isinf_example (_Z13isinf_examplePb in the cubin) for sm_")
    assert "parameters (as compiled): out: .u64" in text[1] and "C++ tile kernel isinf_example" in text[1]
    from tileworkbench.runtime.device import gpu_available
    assert ("isinf: [True, True, False, False]" if gpu_available() else "no GPU here") in text[2]
    cells = [c for c in executed("08_cuda_tile_cpp.ipynb").cells if c.cell_type == "code"]
    assert sum(WIDGET in o.get("data", {}) for o in cells[4].outputs) == 4   # coverage and three index maps
    assert sum(WIDGET in o.get("data", {}) for o in cells[6].outputs) == 3   # coverage and two tile spaces
    assert "// cell line" in text[7] and "threads per block chosen by the tile compiler:" in text[7]
    (error,) = [o for o in cells[-1].outputs if o.output_type == "error"]
    assert error.ename == "TileKernelCellError" and error.traceback[1] == "  cell line 7, in broken:"
    assert "error" in text[-1] and '"w"' in text[-1]  # --show log printed the whole log
    (record,) = [o.data[KERNEL_MIME] for o in cells[-1].outputs if KERNEL_MIME in o.get("data", {})]
    assert record["stopped"].startswith("cell line 7: NvrtcError")


@pytest.mark.slow
def test_a_kernel_record_counts_the_specializations_later_cells_made():
    cells = [c for c in executed("02_gather_scatter.ipynb").cells if c.cell_type == "code"]
    (defining,) = [c for c in cells if c.source.startswith("%%tilekernel\ndef scatter_demo")]
    (record,) = [o["data"][KERNEL_MIME] for o in defining.outputs if KERNEL_MIME in o.get("data", {})]
    assert record["kernel"] == "scatter_demo" and record["specialization_count"] >= 1
