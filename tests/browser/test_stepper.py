"""The block stepper in a real JupyterLab and Notebook 7: `%%tilekernel --viz` shows it linked to the
other views; stepping, playing, hovering a value and clicking an element that another block wrote.
Screenshots in tests/browser/artifacts/: stepper_lab.png, linked_lab.png and stepper_notebook7.png
are the pictures of docs/views (copied there), stepper_lab_page.png the whole page."""
import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from .conftest import (
    ARTIFACTS,
    OFF_LABEL,
    TILE_SPACE_LANES,
    cell_outputs,
    distinct_colours,
    open_notebook,
    page_errors,
    run_cells,
)

pytestmark = pytest.mark.browser

SETUP = '''\
%load_ext tileworkbench
import numpy as np
x = np.arange(10, dtype=np.float32)
x[9] = np.inf
y = np.zeros(12, np.float32)'''
KERNEL = '''\
%%tilekernel --grid "(3,)" --args "x, y, 4" --viz
def window_sum(x, y, TILE: ct.Constant[int]):
    i = ct.bid(0)
    acc = ct.zeros((TILE,), ct.float32)
    for k in range(2):
        acc = acc + ct.load(x, (i + k,), (TILE,), padding_mode=ct.PaddingMode.NAN)
    ct.store(y, (i,), acc)'''
STEPS = 9   # per block: bid, zeros, then i + k, load and add twice, store


def _open(browser, server, name: str, notebook7: bool = False, cells=(SETUP, KERNEL), kernel="def window_sum"):
    kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(new_notebook(cells=[new_code_cell(c) for c in cells], metadata={"kernelspec": kernelspec}),
                   server.root / name)
    page = open_notebook(browser, server, name, notebook7=notebook7)
    run_cells(page)
    outputs = cell_outputs(page, kernel)
    stepper = outputs.filter(has=page.locator(".tileworkbench-stepper"))
    stepper.locator(".step-counter").wait_for(timeout=60_000)
    return page, outputs, stepper


def _counter(stepper) -> str:
    return stepper.locator(".step-counter").inner_text()


def _where(stepper) -> str:
    return stepper.locator("svg text.where").text_content()


def _wait_counter(page, stepper, text: str):
    stepper.locator(".step-counter", has_text=text).wait_for(timeout=30_000)


def test_stepping_through_a_block_in_jupyterlab(browser, lab):
    page, outputs, stepper = _open(browser, lab, "stepper.ipynb")
    # --viz starts every view at the first block whose lanes pad: block 2 reads past the end of x
    assert _counter(stepper) == f"op 1 / {STEPS}" and "block (2,)" in stepper.locator("svg text.title").text_content()
    stepper.locator(".step-play").click()   # plays to the block's last op and stops there
    _wait_counter(page, stepper, f"op {STEPS} / {STEPS}")
    assert _where(stepper) == "line 7: store"
    stepper.locator(".step-first").click()
    _wait_counter(page, stepper, f"op 1 / {STEPS}")
    for k in range(2, 6):
        stepper.locator(".step-next").click()
        _wait_counter(page, stepper, f"op {k} / {STEPS}")
    stepper.locator(".step-back").click()
    _wait_counter(page, stepper, f"op 4 / {STEPS}")
    assert _where(stepper) == "line 6: load (iteration 0 of the loop on line 5)"
    assert stepper.locator("rect.current-line").count() == 1
    stepper.locator("g.panel[data-panel='0'] rect.cell").nth(1).hover()
    assert stepper.locator(".step-status").inner_text() == "[1] = inf \u2190 x[9] loaded"
    stepper.locator("g.panel[data-panel='0'] rect.cell").nth(2).hover()
    assert stepper.locator(".step-status").inner_text() == "[2] = nan \u2190 x[10] padded"
    assert stepper.locator("g.padded rect").count() == 2
    ARTIFACTS.mkdir(exist_ok=True)
    shot = stepper.screenshot(path=str(ARTIFACTS / "stepper_lab.png"), animations="disabled")
    assert distinct_colours(page, shot) >= 4

    # a click on y[1] (block 0 wrote it) jumps there, and the linked coverage view follows
    stepper.locator("g.panel[data-panel='2'] rect.cell").nth(1).click()
    stepper.locator("svg text.message", has_text="y[1] was written by block (0,) at op 9 (line 7)").wait_for()
    assert "block (0,)" in stepper.locator("svg text.title").text_content() and _where(stepper) == "line 7: store"
    coverage = outputs.filter(has=page.locator("svg text.block"))
    coverage.locator("svg text.block", has_text="block (0,)").wait_for(timeout=30_000)
    stepper.locator(".block-field").fill("1")
    stepper.locator(".block-field").press("Enter")
    stepper.locator("svg text.title", has_text="block (1,)").wait_for(timeout=30_000)
    coverage.locator("svg text.block", has_text="block (1,)").wait_for(timeout=30_000)
    # a click on lane 2 of the store's tile space (y[6]) selects it: the stepper goes to the op that wrote it
    stepper.locator(".step-first").click()
    _wait_counter(page, stepper, f"op 1 / {STEPS}")
    store = outputs.filter(has=page.locator("svg text", has_text="store y, line 7"))
    store.locator(TILE_SPACE_LANES).nth(2).click(position=OFF_LABEL)
    stepper.locator("svg text.message", has_text="y[6] was written by block (1,) at op 9 (line 7)").wait_for()
    _wait_counter(page, stepper, f"op {STEPS} / {STEPS}")
    page.screenshot(path=str(ARTIFACTS / "stepper_lab_page.png"), full_page=True)
    # every view of the launch on block (1,), y[6] outlined where it is drawn; tall enough for all of them
    page.set_viewport_size({"width": 1400, "height": 1800})
    coverage.locator("svg g.selected rect").wait_for(timeout=30_000)
    area = page.locator(".jp-CodeCell").filter(has=page.locator(".jp-InputArea", has_text="def window_sum"))
    linked = area.locator(".jp-OutputArea").screenshot(path=str(ARTIFACTS / "linked_lab.png"),
                                                       animations="disabled")
    assert distinct_colours(page, linked) >= 4
    assert page_errors(page) == []
    page.close()


GATHER = '''\
%%tilekernel --grid "(1,)" --args "table, idx, got" --viz
def pick(table, idx, got):
    i = ct.load(idx, (0,), (8,))
    ct.store(got, (0,), ct.gather(table, i, padding_value=-1.0))'''
GATHER_SETUP = '''\
%load_ext tileworkbench
import numpy as np
table = np.arange(10, dtype=np.float32) * 10
idx = np.array([0, 3, -1, 12, 5, 5, 7, 9], np.int32)
got = np.zeros(8, np.float32)'''


def test_a_lane_clicked_in_an_index_map_is_selected_in_every_view(browser, lab):
    page, outputs, stepper = _open(browser, lab, "pick.ipynb", cells=(GATHER_SETUP, GATHER), kernel="def pick")
    index_map = outputs.filter(has=page.locator("svg text", has_text="gather table"))
    index_map.locator("rect.lane").nth(1).click()        # lane 1 reads table[3]
    stepper.locator("svg text.message", has_text="table[3]: no block of this launch wrote it").wait_for()
    coverage = outputs.filter(has=page.locator("svg text.block"))
    assert coverage.locator("svg g.selected rect").count() == 1
    assert page_errors(page) == []
    page.close()


def test_stepping_through_a_block_in_notebook_7(browser, notebook7):
    ARTIFACTS.mkdir(exist_ok=True)
    page, _, stepper = _open(browser, notebook7, "stepper7.ipynb", notebook7=True)
    assert _counter(stepper) == f"op 1 / {STEPS}"
    for k in range(2, 5):
        stepper.locator(".step-next").click()
        _wait_counter(page, stepper, f"op {k} / {STEPS}")
    assert _where(stepper) == "line 6: load (iteration 0 of the loop on line 5)"
    stepper.locator(".step-play").click()
    _wait_counter(page, stepper, f"op {STEPS} / {STEPS}")
    shot = stepper.screenshot(path=str(ARTIFACTS / "stepper_notebook7.png"), animations="disabled")
    assert distinct_colours(page, shot) >= 4
    assert page_errors(page) == []
    page.close()
