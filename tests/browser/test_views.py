"""Every kind of view in a real JupyterLab: a small notebook shows one of each; each must render,
be visible and not be blank, and is saved as tests/browser/artifacts/view_<kind>.png."""
import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from .conftest import (
    ARTIFACTS,
    OFF_LABEL,
    PICTURE,
    TILE_SPACE_LANES,
    cell_outputs,
    distinct_colours,
    hover_colour,
    open_and_run,
    open_notebook,
    page_errors,
    readout,
    screenshot,
    wait_for_views,
)

pytestmark = pytest.mark.browser

SETUP = ['''\
%load_ext tileworkbench
import numpy as np
import tileworkbench.tile as ct
from tileworkbench.tile import interpret
from tileworkbench.profile.access import analyze_trace
from tileworkbench.profile.sweep import sweep
from tileworkbench.widgets.code_view import CodeView
from tileworkbench.widgets.coverage import CoverageView
from tileworkbench.widgets.index_map import IndexMapView
from tileworkbench.widgets.launch_report import LaunchReportView
from tileworkbench.widgets.sweep import SweepView
from tileworkbench.widgets.tile_space import TileSpaceView
from tileworkbench.widgets.transform import TransformView
from tileworkbench.widgets.verdict import VerdictView, compare''', '''\
%%tilekernel
def copy(x, y, TM: ct.Constant[int], TN: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    ct.store(y, (i, j), ct.load(x, (i, j), (TM, TN), padding_mode=ct.PaddingMode.ZERO))''', '''\
%%tilekernel
def masked_gather(table, idx, got):
    i = ct.load(idx, (0,), (8,))
    ct.store(got, (0,), ct.gather(table, i, mask=i != 3, padding_value=-1.0))''', '''\
x = np.arange(60, dtype=np.float32).reshape(6, 10)
y = np.zeros_like(x)
trace = interpret(copy, (2, 3), (x, y, 4, 4), trace=True)
wrong = y.copy()
wrong[5, 9] += 1
table = np.arange(10, dtype=np.float32) * 10
idx = np.array([0, 3, -1, 12, 5, 5, 7, 9], np.int32)''']

# kind -> (the cell that shows it, what its widget draws)
VIEWS = {
    "tile_space": ('TileSpaceView.from_trace(trace, op="load", array="x", block=(1, 2), values=x)', "svg"),
    "tile_space_warps": (('TileSpaceView.from_trace(trace, op="load", array="x", block=(1, 2), values=x, '
                          'access=analyze_trace(copy.specialize((x, y, 4, 4)), trace))'), "svg"),
    "index_map": (('IndexMapView.from_trace(interpret(masked_gather, (1,), (table, idx, np.zeros(8, np.float32)), '
                   'trace=True), op="gather", values=table)'), "svg"),
    "transform": ("TransformView.of(lambda t: ct.permute(t, (2, 0, 1)), (4, 2, 2))", "svg"),
    "coverage": ("CoverageView.from_trace(interpret(copy, (1, 3), (x, np.zeros_like(x), 4, 4), trace=True))", "svg"),
    "launch_report": ('LaunchReportView.measure(copy, (2, 3), (x, y, 4, 4), arch="sm_90")', "svg"),
    "sweep": (('SweepView(sweep(copy, lambda c: (ct.cdiv(6, c["TM"]), ct.cdiv(10, c["TN"])), '
               'lambda c: (x, y, c["TM"], c["TN"]), {"TM": [2, 4, 8], "TN": [4, 8]}, arch="sm_90", progress=False))'), ".sweep-cell"),
    "code_view": ('CodeView(copy, (x, y, 4, 4), arch="sm_90")', "pre"),
    "verdict": ('VerdictView(compare("copy", {"y": y}, {"y": wrong}, trace))', "table"),
}


def show_something(kind: str, view) -> str:
    """Hover (or click) what the screenshot should show; return the text that answers it."""
    if kind == "tile_space":       # the last lane of the ragged corner tile (1, 2): past both edges
        view.locator(TILE_SPACE_LANES).nth(15).hover(position=OFF_LABEL)
    elif kind == "tile_space_warps":  # the corner tile's first lane, inside the array: who moves it
        view.locator(TILE_SPACE_LANES).nth(0).hover(position=OFF_LABEL)
    elif kind == "index_map":      # lane 2, index -1, in the indices panel
        view.locator("svg > g").first.locator("rect").nth(2).hover(position=OFF_LABEL)
    elif kind == "transform":      # the last source element, in the input and the result
        return hover_colour(view, "\u2026 15")
    elif kind == "coverage":       # rows 4 and 5 of y: the grid of (1, 3) blocks stops short
        return hover_colour(view, "hole")
    elif kind == "launch_report":  # the occupancy curve over block sizes, at its left end: copy's 32 threads
        view.locator("svg rect[fill=transparent]").first.hover(position={"x": 1, "y": 50})
        return view.locator("svg", has_text="occupancy vs threads").text_content()
    elif kind == "code_view":
        view.locator("button", has_text="CUDA").click()
        return view.locator("pre").inner_text()
    else:
        return view.inner_text()
    return readout(view)


SHOWN = {   # kind -> what the view says once show_something has acted on it
    "tile_space": "x[7, 11] (padding: reads 0) tile (1, 2) lane (3, 3) \u2190 the block's tile",
    "tile_space_warps": "warp 0 thread 0 (lane 0): ",
    "index_map": "lane 2: table[-1] \u2014 out of bounds, reads padding_value = -1",
    "transform": "source: operand 0, position 15",
    "coverage": "written by 0 block(s)",
    "launch_report": "32: 50%, 32 blocks, blocks",   # sm_90: at most 32 blocks of one warp, 32 of 64 warps
    "sweep": "colour scale: every configuration at 50%",
    "code_view": "__global__",
    "verdict": "copy: mismatch",
}


def test_every_view_renders_in_jupyterlab_and_is_screenshot(browser, lab):
    folder = lab.root / "views"
    folder.mkdir(exist_ok=True)
    cells = [new_code_cell(source) for source in SETUP + [source for source, _ in VIEWS.values()]]
    kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(new_notebook(cells=cells, metadata={"kernelspec": kernelspec}), folder / "all_views.ipynb")
    page = open_and_run(browser, lab, "views/all_views.ipynb")
    wait_for_views(page)
    assert page.locator(".jp-OutputArea-output:has-text('Traceback')").count() == 0
    ARTIFACTS.mkdir(exist_ok=True)
    for kind, (source, drawn) in VIEWS.items():
        view = cell_outputs(page, source)
        assert view.count() == 1 and view.locator(drawn).first.is_visible(), kind
        assert SHOWN[kind] in show_something(kind, view), kind
        if kind == "launch_report":   # the accesses modelled on the interpreter, below the resources
            assert "memory access (modelled, " in view.locator("svg").first.text_content()
        box = view.bounding_box()
        assert box and box["width"] > 100 and box["height"] > 50, (kind, box)
        png = view.screenshot(path=str(ARTIFACTS / f"view_{kind}.png"), animations="disabled")
        assert distinct_colours(page, png) >= 4, f"the {kind} screenshot is blank"
    assert page_errors(page) == []


def write_views_notebook(lab, name: str):
    folder = lab.root / "views"
    folder.mkdir(exist_ok=True)
    cells = [new_code_cell(source) for source in SETUP + [source for source, _ in VIEWS.values()]]
    kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(new_notebook(cells=cells, metadata={"kernelspec": kernelspec}), folder / name)
    return folder / name


def pictures_shown(page, tag: str) -> None:
    """Every view's static picture is visible, drawn and not blank; saved as <tag>_<kind>.png."""
    page.wait_for_function(f"[...document.querySelectorAll('{PICTURE} img')].filter(i => i.naturalWidth > 0)"
                           f".length >= {len(VIEWS)}", timeout=60_000)
    for kind, (source, _) in VIEWS.items():
        picture = cell_outputs(page, source, pictures=True)
        assert picture.count() == 1 and picture.locator("img").is_visible(), kind
        box = picture.bounding_box()
        assert box and box["width"] > 100 and box["height"] > 50, (kind, box)
        png = picture.screenshot(path=str(ARTIFACTS / f"{tag}_{kind}.png"), animations="disabled")
        assert distinct_colours(page, png) >= 4, f"the {kind} picture is blank"


def test_a_saved_notebook_reopened_shows_every_views_picture_without_the_kernel_that_made_them(browser, lab):
    path = write_views_notebook(lab, "saved_views.ipynb")
    page = open_and_run(browser, lab, "views/saved_views.ipynb")
    wait_for_views(page)
    for kind, (source, drawn) in VIEWS.items():   # live: the widget is drawn and has hidden its picture
        assert cell_outputs(page, source).locator(drawn).first.is_visible(), kind
        page.wait_for_function("(source) => [...document.querySelectorAll('.jp-CodeCell')].filter(c => "
                               "c.querySelector('.jp-InputArea').textContent.includes(source)).every(c => "
                               f"[...c.querySelectorAll('{PICTURE}')].every(p => p.offsetParent === null))", arg=source)
    page.evaluate("""async () => {
        const app = window.jupyterapp, panel = app.shell.currentWidget;
        await app.commands.execute('docmanager:save');
        await panel.sessionContext.shutdown();
    }""")
    page.close()
    saved = nbformat.read(path, as_version=4)
    for cell in saved.cells[len(SETUP):]:
        kinds = ["text/html" in o.get("data", {}) and "image/svg+xml" in o.data for o in cell.outputs]
        assert kinds.count(True) == 1, cell.source   # the picture, beside the widget's output

    reopened = open_notebook(browser, lab, "views/saved_views.ipynb")
    pictures_shown(reopened, "reopened")
    # each live widget's output, without its model, says what running the cell adds (the extension's
    # style), not the widget manager's "model not found"
    placeholders = """() => [...document.querySelectorAll('.jp-OutputArea-output.jupyter-widgets')]
        .filter((e) => !e.children.length)"""
    reopened.wait_for_function(f"({placeholders})().length >= {len(VIEWS)}", timeout=30_000)
    shown = reopened.evaluate(f"""() => ({placeholders})().map((e) => [getComputedStyle(e).fontSize,
        getComputedStyle(e, '::before').content])""")
    assert all(size == "0px" and "run the cell for the interactive view" in said for size, said in shown), shown
    screenshot(reopened, "saved_views_reopened")
    assert page_errors(reopened) == []
    reopened.close()

    # someone else's copy is untrusted: front ends render its HTML sanitized and refuse SVG images
    saved.cells.insert(0, nbformat.v4.new_markdown_cell("A copy from elsewhere"))
    nbformat.write(saved, path.with_name("untrusted_views.ipynb"))
    untrusted = open_notebook(browser, lab, "views/untrusted_views.ipynb")
    pictures_shown(untrusted, "untrusted")
    untrusted.close()


def test_notebook_7_shows_the_pictures_of_a_notebook_executed_elsewhere(browser, notebook7):
    from nbclient import NotebookClient

    from ..widgets.test_saved_notebook import CELLS
    nb = new_notebook(cells=[new_code_cell(c) for c in CELLS],
                      metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    del nb.metadata["widgets"]   # as JupyterLab and Notebook 7 save by default: no widget state
    nbformat.write(nb, notebook7.root / "executed_views.ipynb")
    page = open_notebook(browser, notebook7, "executed_views.ipynb", notebook7=True)
    page.wait_for_function(f"[...document.querySelectorAll('{PICTURE} img')].filter(i => i.naturalWidth > 0)"
                           f".length === {len(CELLS) - 1}", timeout=60_000)
    pictures = page.locator(f"{PICTURE} img")
    assert all(pictures.nth(k).is_visible() for k in range(pictures.count()))
    screenshot(page, "notebook7_executed_views")
    assert page_errors(page) == []
