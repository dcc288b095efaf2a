"""Tutorials in a real JupyterLab: every cell runs and the views render and respond."""
import pytest

from .conftest import cell_outputs, open_and_run, screenshot

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
LANES = "svg > g[stroke-width='0.5'] > rect"       # a tile space view's lanes, in tile order
PADDING = "svg > rect[fill-opacity]"               # its padding regions (edge tiles past the array's edge)


def overhanging_strips(array_shape, box) -> int:
    """Padding regions a tile space view draws: one strip per edge tile per axis it overhangs."""
    tiles = [-(-n // t) for n, t in zip(array_shape, box)]
    return (array_shape[0] % box[0] > 0) * tiles[1] + (array_shape[1] % box[1] > 0) * tiles[0]


def lanes_by_fill(view) -> dict[str, int]:
    fills = view.locator(LANES).evaluate_all("rects => rects.map(r => r.getAttribute('fill'))")
    return {f: fills.count(f) for f in set(fills)}


def hover_readout(view, lane: int) -> str:
    view.locator(LANES).nth(lane).hover(position={"x": 3, "y": 3})   # off the lane's number
    return view.locator("svg + div").inner_text()


def test_tile_spaces_tutorial_draws_its_tiles_and_reads_out_what_is_hovered(browser, lab):
    import numpy as np

    from tileworkbench.interp import Status
    from tileworkbench.widgets.tile_space import STATUS_COLOURS

    page = open_and_run(browser, lab, "notebooks/01_tile_spaces.ipynb")
    page.wait_for_function("document.querySelectorAll('.jp-OutputArea-output svg').length >= 7", timeout=60_000)
    assert page.locator(".jp-OutputArea-output:has-text('Traceback')").count() == 0
    x = np.arange(60, dtype=np.float32).reshape(ARRAY)
    inside = [n - (n // t) * t for n, t in zip(ARRAY, TILE)]       # the ragged corner tile's part inside x

    # %%tilekernel --viz: the coverage (a canvas), then the tile spaces of the load and the store
    viz = cell_outputs(page, '--args "x, y" --viz')
    assert viz.locator("canvas").count() == 1 and viz.locator("svg").count() == 2
    for k in (1, 2):
        assert viz.nth(k).locator(LANES).count() == TILE[0] * TILE[1]
        assert viz.nth(k).locator(PADDING).count() == overhanging_strips(ARRAY, TILE)

    # order="F": the (1, 4) tile's lanes walk down a column of `a`
    column = cell_outputs(page, '--args "a, row" --viz').nth(1).locator(LANES)
    boxes = [column.nth(k).bounding_box() for k in range(column.count())]
    assert len(boxes) == 4 and len({b["x"] for b in boxes}) == 1
    assert [b["y"] for b in boxes] == sorted(b["y"] for b in boxes) and len({b["y"] for b in boxes}) == 4

    # the ragged corner, block (1, 2): a few lanes inside x, the rest padded (ZERO) or dropped by the store
    load = cell_outputs(page, 'TileSpaceView.from_trace(trace, op="load"')
    assert load.locator(LANES).count() == TILE[0] * TILE[1]
    assert lanes_by_fill(load)[STATUS_COLOURS[Status.LOADED]] == inside[0] * inside[1]
    assert load.locator(PADDING).count() == overhanging_strips(ARRAY, TILE)
    store = lanes_by_fill(cell_outputs(page, 'TileSpaceView.from_trace(trace, op="store"'))
    assert store[STATUS_COLOURS[Status.STORED]] == inside[0] * inside[1]
    assert store[STATUS_COLOURS[Status.DROPPED]] == TILE[0] * TILE[1] - inside[0] * inside[1]

    # hovering a lane reads out its array coordinate, tile coordinate, lane and value
    corner = [n // t for n, t in zip(ARRAY, TILE)]                  # the tile (1, 2)
    r, c = corner[0] * TILE[0] + 1, corner[1] * TILE[1] + 1
    text = hover_readout(load, TILE[1] + 1)                          # lane (1, 1)
    assert f"x[{r}, {c}] = {x[r, c]:g}" in text and f"tile ({corner[0]}, {corner[1]}) lane (1, 1)" in text
    last = TILE[0] * TILE[1] - 1                                      # lane (3, 3), past both edges
    r, c = corner[0] * TILE[0] + TILE[0] - 1, corner[1] * TILE[1] + TILE[1] - 1
    text = hover_readout(load, last)
    assert f"x[{r}, {c}] (padding: reads 0)" in text and f"lane ({TILE[0] - 1}, {TILE[1] - 1})" in text

    # the slider explorer: a (4, 8) tile with order="F" covers 8 rows and 4 columns
    explorer = cell_outputs(page, "TileSpaceView(array_shape=(6, 10)")
    assert explorer.locator(LANES).count() == 4 * 8
    assert explorer.locator(PADDING).count() == overhanging_strips(ARRAY, (8, 4))
    assert explorer.locator("input[type=range]").count() == 4

    # the block scrubber: a grid of (1, 3) blocks never writes rows 4 and 5 of y: hover a red cell
    coverage = cell_outputs(page, "CoverageView.from_trace(run(copy, (1, 3)")
    assert coverage.locator("input[type=range]").count() == 2 and coverage.locator("button").count() == 1
    for label, writers in (("hole", "0 block(s)"), ("written once", "1 block(s)")):
        r, c, readout = hover_coverage(coverage, label)
        assert f"written by {writers}" in readout
        assert (r >= TILE[0]) == (writers == "0 block(s)")
        if writers == "1 block(s)":
            assert f"(0,{c // TILE[1]})" in readout
    assert not page.errors


def hover_coverage(view, legend_label: str):
    """Hover a canvas pixel painted in the colour of the legend's `legend_label`; the element and the
    read-out."""
    import re
    swatch = view.locator("span", has_text=legend_label).locator("span").first
    colour = [int(v) for v in re.findall(r"\d+", swatch.evaluate("e => getComputedStyle(e).backgroundColor"))[:3]]
    canvas = view.locator("canvas")
    at = canvas.evaluate("""(canvas, rgb) => {
        const dpr = canvas.width / canvas.clientWidth;
        const d = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
        const hits = [];
        for (let i = 0; i < d.length; i += 4) {
            if (d[i] === rgb[0] && d[i + 1] === rgb[1] && d[i + 2] === rgb[2]) hits.push(i / 4);
        }
        const p = hits[Math.floor(hits.length / 2)];
        return p === undefined ? null : [(p % canvas.width) / dpr, Math.floor(p / canvas.width) / dpr];
    }""", colour)
    assert at is not None, f"no pixel of {legend_label} {colour}"
    canvas.hover(position={"x": at[0], "y": at[1]})
    readout = view.locator("div").last.inner_text()
    m = re.match(r"y\[(\d+), ?(\d+)\]", readout)
    assert m, readout
    return int(m.group(1)), int(m.group(2)), readout
