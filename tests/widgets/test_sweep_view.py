"""The sweep explorer draws the sweep's data: heatmap cells, the best outlined, failures kept."""
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from tileworkbench.kernels import transpose
from tileworkbench.profile.sweep import sweep
from tileworkbench.runtime import device
from tileworkbench.widgets.svg import DARK_INK, LIGHT_INK, ink_of
from tileworkbench.widgets.sweep import SweepView, sweep_data, text_width

pytest.importorskip("cuda.bindings.nvrtc", reason="needs NVRTC: pip install cuda-bindings nvidia-cuda-nvrtc")

X = np.zeros((128, 128), np.float32)
SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def view():
    with pytest.MonkeyPatch.context() as mp:   # compile-time results, the same on a machine with a GPU
        mp.setattr(device, "unavailable_reason", lambda: "no CUDA device found")
        result = sweep(transpose, grid_fn=lambda c: (128 // c["T"], 128 // c["T"]),
                       args_fn=lambda c: (X, X.copy(), c["T"]), space={"T": [16, 32, 64], "W": [1, 2]}, arch="sm_90")
    return SweepView(result)


def test_data_lists_every_configuration_and_marks_the_best(view):
    data = sweep_data(view.result)
    assert len(data["rows"]) == 6 and data["metric"] == "occupancy"
    assert data["rows"][data["best"]]["status"] == "ok"
    assert "timings need a GPU" in data["note"]


def test_without_a_gpu_the_table_has_no_timing_columns_and_the_heatmap_a_colour_scale_of_occupancy(view):
    data = sweep_data(view.result)
    assert not {"time_ms", "gbs", "tflops", "device", "host"} & set(data["columns"])
    assert all(r["occupancy"] is not None and r["registers"] for r in data["rows"])
    texts = [e.text for e in ET.fromstring(view.to_svg()).iter(f"{SVG}text")]
    assert any(t.startswith("colour scale") and "occupancy" in t for t in texts)


def test_svg_has_a_cell_per_configuration_and_outlines_the_best(view):
    root = ET.fromstring(view.to_svg())
    cells = [e for e in root.iter(f"{SVG}rect") if e.get("class") == "sweep-cell"]
    assert len(cells) == 6
    assert sum(1 for c in cells if c.get("stroke") == "#d62728") == 1


def test_cell_labels_are_white_on_dark_cells_and_dark_on_light_ones(view):
    root = ET.fromstring(view.to_svg())
    cells = [e for e in root.iter(f"{SVG}rect") if e.get("class") == "sweep-cell"]
    labels = [e for e in root.iter(f"{SVG}text") if e.get("text-anchor") == "middle" and e.get("fill")]
    assert len(labels) == len(cells) == 6
    for cell, label in zip(cells, labels):
        assert label.get("fill") == ink_of(cell.get("fill"))
    assert ink_of("#253494") == LIGHT_INK and ink_of("#ffffcc") == DARK_INK   # the two ends of the colour map


def test_the_note_and_every_failure_reason_fit_inside_the_picture(monkeypatch):
    monkeypatch.setattr(device, "unavailable_reason", lambda: "no CUDA device found")
    result = sweep(transpose, grid_fn=lambda c: (128 // c["T"], 128 // c["T"]), args_fn=lambda c: (X, X.copy(), c["T"]),
                   space={"T": [16, 24, 48]}, arch="sm_90")
    root = ET.fromstring(SweepView(result).to_svg())
    width, height = float(root.get("width")), float(root.get("height"))
    lines = [e for e in root.iter(f"{SVG}text") if e.get("x") == "8" and e.get("fill") in ("#666", "#b00")]
    text = " ".join(e.text for e in lines)
    assert "timings need a GPU" in text and "T=24: tile error" in text and "T=48: tile error" in text
    for e in lines:
        assert 8 + text_width(e.text, 12) <= width and float(e.get("y")) <= height


def test_widget_state_holds_the_data(view):
    state = view.get_state()
    assert state["x"] == "T" and state["y"] == "W"


def test_a_sweep_under_way_draws_its_pending_rows_without_listing_them_as_failures(monkeypatch):
    monkeypatch.setattr(device, "unavailable_reason", lambda: "no CUDA device found")
    drawn = []

    def on_row(result, index):
        if index == 0:
            drawn.append((sweep_data(result), SweepView(result).to_svg()))
    sweep(transpose, grid_fn=lambda c: (128 // c["T"], 128 // c["T"]), args_fn=lambda c: (X, X.copy(), c["T"]),
          space={"T": [16, 24]}, arch="sm_90", workers=1, on_row=on_row)
    (data, svg), = drawn
    assert [r["status"] for r in data["rows"]] == ["ok", "pending"] and data["best"] == 0
    assert 'fill="#b00"' not in svg      # no failure listed under the heatmap
    assert '{"T": 24}: pending' in svg   # the cell says it is still to come


def test_a_timed_sweep_shows_the_gpu_of_each_row():
    from tests.profile.fakes import FakeGpu
    result = sweep(transpose, grid_fn=lambda c: (128 // c["T"], 128 // c["T"]),
                   args_fn=lambda c: (X, X.copy(), c["T"]), space={"T": [32, 64]}, workers=1, gpu=FakeGpu())
    data = sweep_data(result)
    assert data["device"] == "Fake GPU" and data["columns"][-3:] == ["device", "host", "reason"]
    assert [r["device"] for r in data["rows"]] == ["GPU 0: Fake GPU"] * 2 and data["metric"] == "time_ms"
