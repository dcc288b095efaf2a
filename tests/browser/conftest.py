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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    reason = _missing()
    if reason:
        pytest.skip(reason)
    tmp = tmp_path_factory.mktemp("lab")
    settings = tmp / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false",
                                                                          "checkForUpdates": False}))
    served = tmp / "root"  # a copy: JupyterLab autosaves executed notebooks
    shutil.copytree(ROOT / "notebooks", served / "notebooks")
    port, token = _free_port(), secrets.token_hex(16)
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp / "runtime"), JUPYTER_CONFIG_DIR=str(tmp / "config"))
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", "--ServerApp.ip=127.0.0.1",
         f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
         f"--ServerApp.root_dir={served}", f"--LabApp.user_settings_dir={tmp / 'settings'}",
         f"--LabApp.workspaces_dir={tmp / 'workspaces'}", "--LabApp.expose_app_in_browser=True"],
        env=env, stdout=subprocess.DEVNULL, stderr=open(tmp / "server.log", "w"))
    base = f"http://127.0.0.1:{port}"
    for _ in range(120):
        try:
            urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=1)
            break
        except OSError:
            time.sleep(0.5)
    else:
        server.terminate()
        pytest.fail("JupyterLab did not start: " + (tmp / "server.log").read_text()[-2000:])
    yield base, token
    server.terminate()
    server.wait(10)


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


def open_and_run(browser, lab, notebook: str, timeout_ms: int = 120_000):
    """Open a notebook in JupyterLab, run every cell in order, return the page."""
    base, token = lab
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{base}/lab/tree/notebooks/{notebook}?token={token}")
    page.wait_for_function("window.jupyterapp && window.jupyterapp.shell.currentWidget && "
                           "window.jupyterapp.shell.currentWidget.sessionContext && "
                           "window.jupyterapp.shell.currentWidget.sessionContext.session && "
                           "window.jupyterapp.shell.currentWidget.sessionContext.session.kernel", timeout=timeout_ms)
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=timeout_ms)
    page.evaluate("""async () => {
        const app = window.jupyterapp, panel = app.shell.currentWidget;
        await panel.sessionContext.ready;
        const cells = panel.content.widgets;
        for (let i = 0; i < cells.length; i++) {
            panel.content.activeCellIndex = i;
            await app.commands.execute('notebook:run-cell');
        }
    }""")
    page.wait_for_function("() => { const p = window.jupyterapp.shell.currentWidget;"
                           " return p.sessionContext.session.kernel.status === 'idle' &&"
                           " [...document.querySelectorAll('.jp-InputPrompt')].every(e => !e.textContent.includes('*')); }",
                           timeout=timeout_ms)
    return page


def screenshot(page, name: str):
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
