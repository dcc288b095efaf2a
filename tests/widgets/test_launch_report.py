"""The launch report without a GPU: compiler resources, theoretical occupancy, work, and the untimed message."""
import dataclasses
import json
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from tileworkbench.kernels import transpose, vector_add
from tileworkbench.profile.access import analyze
from tileworkbench.profile import DevicePeaks, Timing
from tileworkbench.profile.ncu import NcuMetrics
from tileworkbench.profile.occupancy import LIMITERS
from tileworkbench.widgets import launch_report
from tileworkbench.widgets.launch_report import (MAX_MODELLED_ELEMENTS, NO_ROOFLINE, UNTIMED_MESSAGE,
                                                 LaunchReportView, compile_report, launch_report_data,
                                                 modelled_access, report_text, roofline_layout, text_width)

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
    timed = dataclasses.replace(report, timing=timing, peaks=peaks, driver_blocks_per_sm=report.occupancy.blocks_per_sm)
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


# ---- memory access, modelled on the interpreter --------------------------------------------------

T = 64


def transpose_args():
    x = np.arange(128 * 128, dtype=np.float32).reshape(128, 128)
    return x, np.zeros_like(x), T


def test_work_counts_the_elements_the_memory_ops_move(report):
    assert report.work.elements == 3 * N   # two loads and a store of N elements: the lanes a trace records


def test_modelled_access_gives_the_models_numbers_per_op_and_leaves_the_arrays_alone():
    args = transpose_args()
    expected = analyze(transpose, (2, 2), tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args))
    report = compile_report(transpose, (2, 2), args)
    a = modelled_access(transpose, (2, 2), args, "sm_90", report.work)
    assert not args[1].any()   # the interpreter ran on copies
    assert [(o["line"], o["op"], o["array"]) for o in a["ops"]] == [(g.line, g.op, g.array)
                                                                   for g in expected.global_ops]
    assert [o["sectors_per_request"] for o in a["ops"]] == [g.sectors_per_request for g in expected.global_ops]
    assert a["bytes_moved"] == 2 * 128 * 128 * 4 == sum(g.bytes_moved for g in expected.global_ops)
    summary = expected.summary()
    assert a["shared"]["conflicts"] == summary["shared_bank_conflicts"] > 0
    assert a["shared"]["wavefronts"] == summary["shared_wavefronts"]
    worst = max((s for s in expected.shared_ops if s.conflicts), key=lambda s: s.conflicts * s.executions)
    assert a["shared"]["worst"] == {"line": worst.line, "op": worst.op, "phase": worst.phase, "ways": worst.ways}
    assert a["l2"] == {"hit_rate": expected.l2.hit_rate, "dram_bytes": expected.l2.dram_bytes,
                       "reasoning": expected.l2.reasoning}
    assert a["load_sectors_per_request"] == expected.global_ops[0].sectors_per_request
    text = report_text(launch_report_data(report, access=a))
    load = expected.global_ops[0]
    assert re.search(r"\n  access +memory access \(modelled, \d+ threads\): 131,072 B moved", text)
    assert f"line {load.line} load x: {load.sectors_per_request:.2f} sectors/request, 100% efficient" in text
    assert f"{summary['shared_bank_conflicts']:,} bank conflicts; worst: line {worst.line}" in text
    assert f"estimated hit rate {expected.l2.hit_rate:.1%}" in text and "vs ncu" not in text
    assert "memory access (modelled" in LaunchReportView(report, access=a).to_svg()


def test_measure_models_the_accesses_of_a_small_launch():
    view = LaunchReportView.measure(transpose, (2, 2), transpose_args())
    assert [o["array"] for o in view.data["access"]["ops"]] == ["x", "y"]


def test_a_launch_too_large_to_trace_quickly_is_not_modelled_and_says_why(monkeypatch, report):
    monkeypatch.setattr(launch_report, "analyze", lambda *a, **k: pytest.fail("the model ran"))
    big = dataclasses.replace(report.work, elements=MAX_MODELLED_ELEMENTS + 1)
    a = modelled_access(vector_add, (N // TILE,), args(), "sm_90", big)
    assert a == {"message": f"not modelled: the launch moves {MAX_MODELLED_ELEMENTS + 1:,} elements, more than "
                            f"the {MAX_MODELLED_ELEMENTS:,} the interpreter traces quickly "
                            f"(profile.access.analyze models a smaller grid)"}
    assert re.search(r"\n  access +not modelled: the launch moves", report_text(launch_report_data(report, access=a)))


def test_the_report_renders_when_the_model_fails(monkeypatch, report):
    def fail(*args, **kwargs):
        raise RuntimeError("no thread layout")
    monkeypatch.setattr(launch_report, "analyze", fail)
    view = LaunchReportView.measure(vector_add, (N // TILE,), args())
    assert view.data["access"] == {"message": "not modelled: RuntimeError: no thread layout"}
    assert "not modelled: RuntimeError: no thread layout" in view.to_text()
    root = ET.fromstring(view.to_svg())
    assert any("not modelled" in (t.text or "") for t in root.iter() if t.tag.endswith("text"))


def test_device_arrays_are_not_modelled(report):
    class DeviceArray:
        __cuda_array_interface__ = {}
    a = modelled_access(vector_add, (N // TILE,), (DeviceArray(),) * 3 + (TILE,), "sm_90", report.work)
    assert a["message"].startswith("not modelled: TypeError: the model runs the interpreter, which needs NumPy")


def test_measured_sectors_and_hit_rate_stand_beside_the_modelled_ones(report):
    a = modelled_access(vector_add, (N // TILE,), args(), "sm_90", report.work)
    metrics = NcuMetrics("vector_add", {"l2_hit_rate": 50.25, "load_requests": 10, "load_sectors": 160,
                                        "store_requests": 4, "store_sectors": 64})
    text = report_text(launch_report_data(report, metrics, a))
    assert re.search(r"\n  vs ncu +modelled / measured: ", text)
    assert (f"modelled / measured: sectors per load request {a['load_sectors_per_request']:.2f} / 16.00, "
            f"per store request {a['store_sectors_per_request']:.2f} / 16.00, "
            f"L2 hit rate {100 * a['l2']['hit_rate']:.1f}% / 50.2%") in text
    json.dumps(launch_report_data(report, metrics, a))   # plain data, for the widget
