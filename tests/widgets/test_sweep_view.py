"""The sweep explorer draws the sweep's data: heatmap cells, the best outlined, failures kept."""
import shutil
import subprocess
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from tileworkbench.kernels import transpose
from tileworkbench.profile.sweep import sweep
from tileworkbench.widgets._base import static
from tileworkbench.widgets.sweep import SweepView, sweep_data

pytest.importorskip("cuda.bindings.nvrtc", reason="needs NVRTC: pip install cuda-bindings nvidia-cuda-nvrtc")

X = np.zeros((128, 128), np.float32)


@pytest.fixture(scope="module")
def view():
    result = sweep(transpose, grid_fn=lambda c: (128 // c["T"], 128 // c["T"]), args_fn=lambda c: (X, X.copy(), c["T"]),
                   space={"T": [16, 32, 64], "W": [1, 2]}, arch="sm_90")
    return SweepView(result)


def test_data_lists_every_configuration_and_marks_the_best(view):
    data = sweep_data(view.result)
    assert len(data["rows"]) == 6 and data["metric"] == "occupancy"
    assert data["rows"][data["best"]]["status"] == "ok"
    assert "timings need a GPU" in data["note"]


def test_svg_has_a_cell_per_configuration_and_outlines_the_best(view):
    root = ET.fromstring(view.to_svg())
    cells = [e for e in root.iter("{http://www.w3.org/2000/svg}rect") if e.get("class") == "sweep-cell"]
    assert len(cells) == 6
    assert sum(1 for c in cells if c.get("stroke") == "#d62728") == 1


def test_widget_state_holds_the_data(view):
    state = view.get_state()
    assert state["x"] == "T" and state["y"] == "W"


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node to check the JavaScript")
def test_javascript_parses(tmp_path):
    copy = tmp_path / "sweep.mjs"
    copy.write_text(static("sweep.js").read_text())
    assert subprocess.run(["node", "--check", str(copy)], capture_output=True).returncode == 0
