"""The puzzles check answers on the interpreter: every reference solution solves its puzzle, an empty
kernel is 'not solved yet', a wrong one names the differing elements and the blocks that wrote them,
and the notebooks (made from the catalogue) run as shipped without an error."""
import nbformat
import numpy as np
import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from nbclient import NotebookClient

import tileworkbench.tile as ct
from tileworkbench.puzzles import PUZZLES, check
from tileworkbench.puzzles.notebooks import notebook_cells, notebook_names

from ..notebooks.test_notebooks import NOTEBOOKS
from .solutions import SOLUTIONS

FOLDER = NOTEBOOKS / "puzzles"


def test_at_least_fifteen_puzzles_each_with_a_reference_solution():
    assert len(PUZZLES) >= 15
    assert set(SOLUTIONS) == set(PUZZLES)


@pytest.mark.parametrize("name", list(PUZZLES))
def test_reference_solution_solves_its_puzzle(name):
    result = check(name, SOLUTIONS[name])
    assert result.status == "solved", result.text()


@ct.kernel
def empty(x, out, TILE: ct.Constant[int]):
    pass


@ct.kernel
def half_index(x, out, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(out, (i // 2,), 2 * ct.load(x, (i,), (TILE,), padding_mode=ct.PaddingMode.ZERO))


@ct.kernel
def shifted(x, out, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(out, (i + 1,), ct.load(x, (i,), (TILE,)) + 10)


@ct.kernel
def first_column_only(a, b, out, T: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    ct.store(out, (i, 0), ct.load(a, (i,), (T,))[:, None] + ct.load(b, (j,), (T,))[None, :])


def test_kernel_that_stores_nothing_is_not_solved_yet():
    result = check("add_ten", empty)
    assert result.status == "not solved yet" and not result.solved
    assert result.text() == "Map: not solved yet (the kernel stores nothing to out)."


def test_wrong_answer_names_differing_elements_and_the_blocks_that_wrote_them():
    result = check("double_ragged", half_index)
    assert result.status == "wrong"
    # blocks 0 and 1 both store to tile 0 (block 1 last), blocks 2 and 3 to tile 1, nothing to tiles 2 and 3
    assert result.wrong == {"out": 50}
    first = result.differences[0]
    assert first.index == (0,) and first.writers == ((0,), (1,))
    x = PUZZLES["double_ragged"].inputs(np.random.default_rng(0))["x"]
    assert first.got == pytest.approx(2 * x[16]) and first.expected == pytest.approx(2 * x[0])
    assert "out[0]: got" in result.text() and "written by blocks (0,), (1,)" in result.text()


def test_element_written_by_several_blocks_lists_them_in_launch_order():
    result = check("outer_add", first_column_only)
    assert result.differences[0].index == (0, 0) and result.differences[0].writers == ((0, 0), (0, 1), (0, 2))
    assert "written by blocks (0, 0), (0, 1), (0, 2)" in result.text()


def test_element_no_block_wrote_is_reported_as_such():
    result = check("add_ten", shifted)   # tile 0 is never written; block 3's store falls off the end
    assert result.wrong == {"out": 64}
    assert result.differences[0].index == (0,) and result.differences[0].writers == ()
    assert "out[0]: got 0, expected" in result.text() and "(written by no block)" in result.text()


def test_wrong_answer_shows_the_coverage_view_of_its_outputs():
    result = check("double_ragged", half_index)
    InteractiveShell.instance()  # display() reaches a display publisher only inside a shell
    with capture_output() as shown:
        result._ipython_display_()
    assert "out: 50 of 50 elements differ." in shown.stdout
    assert any("application/vnd.jupyter.widget-view+json" in o.data for o in shown.outputs)


@ct.kernel
def transpose_by_gather(x, out, T: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    rows = ct.arange(T, dtype=ct.int32)[:, None] + i * T
    cols = ct.arange(T, dtype=ct.int32)[None, :] + j * T
    ct.store(out, (i, j), ct.gather(x, (cols, rows)))


def test_correct_transpose_by_gather_fails_the_whole_sector_requirement():
    # 128 threads, 4 consecutive elements each: a warp's gather covers 4 tile rows x 8 tile columns,
    # i.e. 8 columns of x with 4 consecutive floats in each: 8 sectors, 16 of 32 bytes used
    result = check("transpose_coalesced", transpose_by_gather)
    assert result.status == "correct but not efficient" and not result.solved
    assert "the gather of x uses 50% of the bytes its sectors move (8.0 sectors per request)" in result.text()
    assert check("transpose_coalesced", SOLUTIONS["transpose"]).solved   # ct.transpose of a whole tile


def test_unknown_puzzle_names_the_puzzles():
    with pytest.raises(KeyError, match="No puzzle named 'nope'; the puzzles are add_ten, double_ragged"):
        check("nope", empty)


def test_notebooks_are_the_catalogue_without_outputs():
    assert sorted(p.name for p in FOLDER.glob("*.ipynb")) == sorted(notebook_names().values())
    for series, name in notebook_names().items():
        nb = nbformat.read(FOLDER / name, as_version=4)
        assert [(c.cell_type, c.source) for c in nb.cells] == notebook_cells(series), name
        assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), name


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(notebook_names().values()))
def test_puzzle_notebook_runs_as_shipped_and_reports_not_solved_yet(name):
    nb = nbformat.read(FOLDER / name, as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(FOLDER)}}).execute()
    checks = [c for c in nb.cells if c.cell_type == "code" and "check(" in c.source and "@ct.kernel" in c.source]
    assert checks
    for cell in checks:
        assert [o.output_type for o in cell.outputs] == ["stream"], cell.source
        assert "not solved yet" in cell.outputs[0].text
