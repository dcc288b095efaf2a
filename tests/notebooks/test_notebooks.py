"""The notebooks in notebooks/ run top to bottom on the interpreter and show what they promise."""
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).parents[2] / "notebooks"


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


def outputs(name: str) -> list[str]:
    """The text of every code cell's outputs, after running the notebook top to bottom."""
    nb = execute(name)
    return [" ".join(text_of(c).split()) for c in nb.cells if c.cell_type == "code"]


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
def test_cupy_tutorial_tile_kernels_give_cupys_documented_results():
    out = outputs("06_cupy_kernels.ipynb")
    assert "array([[ 0., 0., 0., 0., 0.], [25., 25., 25., 25., 25.]], dtype=float32)" in out
    assert "array([ 5.477226 , 15.9687195], dtype=float32)" in out


@pytest.mark.slow
def test_tile_spaces_tutorial_shows_order_padding_and_the_trace():
    out = outputs("01_tile_spaces.ipynb")
    assert "array([[ 0, 4, 8, 12]], dtype=int32)" in out  # load(..., (1, 4), order='F')
    assert any("'NEG_ZERO': [-0.0, -0.0]" in o and "'UNDETERMINED': [nan, nan]" in o for o in out)
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
    assert "timings need a GPU" in text and "best: {'TM':" in text
