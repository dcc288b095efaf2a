"""Tutorials in a real JupyterLab: every cell runs and the views render and respond."""
import pytest

from .conftest import open_and_run, screenshot

pytestmark = pytest.mark.browser


def test_profiling_tutorial_renders_the_sweep_explorers(browser, lab):
    page = open_and_run(browser, lab, "05_profiling_tile_shapes.ipynb")
    page.wait_for_selector(".sweep-cell", timeout=60_000)
    assert page.locator(".sweep-cell").count() == 4 + 9
    assert page.locator(".jp-OutputArea-output:has-text('Traceback')").count() == 0
    # sorting the table by a column header reorders its rows
    header = page.locator(".twb-sweep-table th", has_text="registers").first
    header.click()
    assert "▲" in header.inner_text()
    cell = page.locator(".sweep-cell").first
    cell.hover()
    assert '"T":16' in cell.locator("title").text_content().replace(" ", "")
    screenshot(page, "05_profiling_tile_shapes")
