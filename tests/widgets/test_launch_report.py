"""The launch report without a GPU: compiler resources, theoretical occupancy, work, and the untimed message."""
import dataclasses
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from tileworkbench.kernels import vector_add
from tileworkbench.profile.bench import DevicePeaks, Timing
from tileworkbench.profile.occupancy import LIMITERS
from tileworkbench.widgets.launch_report import (NO_ROOFLINE, UNTIMED_MESSAGE, CompileReport, LaunchReportView,
                                                 compile_report, launch_report_data, roofline_layout, text_width)

N, TILE = 4096, 256


def args(tile=TILE):
    a = np.arange(N, dtype=np.float32)
    return a, np.ones(N, np.float32), np.zeros(N, np.float32), tile


@pytest.fixture(scope="module")
def report():
    return compile_report(vector_add, (N // TILE,), args())


def test_compile_report_has_resources_occupancy_and_work(report):
    assert report.kernel == "vector_add"
    assert report.registers > 0
    assert report.occupancy.limiter in LIMITERS
    assert report.occupancy.blocks_per_sm > 0
    assert report.work.bytes == 3 * N * 4
    assert report.work.bytes_read == 2 * N * 4 and report.work.flops == N   # one add per element
    assert report.timing is None and report.driver_blocks_per_sm is None
    assert report.gbs is None and report.tflops is None


def test_data_of_an_untimed_report(report):
    d = launch_report_data(report)
    assert d["message"] == UNTIMED_MESSAGE and "timings need a GPU" in d["message"]
    assert d["timed"] is False and d["timing"] is None
    assert d["throughput"]["gbs"] is None and d["throughput"]["tflops"] is None
    assert d["resources"]["registers"] == report.registers
    assert d["resources"]["spill_stores"] == 0
    o = d["occupancy"]
    assert o["limiter"] == report.occupancy.limiter and o["blocks_per_sm"] == report.occupancy.blocks_per_sm
    assert o["warps_per_sm"] == report.occupancy.warps_per_sm and o["driver_blocks_per_sm"] is None
    assert set(d["curves"]) == {"threads", "registers", "shared"}
    for key, current in (("threads", report.threads), ("registers", report.registers),
                         ("shared", report.shared_bytes)):
        curve = d["curves"][key]
        assert curve["current"] == current and len(curve["values"]) == len(curve["occupancy"]) > 1
    assert d["work"]["bytes"] == 3 * N * 4 and d["work"]["intensity"] == pytest.approx(1 / 12)
    rl = d["roofline"]
    assert rl["point"]["y"] is None and rl["point"]["x"] == pytest.approx(1 / 12)
    assert rl["bandwidth_gbs"] > 0 and rl["compute_tflops"] > 0 and rl["peaks_source"] == "nominal"


def test_data_of_a_timed_report(report):
    timing = Timing(0.01, 0.009, 0.012, 100, 10, True)
    peaks = DevicePeaks("H100", "sm_90", 132, 1980.0, 3352.0, 1070.0, 67.0)
    fields = {f: getattr(report, f) for f in CompileReport.__dataclass_fields__}
    timed = CompileReport(**{**fields, "timing": timing, "peaks": peaks,
                             "driver_blocks_per_sm": report.occupancy.blocks_per_sm})
    d = launch_report_data(timed)
    assert d["timed"] and d["message"] == "" and d["timing"]["median_ms"] == 0.01
    assert d["throughput"]["gbs"] == pytest.approx(3 * N * 4 / 0.01 / 1e6)
    assert d["throughput"]["gbs_fraction"] == pytest.approx(d["throughput"]["gbs"] / 3352.0)
    assert d["occupancy"]["agrees"] is True and d["roofline"]["peaks_source"] == "device"
    ET.fromstring(LaunchReportView(timed).to_svg())


def test_view_measures_without_a_gpu_and_renders_svg(report):
    view = LaunchReportView(report)
    assert view.data["kernel"] == "vector_add"
    root = ET.fromstring(view.to_svg())
    assert root.tag.endswith("svg")
    text = " ".join(t.text or "" for t in root.iter() if t.tag.endswith("text"))
    assert "timings need a GPU" in text and "limited by" in text
    measured = LaunchReportView.measure(vector_add, (N // TILE,), args())
    assert measured.data["resources"]["registers"] > 0
    if measured.data["timed"] is False:
        assert measured.data["message"]
    assert "image/svg+xml" in measured._repr_mimebundle_()[0]


def label_boxes(layout):
    boxes = []
    for t in layout["labels"]:
        w = text_width(t["text"], 10)
        left = t["x"] - w if t["anchor"] == "end" else t["x"]
        boxes.append((left, t["y"] - 10, left + w, t["y"] + 2))
    return boxes


@pytest.mark.parametrize("intensity, tflops", [(0.05, None), (31.0, None), (2000.0, None), (31.0, 400.0),
                                               (0.5, 0.2), (300.0, 900.0)])
def test_roofline_labels_stay_inside_the_plot_and_never_overlap(intensity, tflops):
    rl = {"bandwidth_gbs": 3350.0, "roofs": [{"name": "tensor core 16-bit", "tflops": 989.0},
                                             {"name": "FP32", "tflops": 67.0}],
          "point": {"x": intensity, "y": tflops}, "peaks_source": "nominal"}
    layout = roofline_layout(rl)
    boxes = label_boxes(layout)
    assert len(boxes) == 4 and layout["labels"][-1]["text"].startswith(f"{intensity:.3g} flop/B")
    assert all(0 <= a and c <= layout["width"] and 0 <= b and d <= layout["height"] for a, b, c, d in boxes)
    for i, p in enumerate(boxes):
        for q in boxes[i + 1:]:
            assert not (p[0] < q[2] and q[0] < p[2] and p[1] < q[3] and q[1] < p[3]), (p, q)
    assert (layout["dot"] is None) == (tflops is None)


def test_a_kernel_without_arithmetic_gets_a_note_instead_of_a_roofline(report):
    zero = dataclasses.replace(report, work=dataclasses.replace(report.work, flops=0))
    d = launch_report_data(zero)
    assert d["roofline"] is None and d["no_roofline"] == NO_ROOFLINE
    assert NO_ROOFLINE.split(":")[0] in LaunchReportView(zero).to_svg()
