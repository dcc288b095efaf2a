"""The block stepper in a real JupyterLab and Notebook 7: `%%tilekernel --viz` shows it linked to the
other views; stepping, playing, hovering a value and clicking an element that another block wrote.
The current op's line is highlighted in the kernel cell's own editor too.
Screenshots in tests/browser/artifacts/: stepper_lab.png, linked_lab.png, stepper_cell_line_lab.png and
stepper_notebook7.png are the pictures of docs/views (copied there), stepper_lab_page.png the whole page."""
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


# ---- the current op's line in the cell's own editor ------------------------------------------------------

BID, ZEROS, LOOP_BODY, STORE = ("    i = ct.bid(0)", "    acc = ct.zeros((TILE,), ct.float32)",
                                "        acc = acc + ct.load(x, (i + k,), (TILE,), padding_mode=ct.PaddingMode.NAN)",
                                "    ct.store(y, (i,), acc)")
ANOTHER_CELL = '''\
from tileworkbench.tile import interpret
from tileworkbench.widgets.stepper import StepperView
StepperView.from_trace(interpret(window_sum, (3,), (x, y, 4), values=True), block=(1,))'''


def _cell(page, index: int):
    """The notebook's code cell `index` (by position: a cell scrolled far away may have no text to match)."""
    return page.locator(".jp-CodeCell").nth(index)


def _highlighted(cell) -> list:
    """The text of the editor line under each cell-line highlight of the cell, None where a highlight
    does not cover exactly one line."""
    return cell.evaluate("""(cell) => [...cell.querySelectorAll('.tileworkbench-cell-line')].map((mark) => {
        const m = mark.getBoundingClientRect();
        const line = [...cell.querySelectorAll('.jp-InputArea-editor .cm-line')].find((l) => {
            const r = l.getBoundingClientRect();
            return Math.abs(r.top - m.top) < 1 && Math.abs(r.bottom - m.bottom) < 1;
        });
        return line ? line.textContent : null;
    })""")


def _wait_highlighted(cell, lines: list, timeout_ms: int = 30_000):
    for _ in range(timeout_ms // 100):
        if _highlighted(cell) == lines:
            return
        cell.page.wait_for_timeout(100)
    assert _highlighted(cell) == lines


def _scroll_notebook(cell, lines: float = 0, pixels: float = 0):
    """Scroll the notebook so that the cell's top is `lines` editor lines plus `pixels` above the
    top of the window."""
    cell.evaluate("""(cell, [lines, pixels]) => {
        let box = cell.parentElement;
        while (box && !(box.scrollHeight > box.clientHeight && /auto|scroll/.test(getComputedStyle(box).overflowY)))
            box = box.parentElement;
        const line = cell.querySelector('.cm-line').getBoundingClientRect().height;
        box.scrollTop += cell.getBoundingClientRect().top - box.getBoundingClientRect().top + lines * line + pixels;
    }""", [lines, pixels])


def test_the_current_op_is_highlighted_in_the_kernels_cell_in_jupyterlab(browser, lab):
    page, outputs, stepper = _open(browser, lab, "cell_line.ipynb", cells=(SETUP, KERNEL, ANOTHER_CELL))
    kernel_cell = _cell(page, 1)
    _wait_highlighted(kernel_cell, [BID])                       # op 1 of block 2
    stepper.locator(".step-next").click()                       # the buttons
    _wait_highlighted(kernel_cell, [ZEROS])
    stepper.locator(".tileworkbench-stepper").press("ArrowRight")   # the keyboard: i + k, in the loop
    _wait_highlighted(kernel_cell, [LOOP_BODY])
    stepper.locator(".step-slider").fill("1")                   # the slider
    _wait_highlighted(kernel_cell, [ZEROS])
    stepper.locator(".step-play").click()                       # play, to the block's last op
    _wait_counter(page, stepper, f"op {STEPS} / {STEPS}")
    _wait_highlighted(kernel_cell, [STORE])
    # a selection in another view of the launch moves the stepper to another block, and the highlight along
    stepper.locator(".step-first").click()
    _wait_highlighted(kernel_cell, [BID])
    coverage = outputs.filter(has=page.locator("svg text.block"))
    coverage.locator("svg g.panel[data-panel='1'] rect.cell").nth(1).click()   # y[1], written by block 0's store
    stepper.locator("svg text.title", has_text="block (0,)").wait_for(timeout=30_000)
    _wait_highlighted(kernel_cell, [STORE])
    stepper.locator(".step-back").click()
    _wait_highlighted(kernel_cell, [LOOP_BODY])
    # a view of the same kernel shown in another cell highlights nothing in its cell nor in the kernel's
    other = _cell(page, 2)
    other.locator(".tileworkbench-stepper .step-counter").wait_for(timeout=60_000)
    other.locator(".step-next").click()
    other.locator(".step-counter", has_text="op 2 /").wait_for(timeout=30_000)
    assert _highlighted(other) == [] and _highlighted(kernel_cell) == [LOOP_BODY]
    # it stays on its line as the notebook scrolls
    _scroll_notebook(kernel_cell, pixels=-200)
    assert _highlighted(kernel_cell) == [LOOP_BODY]
    _scroll_notebook(kernel_cell, lines=3)
    assert _highlighted(kernel_cell) == [LOOP_BODY]
    page.set_viewport_size({"width": 1400, "height": 1800})
    _scroll_notebook(kernel_cell, pixels=-40)
    _wait_highlighted(kernel_cell, [LOOP_BODY])
    shot = kernel_cell.screenshot(path=str(ARTIFACTS / "stepper_cell_line_lab.png"), animations="disabled")
    assert distinct_colours(page, shot) >= 4
    # editing the cell takes it away (the lines no longer are the traced kernel's); undoing brings it back
    kernel_cell.locator(".cm-line", has_text="for k in range(2):").click()
    page.keyboard.press("End")
    page.keyboard.type("  # edited")
    _wait_highlighted(kernel_cell, [])
    page.keyboard.press("Control+z")
    _wait_highlighted(kernel_cell, [LOOP_BODY])
    # so does clearing the outputs, which disposes of the view
    page.evaluate("""async () => {
        const app = window.jupyterapp, notebook = app.shell.currentWidget.content;
        notebook.activeCellIndex = notebook.widgets.findIndex((c) => c.model.sharedModel.source.includes('def window_sum'));
        await app.commands.execute('notebook:clear-cell-output');
    }""")
    _wait_highlighted(kernel_cell, [])
    assert page_errors(page) == []
    page.close()


NOTES = "".join(f"    # note {k}\n" for k in range(150))
LONG_KERNEL = KERNEL.replace("    for k in range(2):", NOTES + "    for k in range(2):").replace(
    "    ct.store(", NOTES + "    ct.store(")   # lines 3 and 4, the loop at 155 and 156, the store at 307


def test_a_long_cell_highlights_the_lines_codemirror_rendered_where_it_can_number_them(browser, lab):
    page, _, _ = _open(browser, lab, "long_cell.ipynb", cells=(SETUP, LONG_KERNEL))
    kernel_cell = _cell(page, 1)
    stepper = kernel_cell.locator(".tileworkbench-stepper")   # not by the cell's text: its code may be unrendered
    _scroll_notebook(kernel_cell)
    _wait_highlighted(kernel_cell, [BID])                       # among the first lines, numbered from the top
    stepper.locator(".step-slider").fill("3")                   # the load, 150 lines further down
    _wait_counter(page, stepper, f"op 4 / {STEPS}")
    _scroll_notebook(kernel_cell)
    _wait_highlighted(kernel_cell, [])
    rendered = kernel_cell.evaluate("(cell) => [...cell.querySelector('.cm-content').children]"
                                    ".map((e) => e.classList.contains('cm-line') ? e.textContent : null)")
    assert None in rendered and LOOP_BODY not in rendered       # CodeMirror left a gap where the load's line is
    # scrolled there, the line is rendered between two gaps: it has no number CodeMirror's DOM tells
    _scroll_notebook(kernel_cell, lines=150)
    kernel_cell.locator(".cm-line", has_text="padding_mode=ct.PaddingMode.NAN").wait_for(timeout=30_000)
    page.wait_for_timeout(500)
    assert _highlighted(kernel_cell) == []
    # the cell's last lines are numbered from its end
    stepper.locator(".step-slider").fill(str(STEPS - 1))
    _wait_counter(page, stepper, f"op {STEPS} / {STEPS}")
    _scroll_notebook(kernel_cell, lines=290)
    _wait_highlighted(kernel_cell, [STORE])
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
    kernel_cell = _cell(page, 1)
    _wait_highlighted(kernel_cell, [LOOP_BODY])                 # in the cell's own editor too
    for k in (3, 2):
        stepper.locator(".tileworkbench-stepper").press("ArrowLeft")
        _wait_counter(page, stepper, f"op {k} / {STEPS}")
    _wait_highlighted(kernel_cell, [ZEROS])
    stepper.locator(".step-play").click()
    _wait_counter(page, stepper, f"op {STEPS} / {STEPS}")
    _wait_highlighted(kernel_cell, [STORE])
    shot = stepper.screenshot(path=str(ARTIFACTS / "stepper_notebook7.png"), animations="disabled")
    assert distinct_colours(page, shot) >= 4
    assert page_errors(page) == []
    page.close()
