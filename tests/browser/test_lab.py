"""Tutorials in a real JupyterLab: every cell runs and the views render and respond."""
import re

import numpy as np
import pytest

from tileworkbench.interp import Status
from tileworkbench.widgets.tile_space import STATUS_COLOURS

from ..notebooks.test_notebooks import overhanging_strips
from .conftest import (
    OFF_LABEL,
    TILE_SPACE_LANES,
    cell_outputs,
    hover_colour,
    open_and_run,
    page_errors,
    readout,
    screenshot,
    wait_for_views,
)

pytestmark = pytest.mark.browser


def test_profiling_tutorial_renders_the_sweep_explorers(browser, lab):
    page = open_and_run(browser, lab, "notebooks/05_profiling_tile_shapes.ipynb")
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


# Tutorial 01's arrays and tiles: `copy` moves a 6x10 array in 4x4 tiles on a 2x3 grid.
ARRAY, TILE = (6, 10), (4, 4)
PADDING = "svg > rect[fill-opacity]"               # a tile space's padding regions (edge tiles past the edge)


def lanes_by_fill(view) -> dict[str, int]:
    fills = view.locator(TILE_SPACE_LANES).evaluate_all("rects => rects.map(r => r.getAttribute('fill'))")
    return {f: fills.count(f) for f in set(fills)}


def hover_lane(view, lane: int) -> str:
    view.locator(TILE_SPACE_LANES).nth(lane).hover(position=OFF_LABEL)
    return readout(view)


def test_tile_spaces_tutorial_draws_its_tiles_and_reads_out_what_is_hovered(browser, lab):
    page = open_and_run(browser, lab, "notebooks/01_tile_spaces.ipynb")
    wait_for_views(page)
    assert page.locator(".jp-OutputArea-output:has-text('Traceback')").count() == 0
    x = np.arange(60, dtype=np.float32).reshape(ARRAY)
    inside = [n % t for n, t in zip(ARRAY, TILE)]                    # the ragged corner tile's part inside x

    # %%tilekernel --viz: the coverage, then the tile spaces of the load and the store
    viz = cell_outputs(page, '--args "x, y" --viz')
    assert viz.nth(0).locator("svg rect.cell").count() > 0 and viz.nth(0).locator("input[type=range]").count() == 2
    for k in (1, 2):
        assert viz.nth(k).locator(TILE_SPACE_LANES).count() == TILE[0] * TILE[1]
        assert viz.nth(k).locator(PADDING).count() == overhanging_strips(ARRAY, TILE)

    # order="F": the (1, 4) tile's lanes walk down a column of `a`
    column = cell_outputs(page, '--args "a, row" --viz').nth(1).locator(TILE_SPACE_LANES)
    boxes = [column.nth(k).bounding_box() for k in range(column.count())]
    assert len(boxes) == 4 and len({b["x"] for b in boxes}) == 1
    assert [b["y"] for b in boxes] == sorted(b["y"] for b in boxes) and len({b["y"] for b in boxes}) == 4

    # the ragged corner, block (1, 2): a few lanes inside x, the rest padded (ZERO) or dropped by the store
    load = cell_outputs(page, 'TileSpaceView.from_trace(trace, op="load"')
    assert load.locator(TILE_SPACE_LANES).count() == TILE[0] * TILE[1]
    assert lanes_by_fill(load)[STATUS_COLOURS[Status.LOADED]] == inside[0] * inside[1]
    assert load.locator(PADDING).count() == overhanging_strips(ARRAY, TILE)
    store = lanes_by_fill(cell_outputs(page, 'TileSpaceView.from_trace(trace, op="store"'))
    assert store[STATUS_COLOURS[Status.STORED]] == inside[0] * inside[1]
    assert store[STATUS_COLOURS[Status.DROPPED]] == TILE[0] * TILE[1] - inside[0] * inside[1]

    # hovering a lane reads out its array coordinate, tile coordinate, lane and value
    corner = [n // t for n, t in zip(ARRAY, TILE)]                  # the tile (1, 2)
    r, c = corner[0] * TILE[0] + 1, corner[1] * TILE[1] + 1
    text = hover_lane(load, TILE[1] + 1)                            # lane (1, 1)
    assert f"x[{r}, {c}] = {x[r, c]:g}" in text and f"tile ({corner[0]}, {corner[1]}) lane (1, 1)" in text
    last = TILE[0] * TILE[1] - 1                                    # lane (3, 3), past both edges
    r, c = corner[0] * TILE[0] + TILE[0] - 1, corner[1] * TILE[1] + TILE[1] - 1
    text = hover_lane(load, last)
    assert f"x[{r}, {c}] (padding: reads 0)" in text and f"lane ({TILE[0] - 1}, {TILE[1] - 1})" in text

    # the slider explorer: a (4, 8) tile with order="F" covers 8 rows and 4 columns
    explorer = cell_outputs(page, "TileSpaceView(array_shape=(6, 10)")
    assert explorer.locator(TILE_SPACE_LANES).count() == 4 * 8
    assert explorer.locator(PADDING).count() == overhanging_strips(ARRAY, (8, 4))
    assert explorer.locator("input[type=range]").count() == 4

    # the block scrubber: a grid of (1, 3) blocks never writes rows 4 and 5 of y: hover a red cell
    coverage = cell_outputs(page, "CoverageView.from_trace(interpret(copy, (1, 3)")
    assert coverage.locator("input[type=range]").count() == 2 and coverage.locator("button").count() == 1
    for label, writers in (("hole", "0 block(s)"), ("written once", "1 block(s)")):
        text = hover_colour(coverage, label)
        r, c = (int(v) for v in re.match(r"y\[(\d+), ?(\d+)\]", text).groups())
        assert f"written by {writers}" in text and (r >= TILE[0]) == (writers == "0 block(s)")
        if writers == "1 block(s)":
            assert f"(0,{c // TILE[1]})" in text
    assert page_errors(page) == []

