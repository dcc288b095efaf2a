"""A real JupyterLab in headless Debian chromium, driven by Playwright (marker `browser`).

The server runs on 127.0.0.1 with a token and throwaway settings/workspace/runtime folders; the
browser is the system chromium (no browser download). Screenshots land in tests/browser/artifacts/.
"""
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).parents[2]
ARTIFACTS = Path(__file__).parent / "artifacts"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def _missing() -> str | None:
    if not os.path.exists(CHROMIUM):
        return "needs Debian's chromium (apt-get install chromium)"
    try:
        import jupyterlab  # noqa: F401
        import playwright  # noqa: F401
    except ImportError as e:
        return f"needs JupyterLab and Playwright ({e})"
    return None


class Lab(NamedTuple):
    base: str      # http://127.0.0.1:PORT
    token: str
    root: Path     # the server's root folder: a copy of notebooks/ under notebooks/


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _lab_version() -> tuple[int, int]:
    import jupyterlab
    return tuple(int(part) for part in jupyterlab.__version__.split(".")[:2])


def _serve(tmp: Path, app: str):
    """Start `python -m <app>` (jupyterlab or notebook) on a free port with a token and throwaway
    settings, workspace and runtime folders, serving a copy of notebooks/; yield a Lab."""
    settings = tmp / "settings" / "@jupyterlab"
    (settings / "apputils-extension").mkdir(parents=True)
    if app == "jupyterlab":  # no news toast over the page (Notebook 7 has no such setting)
        (settings / "apputils-extension" / "notification.jupyterlab-settings").write_text(
            json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    if _lab_version() < (4, 3):
        # JupyterLab 4.2's default windowing ("full") detaches the cells outside the viewport;
        # "defer" attaches every cell, as 4.3+'s default does, so that the same locators find them
        (settings / "notebook-extension").mkdir()
        (settings / "notebook-extension" / "tracker.jupyterlab-settings").write_text(
            json.dumps({"windowingMode": "defer"}))
    served = tmp / "root"  # a copy: the front end autosaves executed notebooks
    shutil.copytree(ROOT / "notebooks", served / "notebooks")
    port, token = _free_port(), secrets.token_hex(16)
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp / "runtime"), JUPYTER_CONFIG_DIR=str(tmp / "config"))
    app_class = {"jupyterlab": "LabApp", "notebook": "JupyterNotebookApp"}[app]
    with open(tmp / "server.log", "w") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", app, "--no-browser", "--allow-root", "--ServerApp.ip=127.0.0.1",
             f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
             f"--ServerApp.root_dir={served}", f"--{app_class}.user_settings_dir={tmp / 'settings'}",
             f"--{app_class}.workspaces_dir={tmp / 'workspaces'}", f"--{app_class}.expose_app_in_browser=True"],
            env=env, stdout=subprocess.DEVNULL, stderr=log)
        base = f"http://127.0.0.1:{port}"
        for _ in range(120):
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=1)
                break
            except OSError:
                time.sleep(0.5)
        else:
            server.terminate()
            pytest.fail(f"{app} did not start: " + (tmp / "server.log").read_text()[-2000:])
        yield Lab(base, token, served)
        server.terminate()
        server.wait(10)


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    reason = _missing()
    if reason:
        pytest.skip(reason)
    yield from _serve(tmp_path_factory.mktemp("lab"), "jupyterlab")


@pytest.fixture(scope="session")
def notebook7(tmp_path_factory):
    reason = _missing()
    if reason:
        pytest.skip(reason)
    pytest.importorskip("notebook", minversion="7", reason="needs Notebook 7 (pip install 'notebook>=7')")
    yield from _serve(tmp_path_factory.mktemp("notebook7"), "notebook")


@pytest.fixture(scope="session")
def browser():
    reason = _missing()
    if reason:
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-dev-shm-usage"])
        yield b
        b.close()


# Errors the front ends throw by themselves, with or without this extension: (what, test on the stack).
# A stack frame in one of the front ends' own bundles only, so that nothing of ours can hide behind it.
FRONT_END_ERRORS = [
    ("Notebook 7.6 loading its own settings",
     lambda stack: "reading 'schema'" in stack and "/static/notebook/notebook_core." in stack),
    ("Notebook 7.2's checkpoint indicator on a notebook that has no checkpoint yet",
     lambda stack: "reading 'last_modified'" in stack and "/static/notebook/" in stack),
    ("JupyterLab 4.2's table of contents when a cell enters the viewport",
     lambda stack: "reading 'type'" in stack and "_onCellInViewportChanged" in stack
     and "/static/lab/jlab_core." in stack),
]


def page_errors(page) -> list[str]:
    """The page's uncaught errors, less the front ends' own known ones (FRONT_END_ERRORS)."""
    return [e for e in page.errors
            if "labextensions/" in e  # a stack through any extension's code always counts
            or not any(known(e) for _, known in FRONT_END_ERRORS)]


def open_notebook(browser, lab: Lab, path: str, timeout_ms: int = 120_000, notebook7: bool = False):
    """Open a notebook (`path` under the server's root) in JupyterLab (or Notebook 7, served by the
    `notebook7` fixture), without running anything; return the page once its kernel is up.
    `page.errors` collects uncaught page errors (read them through `page_errors`)."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.errors = []
    page.on("pageerror", lambda error: page.errors.append(error.stack or str(error)))
    # a workspace of its own, so that the page does not also restore the notebooks of earlier pages
    if notebook7:
        page.goto(f"{lab.base}/notebooks/{path}?token={lab.token}")
    else:
        page.goto(f"{lab.base}/lab/workspaces/{secrets.token_hex(4)}/tree/{path}?token={lab.token}")
    page.wait_for_function("window.jupyterapp && window.jupyterapp.shell.currentWidget && "
                           "window.jupyterapp.shell.currentWidget.sessionContext && "
                           "window.jupyterapp.shell.currentWidget.sessionContext.session && "
                           "window.jupyterapp.shell.currentWidget.sessionContext.session.kernel", timeout=timeout_ms)
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=timeout_ms)
    return page


def run_cells(page, indices=None, timeout_ms: int = 120_000):
    """Run the current notebook's cells (all, or those at `indices`) one by one, in order, through the
    notebook's own run command, and wait until the kernel is idle and no cell is pending."""
    page.evaluate("""async (indices) => {
        const app = window.jupyterapp, panel = app.shell.currentWidget;
        await panel.sessionContext.ready;
        const cells = panel.content.widgets;
        for (const i of indices ?? cells.map((_, k) => k)) {
            panel.content.activeCellIndex = i;
            await app.commands.execute('notebook:run-cell');
        }
    }""", indices)
    page.wait_for_function("() => { const p = window.jupyterapp.shell.currentWidget;"
                           " return p.sessionContext.session.kernel.status === 'idle' &&"
                           " [...document.querySelectorAll('.jp-InputPrompt')].every(e => !e.textContent.includes('*')); }",
                           timeout=timeout_ms)


def open_and_run(browser, lab: Lab, path: str, timeout_ms: int = 120_000):
    """Open a notebook and run every cell in order; return the page once the kernel is idle."""
    page = open_notebook(browser, lab, path, timeout_ms)
    run_cells(page, timeout_ms=timeout_ms)
    return page


def wait_for_views(page, timeout_ms: int = 60_000):
    """Wait until every widget output has drawn something (an SVG, a canvas, text or a table)."""
    page.wait_for_function("""() => [...document.querySelectorAll('.jp-OutputArea-output.lm-Panel')]
        .every((output) => output.querySelector('svg, canvas, pre, table'))""", timeout=timeout_ms)


PICTURE = ".tileworkbench-picture"   # a view's static picture, shown before its live widget


def cell_outputs(page, source: str, pictures: bool = False):
    """The outputs of the code cell whose source contains `source` (exactly one such cell): those
    that are not a view's static picture, or (pictures=True) only those."""
    cells = page.locator(".jp-CodeCell").filter(has=page.locator(".jp-InputArea", has_text=source))
    assert cells.count() == 1, f"{cells.count()} cells contain {source!r}"
    outputs = cells.locator(".jp-OutputArea-output")
    return outputs.filter(has=page.locator(PICTURE)) if pictures else \
        outputs.filter(has_not=page.locator(PICTURE))


# ---- the views' pictures: SVG drawn in Python; a tile space's lanes and every cell are rects ----------

TILE_SPACE_LANES = "svg > g[stroke-width='0.5'] > rect"     # in tile order
OFF_LABEL = {"x": 3, "y": 3}                                  # a point of a cell away from its number


def readout(view) -> str:
    """The hover read-out line under a view's picture."""
    return view.locator("svg + div").last.inner_text()


def hover_colour(view, legend_label: str) -> str:
    """Hover a cell of the view's picture filled in the colour of its legend entry `legend_label`
    (a middle one of them); return the read-out."""
    swatch = view.locator("svg rect.legend + text", has_text=legend_label).first
    colour = swatch.evaluate("text => text.previousElementSibling.getAttribute('fill')")
    cells = view.locator(f"svg rect.cell[fill='{colour}']")
    assert cells.count(), f"no cell of {legend_label!r} ({colour}) in the picture"
    cells.nth(cells.count() // 2).hover()
    return readout(view)


def screenshot(page, name: str):
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def distinct_colours(page, png: bytes, cap: int = 64) -> int:
    """How many distinct colours a PNG has (counting stops at `cap`), decoded by the browser."""
    import base64
    return page.evaluate("""async ([b64, cap]) => {
        const bytes = Uint8Array.from(atob(b64), (ch) => ch.charCodeAt(0));
        const image = await createImageBitmap(new Blob([bytes], {type: "image/png"}));
        const canvas = new OffscreenCanvas(image.width, image.height), ctx = canvas.getContext("2d");
        ctx.drawImage(image, 0, 0);
        const px = new Uint32Array(ctx.getImageData(0, 0, image.width, image.height).data.buffer), seen = new Set();
        for (let i = 0; i < px.length && seen.size < cap; i++) seen.add(px[i]);
        return seen.size;
    }""", [base64.b64encode(png).decode(), cap])
