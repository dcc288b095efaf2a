"""Screenshots of the views and the kernel inspector in a real JupyterLab (headless Debian chromium),
for the docs under docs/views/screenshots/:

    python docs/views/make_screenshots.py docs/views/screenshots            # <name>.png
    python docs/views/make_screenshots.py /tmp/shots --prefix before_       # before_<name>.png

It uses the browser tests' JupyterLab (tests/browser/conftest.py), runs one notebook of the
situations below, saves it, reopens it without a kernel and shoots each situation. Pillow, when
installed, keeps each PNG small (a palette of 256 colours).
"""
import argparse
import contextlib
import sys
import tempfile
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

sys.path.insert(0, str(Path(__file__).parents[2]))
from tests.browser.conftest import _serve, open_notebook, run_cells  # noqa: E402

SETUP = '''\
%load_ext tileworkbench
import math
import numpy as np
import tileworkbench.tile as ct
from tileworkbench.tile import interpret
from tileworkbench.widgets.index_map import IndexMapView
a, b, c = np.arange(10, dtype=np.float32), np.ones(10, np.float32), np.zeros(10, np.float32)
x = np.arange(80, dtype=np.float32).reshape(8, 10)
rows, z = np.array([6, 0, 3, 7], np.int32), np.zeros((4, 8), np.float32)
m, mt = np.arange(64 * 64, dtype=np.float32).reshape(64, 64), np.zeros((64, 64), np.float32)
table, lanes = np.arange(48, dtype=np.float32), np.array([47, 3, 50, 12, 0, 33, -2, 20] * 2, np.int32)'''

# name -> the cell of the situation
CELLS = {
    "failed_compile": '''\
%%tilekernel --grid "(2,)" --args "a, b, c, 3"
def add(a, b, c, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(c, (i,), ct.load(a, (i,), (TILE,)) + ct.load(b, (i,), (TILE,)))''',
    "sweep": '''\
%%tilekernel --grid "(64 // TM, 64 // TN)" --args "m, mt, TM, TN" --sweep "TM=8,16,32 TN=8,16,32"
def transpose_tiles(x, y, TM: ct.Constant[int], TN: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    ct.store(y, (j, i), ct.transpose(ct.load(x, (i, j), (TM, TN))))''',
    "long_line_error": '''\
%%tilekernel --grid "(1,)" --args "a, b, c"
def long_line(a, b, c):
    t = ct.load(a, (0,), (8,))
    ct.store(c, (0,), ct.load(b, (0,), (8,)) * 2.0 + t * 3.0 + ct.exp(t) * 0.5 + ct.abs(t) - t * t * 0.25 + ct.maximum(t, 1.0) * t + math.sqrt(t))''',
    "one_character_error": '''\
%%tilekernel --grid "(1,)" --args "a, b, c"
def one_character(a, b, c):
    ct.store(c, (0,), ct.load(a, (0,), (8,)) + q)''',
    "viz_gather": '''\
%%tilekernel --grid "(1,)" --args "x, rows, z, 1" --viz
def pick_rows_gather(x, rows, z, start):
    r = ct.load(rows, (0,), (4,))
    cols = start + ct.arange(8, dtype=ct.int32)
    ct.store(z, (0, 0), ct.gather(x, (r[:, None], cols[None, :]), padding_value=0))''',
    "index_map": '''\
%%tilekernel
def gather16(table, lanes, out):
    ct.store(out, (0,), ct.gather(table, ct.load(lanes, (0,), (16,)), padding_value=-1.0))''',
    "index_map_view": '''\
IndexMapView.from_trace(interpret(gather16, (1,), (table, lanes, np.zeros(16, np.float32)), trace=True), op="gather",
                        values=table)''',
}
PAGE = {"width": 1400, "height": 2400}   # tall: a --viz cell's outputs in one view
NARROW = 900   # the page width of the narrow output's shot


def write_notebook(root: Path) -> str:
    cells = [new_code_cell(SETUP)] + [new_code_cell(source) for source in CELLS.values()]
    kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    (root / "shots").mkdir(exist_ok=True)
    nbformat.write(new_notebook(cells=cells, metadata={"kernelspec": kernelspec}), root / "shots" / "shots.ipynb")
    return "shots/shots.ipynb"


def cell(page, name: str):
    return page.locator(".jp-CodeCell").nth(1 + list(CELLS).index(name))


def open_inspector(page, kernel: str):
    if not page.locator("#tileworkbench-inspector").is_visible():
        page.locator(".jp-SideBar.jp-mod-right [data-id='tileworkbench-inspector']").click()
    section = page.locator(f"#tileworkbench-inspector section[data-kernel='{kernel}']")
    section.wait_for(state="visible")
    return section


def shoot(locator, path: Path) -> None:
    locator.scroll_into_view_if_needed()
    locator.screenshot(path=str(path), animations="disabled")
    with contextlib.suppress(ImportError):
        from PIL import Image
        Image.open(path).convert("RGB").quantize(256).save(path, optimize=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--prefix", default="")
    options = parser.parse_args()
    options.folder.mkdir(parents=True, exist_ok=True)

    def out(name):
        return options.folder / f"{options.prefix}{name}.png"

    from playwright.sync_api import sync_playwright

    from tests.browser.conftest import CHROMIUM
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        serving = _serve(Path(tmp), "jupyterlab")
        lab = next(serving)
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])
        try:
            shoot_all(browser, lab, out)
        finally:   # the server stops as the generator finishes
            browser.close()
            next(serving, None)


def shoot_all(browser, lab, out) -> None:
    """Run the notebook of CELLS, shoot each situation into out(name), then reopen it saved."""
    path = write_notebook(lab.root)
    page = open_notebook(browser, lab, path)
    page.set_viewport_size(PAGE)
    run_cells(page, timeout_ms=300_000)
    page.wait_for_timeout(1000)
    shoot(cell(page, "failed_compile").locator(".jp-Cell-outputWrapper"), out("record_failed_compile"))
    shoot(open_inspector(page, "add"), out("inspector_failed_compile"))
    shoot(open_inspector(page, "transpose_tiles"), out("inspector_after_sweep"))
    shoot(cell(page, "sweep").locator(".jp-OutputArea-output").filter(has=page.locator("select")),
          out("sweep_without_gpu"))
    page.locator(".jp-SideBar.jp-mod-right [data-id='tileworkbench-inspector']").click()   # closes it
    shoot(cell(page, "long_line_error"), out("error_long_line"))
    shoot(cell(page, "one_character_error").locator(".jp-InputArea"), out("error_one_character"))
    shoot(cell(page, "viz_gather").locator(".jp-Cell-outputWrapper"), out("viz_gather"))
    page.set_viewport_size({"width": NARROW, "height": PAGE["height"]})
    page.wait_for_timeout(500)
    shoot(cell(page, "index_map_view").locator(".jp-OutputArea-output").last, out("index_map_narrow"))
    page.evaluate("""async () => {
        const app = window.jupyterapp, panel = app.shell.currentWidget;
        await app.commands.execute('docmanager:save');
        await panel.sessionContext.shutdown();
    }""")
    page.close()
    reopened = open_notebook(browser, lab, path)
    reopened.set_viewport_size(PAGE)
    reopened.wait_for_timeout(2000)
    shoot(cell(reopened, "viz_gather").locator(".jp-Cell-outputWrapper"), out("reopened_viz_gather"))


if __name__ == "__main__":
    main()
