"""Each quantity written one way in every view, record and message: occupancy rounded by one
formatter (profile.percent), block coordinates as many as the grid has axes (arguments.block_text)."""
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

import tileworkbench.tile as ct
from tileworkbench.arguments import block_text
from tileworkbench.errors import TileOutOfBoundsError
from tileworkbench.magic.inspector import summary
from tileworkbench.profile import percent
from tileworkbench.profile.sweep import SweepResult, SweepRow
from tileworkbench.widgets.coverage import CoverageView
from tileworkbench.widgets.index_map import IndexMapView
from tileworkbench.widgets.stepper import StepperView
from tileworkbench.widgets.sweep import SweepView, sweep_data

ROOT = Path(__file__).resolve().parents[2]
SVG = "{http://www.w3.org/2000/svg}"


def test_an_occupancy_is_a_whole_percent_with_halves_rounded_up():
    assert [percent(f) for f in (0.625, 0.375, 0.5, 0.0, 1.0, 0.6249)] == ["63%", "38%", "50%", "0%", "100%", "62%"]


def test_the_heatmap_the_table_the_best_line_and_the_record_write_0_625_alike():
    rows = [SweepRow({"T": 16}, "ok", threads=128, registers=40, shared_bytes=0, occupancy=0.625, limiter="registers"),
            SweepRow({"T": 32}, "ok", threads=128, registers=64, shared_bytes=0, occupancy=0.375, limiter="registers")]
    result = SweepResult("k", "sm_90", {"T": [16, 32]}, rows)
    heatmap = [t.text for t in ET.fromstring(SweepView(result).to_svg()).iter(f"{SVG}text")]
    assert "63%" in heatmap and "62%" not in heatmap
    assert [r["occupancy_text"] for r in sweep_data(result)["rows"]] == ["63%", "38%"]
    record = {"lang": "python", "kernel": "k", "specialization_count": 1, "stopped": None, "sweep": None,
              "timing": None, "arch": "sm_90",
              "specializations": [{"threads": 128, "registers": 40, "shared_bytes": 0, "occupancy": 0.625,
                                   "occupancy_text": percent(0.625), "limiter": "registers"}]}
    assert summary(record).endswith("occupancy 63% (registers)")


def test_the_scripts_and_the_side_panel_never_round_an_occupancy_themselves():
    sources = [*(ROOT / "tileworkbench" / "widgets" / "static").glob("*.js"), *(ROOT / "labextension" / "src").glob("*.ts")]
    rounding = re.compile(r"occupancy[^\n]*(Math\.round|toFixed|\* ?100)")
    assert [str(p.name) for p in sources if rounding.search(p.read_text())] == []


@ct.kernel
def copy_rows(x, y):
    ct.store(y, (ct.bid(0),), ct.gather(x, ct.bid(0) * 4 + ct.arange(4, dtype=ct.int32)))


@ct.kernel
def past_the_end(x):
    ct.store(x, (ct.bid(0),), ct.full((4,), 1, x.dtype), check_bounds=False)


def test_a_block_is_written_with_as_many_coordinates_as_the_grid_has_axes():
    assert [block_text(b, g) for b, g in [((0, 0, 0), (4, 1, 1)), ((2,), (4, 3, 1)), ((1, 2, 0), (2, 3, 1))]] == \
        ["block (0,)", "block (2, 0)", "block (1, 2)"]


def test_views_and_errors_name_a_block_of_a_one_axis_grid_alike():
    x, y = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
    trace = ct.interpret(copy_rows, (2,), (x, y), values=True)
    coverage = CoverageView.from_trace(trace)
    coverage.block = [1, 0, 0]
    assert "block (1,)" in [t.text for t in ET.fromstring(coverage.to_svg()).iter(f"{SVG}text")]
    assert StepperView.from_trace(trace, block=(1,)).to_text().startswith("StepperView(copy_rows, block (1,), op 1")
    index_map = IndexMapView.from_trace(trace, "gather", block=(1,))
    assert any(str(t.get("text", "")).startswith("block (1,): 4 lanes") for t in index_map.data["texts"])
    with pytest.raises(TileOutOfBoundsError, match=r"goes outside the array: block \(2,\) touches"):
        ct.interpret(past_the_end, (3,), (np.zeros(8, np.float32),))
