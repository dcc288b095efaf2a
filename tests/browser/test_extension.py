"""The JupyterLab extension in a real JupyterLab: %%tilekernel cells highlighted as their language
(header line included, switching as the header changes), compile errors underlined in the editor
and cleared by a clean run, and the kernel inspector filled from live runs and from saved outputs.
Screenshots: tests/browser/artifacts/extension_*.png."""
import re

import nbformat
import pytest
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

from .conftest import ARTIFACTS, open_notebook, page_errors, run_cells, screenshot

pytestmark = pytest.mark.browser

SETUP = '''\
%load_ext tileworkbench
import numpy as np
import tileworkbench.tile as ct
x = np.arange(8, dtype=np.float32)
y = np.zeros(8, np.float32)'''
TILE_CELL = '''\
%%tilekernel --grid "(2,)" --args "x, y, 4"
def double(x, y, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(y, (i,), ct.load(x, (i,), (TILE,)) * 2)'''
CPP_CELL = '''\
%%tilekernel --lang cpp scale --show resources
#include <tileworkbench/tile.cuh>
extern "C" __global__ void scale(const float* x, float* y, int n, float a) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i];
}'''
TILE_ERROR = '''\
%%tilekernel --grid "(2,)" --args "x, y, 4"
def broken(x, y, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(y, (i,), ct.load(x, (i,), (3,)))'''
CPP_ERROR = '''\
%%tilekernel --lang cpp
extern "C" __global__ void oops(float* y) {
  y[0] = missing + 1.0f;
}'''
PLAIN = "def plain():\n    return 1"
CELLS = [SETUP, TILE_CELL, CPP_CELL, TILE_ERROR, CPP_ERROR, PLAIN]


def write_notebook(root) -> str:
    path = root / "extension" / "cells.ipynb"
    path.parent.mkdir(exist_ok=True)
    nbformat.write(new_notebook(cells=[new_code_cell(c) for c in CELLS],
                                metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                         "language": "python"}}), path)
    return "extension/cells.ipynb"


@pytest.fixture(scope="module")
def notebook(lab):
    return write_notebook(lab.root)


EXPECTED_MIME_TYPES = ["text/x-ipython", "text/x-tilekernel", "text/x-tilekernel-cpp", "text/x-tilekernel",
                       "text/x-tilekernel-cpp", "text/x-ipython"]


def wait_for_mime_types(page):
    """The notebook's own mime type arrives with the kernel's language info; ours follow the headers."""
    page.wait_for_function("(expected) => JSON.stringify(window.jupyterapp.shell.currentWidget.content.widgets"
                           ".map(c => c.model.mimeType)) === JSON.stringify(expected)", arg=EXPECTED_MIME_TYPES)


def mime_types(page) -> list[str]:
    return page.evaluate("() => window.jupyterapp.shell.currentWidget.content.widgets.map(c => c.model.mimeType)")


def token_colours(page, cell: int, words: list[str]) -> dict[str, str]:
    """The colour each word of a cell's editor is drawn in (its innermost span that holds exactly it)."""
    return page.evaluate("""([cell, words]) => {
        const root = window.jupyterapp.shell.currentWidget.content.widgets[cell].editor.host;
        const spans = [...root.querySelectorAll('.cm-line span')];
        return Object.fromEntries(words.map(w => {
            const span = spans.find(s => s.textContent === w);
            return [w, span ? getComputedStyle(span).color : null];
        }));
    }""", [cell, words])


def theme_colours(page, names: list[str]) -> dict[str, str]:
    """The colours JupyterLab's editor theme gives to token kinds (its CSS variables, resolved)."""
    return page.evaluate("""(names) => Object.fromEntries(names.map(name => {
        const probe = document.createElement('span');
        probe.style.color = `var(--jp-mirror-editor-${name}-color)`;
        document.querySelector('.cm-content').appendChild(probe);
        const colour = getComputedStyle(probe).color;
        probe.remove();
        return [name, colour];
    }))""", names)


def test_tilekernel_cells_are_highlighted_as_their_language_header_line_included(browser, lab, notebook):
    page = open_notebook(browser, lab, notebook)
    wait_for_mime_types(page)
    assert mime_types(page) == EXPECTED_MIME_TYPES
    theme = theme_colours(page, ["meta", "attribute", "string", "keyword", "variable", "def"])
    assert len(set(theme.values())) == 6, theme  # the checks below can tell the kinds apart

    # the header: the magic as meta, options as attributes, their values as strings, the kernel's
    # name as a definition - in both languages
    page.wait_for_function("""() => [...document.querySelectorAll('.jp-CodeCell .cm-line span')]
        .filter(s => s.textContent === '%%tilekernel').length === 4""")
    tile = token_colours(page, 1, ["%%tilekernel", "--grid", '"(2,)"', "def", "return"])
    assert tile["%%tilekernel"] == theme["meta"] and tile["--grid"] == theme["attribute"]
    assert tile['"(2,)"'] == theme["string"] and tile["def"] == theme["keyword"]
    cpp = token_colours(page, 2, ["%%tilekernel", "--lang", "cpp", "scale", "extern", '"C"', "if", "return"])
    assert cpp["%%tilekernel"] == theme["meta"] and cpp["--lang"] == theme["attribute"] and cpp["cpp"] == theme["string"]
    assert cpp["scale"] == theme["def"]  # the header's `scale`, the first in the cell
    assert cpp["if"] == theme["keyword"] and cpp['"C"'] == theme["string"]  # C++ parsed from line 2 on
    screenshot(page, "extension_highlighting")

    # typing a header switches the plain cell to the tile language, `--lang cpp` to C++, and back
    editor = page.locator(".jp-CodeCell").nth(5).locator(".cm-content")
    editor.click()
    page.keyboard.press("Control+Home")
    page.keyboard.type("%%tilekernel --lang cpp\n")
    page.wait_for_function("() => window.jupyterapp.shell.currentWidget.content.widgets[5].model.mimeType"
                           " === 'text/x-tilekernel-cpp'")
    assert token_colours(page, 5, ["--lang"])["--lang"] == theme["attribute"]
    page.keyboard.press("Control+Home")
    page.keyboard.press("End")
    for _ in " --lang cpp":
        page.keyboard.press("Backspace")
    page.wait_for_function("() => window.jupyterapp.shell.currentWidget.content.widgets[5].model.mimeType"
                           " === 'text/x-tilekernel'")
    page.keyboard.press("Control+Home")
    page.keyboard.press("Shift+End")
    page.keyboard.press("Backspace")
    page.keyboard.press("Delete")
    page.wait_for_function("() => window.jupyterapp.shell.currentWidget.content.widgets[5].model.mimeType"
                           " === 'text/x-ipython'")
    assert page_errors(page) == []
    page.close()


def underlines(page) -> list[dict]:
    return page.evaluate("""() => window.jupyterapp.shell.currentWidget.content.widgets.flatMap((c, cell) =>
        [...c.node.querySelectorAll('.cm-tilekernel-error')].map(e => ({
            cell, text: e.textContent, title: e.getAttribute('title'),
            line: e.closest('.cm-line').classList.contains('cm-tilekernel-error-line')})))""")


def test_compile_errors_are_underlined_at_their_range_and_cleared_by_a_clean_run(browser, lab, notebook):
    page = open_notebook(browser, lab, notebook)
    run_cells(page, [0, 3, 4])
    page.wait_for_function("() => document.querySelectorAll('.cm-tilekernel-error').length === 2")
    marks = underlines(page)
    assert [(m["cell"], m["text"], m["line"]) for m in marks] == [(3, "(3,)", True), (4, "missing", True)]
    assert marks[0]["title"].startswith("TileTypeError: Tile shape (3,) must have power-of-two dimensions")
    assert marks[1]["title"] == 'NvrtcError: identifier "missing" is undefined'
    cell = page.locator(".jp-CodeCell").nth(3)
    # the error box shows once (the traceback); the diagnostics bundle's own output stays hidden
    assert cell.locator(".jp-OutputArea").inner_text().count("cell line 4, in broken") == 1
    assert cell.locator(".tw-hidden-output").count() == 1 and not cell.locator(".tw-hidden-output").is_visible()
    page.locator(".cm-tilekernel-error").first.hover()
    screenshot(page, "extension_diagnostics")

    # fixed and run again: its marks go, the other cell's stay
    page.evaluate("""() => { const m = window.jupyterapp.shell.currentWidget.content.widgets[3].model.sharedModel;
                             m.setSource(m.getSource().replace('(3,)', '(TILE,)')); }""")
    run_cells(page, [3])
    page.wait_for_function("() => document.querySelectorAll('.cm-tilekernel-error').length === 1")
    assert [m["cell"] for m in underlines(page)] == [4]
    assert page.locator(".jp-CodeCell").nth(3).locator(".cm-tilekernel-error-line").count() == 0
    assert page_errors(page) == []
    page.close()


def open_inspector(page):
    page.locator(".jp-SideBar.jp-mod-right [data-id='tileworkbench-inspector']").click()
    page.wait_for_selector("#tileworkbench-inspector .tw-kernel", state="visible")
    return page.locator("#tileworkbench-inspector")


def test_the_inspector_lists_the_notebooks_kernels_and_scrolls_to_their_cells(browser, lab, notebook):
    page = open_notebook(browser, lab, notebook)
    run_cells(page, [0, 1, 2])
    # each run leaves a one-line record in the cell's output, with a button to the inspector
    record = page.locator(".jp-CodeCell").nth(1).locator(".tw-record")
    record.wait_for()
    assert record.inner_text().startswith("kernel double · 1 specialization")
    inspector = open_inspector(page)
    kernels = inspector.locator(".tw-kernel")
    assert [kernels.nth(k).get_attribute("data-kernel") for k in range(kernels.count())] == ["double", "scale"]
    double = inspector.locator("section[data-kernel='double']")
    assert double.locator(".tw-signature").inner_text() == "double(x, y, TILE: ct.Constant[int])"
    spec = double.locator(".tw-spec").first
    assert spec.locator(".tw-spec-label").inner_text() == "x: array<float32, 1d>, y: array<float32, 1d>, TILE=4"
    # an interpreter-only run compiles nothing: the record says so, unless the compile cache has it already
    assert "not compiled for sm_90" in spec.inner_text() or re.search(r"\d+ regs", spec.inner_text())
    # no GPU timed anything: said once for the panel, not under each kernel
    assert inspector.locator(".tw-untimed").inner_text().startswith("No timings yet")
    assert inspector.locator(".tw-timing").count() == 0
    scale = inspector.locator("section[data-kernel='scale']")
    metric = {m: scale.locator(f"[data-metric={m}]").first.inner_text() for m in ("threads", "registers", "shared",
                                                                                   "occupancy")}
    assert int(metric["threads"].split()[0]) >= 32 and int(metric["registers"].split()[0]) > 0
    assert metric["shared"].endswith(" smem") and re.fullmatch(r"\d+% occupancy \((warps|threads|blocks|registers|shared memory)\)",
                                                               metric["occupancy"]), metric
    scale.locator("details summary").first.click()
    assert 'extern "C" __global__' in scale.locator("pre.tw-cuda").first.inner_text()
    assert scale.locator(".tw-lang").inner_text() == "C++"
    assert scale.locator(".tw-signature").inner_text() == "scale(const float* x, float* y, int n, float a)"
    screenshot(page, "extension_inspector")

    # clicking a kernel's name makes its cell the active one and scrolls it into view
    page.evaluate("() => window.jupyterapp.shell.currentWidget.content.activeCellIndex = 0")
    scale.locator(".tw-kernel-name").click()
    page.wait_for_function("() => window.jupyterapp.shell.currentWidget.content.activeCellIndex === 2")
    assert page.locator(".jp-CodeCell").nth(2).is_visible()
    # the record's button opens the inspector at its kernel
    page.locator(".jp-CodeCell").nth(1).locator(".tw-record-open").click()
    page.wait_for_selector("#tileworkbench-inspector section[data-kernel='double'].tw-flash")
    # a run that stops at an error says where and why, rather than asking for --grid and --args
    run_cells(page, [3])
    broken = inspector.locator("section[data-kernel='broken']")
    broken.wait_for()
    assert broken.locator(".tw-stopped").inner_text().startswith("stopped at cell line 4: TileTypeError: Tile shape")
    assert "the run stopped before one was made" in broken.locator(".tw-empty-kernel").inner_text()
    assert page_errors(page) == []
    page.close()


def test_the_inspector_reads_a_saved_notebooks_outputs_before_anything_runs(browser, lab, notebook):
    saved = nbformat.read(lab.root / notebook, as_version=4)
    saved.cells = saved.cells[:3]
    NotebookClient(saved, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(lab.root)}}).execute()
    nbformat.write(saved, lab.root / "extension" / "saved.ipynb")
    page = open_notebook(browser, lab, "extension/saved.ipynb")
    page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.shutdown()")  # no live kernel
    page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.sessionContext.session")
    inspector = open_inspector(page)
    assert inspector.locator(".tw-kernel").count() == 2
    assert inspector.locator("section[data-kernel='double'] .tw-cell").inner_text() == "[2]"
    assert inspector.locator("section[data-kernel='scale'] [data-metric=threads]").inner_text() == "256 threads"
    screenshot(page, "extension_inspector_saved")
    assert (ARTIFACTS / "extension_inspector_saved.png").stat().st_size > 0
    page.close()


def test_notebook_7_highlights_underlines_and_inspects_too(browser, notebook7):
    path = write_notebook(notebook7.root)
    page = open_notebook(browser, notebook7, path, notebook7=True)
    wait_for_mime_types(page)
    theme = theme_colours(page, ["meta", "attribute"])
    page.wait_for_function("""() => [...document.querySelectorAll('.jp-CodeCell .cm-line span')]
        .filter(s => s.textContent === '%%tilekernel').length === 4""")
    colours = token_colours(page, 2, ["%%tilekernel", "--lang"])
    assert colours == {"%%tilekernel": theme["meta"], "--lang": theme["attribute"]}
    run_cells(page, [0, 1, 2, 4])
    page.wait_for_function("() => document.querySelectorAll('.cm-tilekernel-error').length === 1")
    assert [(m["cell"], m["text"]) for m in underlines(page)] == [(4, "missing")]
    page.locator(".jp-CodeCell").nth(1).locator(".tw-record-open").click()
    inspector = page.locator("#tileworkbench-inspector")
    inspector.locator("section[data-kernel='double'].tw-flash").wait_for()
    assert inspector.is_visible()
    # `oops` did not compile: its record stops at the line NVRTC names
    assert [k.get_attribute("data-kernel") for k in inspector.locator(".tw-kernel").all()] == \
        ["double", "scale", "oops"]
    assert inspector.locator("section[data-kernel='oops'] .tw-stopped").inner_text().startswith("stopped at cell line")
    screenshot(page, "extension_notebook7")
    assert page_errors(page) == []
    page.close()
