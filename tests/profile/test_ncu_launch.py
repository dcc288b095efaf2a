"""`%%tilekernel --ncu`'s pieces without a GPU: the profiled process rebuilds the cell's launch exactly,
ncu (a fake one here) profiles that process, and the launch report shows what it measured."""
import json
import os
import re
import sys

import numpy as np
import pytest

import tileworkbench.tile as ct
from tileworkbench.profile import ncu
from tileworkbench.profile.ncu import METRICS, NcuMetrics, NcuUnavailable
from tileworkbench.profile.ncu_child import profile_launch, read_launch, write_launch
from tileworkbench.runtime import device
from tileworkbench.widgets.launch_report import launch_report_data, report_svg, report_text

CELL = '''
def scale(x, y, factor, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(y, (i,), ct.load(x, (i,), (TILE,)) * factor)
'''


def test_the_written_launch_rebuilds_the_same_kernel_and_arguments(tmp_path):
    x = np.arange(8, dtype=np.float32)
    original = (x, np.zeros(8, np.float32), 2.5, 4)
    write_launch(tmp_path, CELL, "scale", (2,), original)
    kernel, grid, args = read_launch(tmp_path)
    assert kernel.name == "scale" and grid == (2,)
    np.testing.assert_array_equal(args[0], x)
    assert args[0].dtype == np.float32 and args[2:] == (2.5, 4)
    ct.launch(None, grid, kernel, args)   # the interpreter: the rebuilt kernel does what the cell's does
    np.testing.assert_array_equal(args[1], x * 2.5)
    namespace = {"ct": ct}
    exec(CELL, namespace)
    assert kernel.profile_key(args) == ct.kernel(namespace["scale"]).profile_key(original)   # the same specialization


def test_bfloat16_arrays_travel_as_their_bits(tmp_path):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = np.array([1.5, -2.0, 3.25], dtype=ml_dtypes.bfloat16)
    write_launch(tmp_path, CELL, "scale", (1,), (x, x, 1.0, 4))
    _, _, args = read_launch(tmp_path)
    assert args[0].dtype == x.dtype and args[0].tobytes() == x.tobytes()


def test_numpy_scalars_keep_their_dtype(tmp_path):
    write_launch(tmp_path, CELL, "scale", (np.int64(1),), (np.zeros(4), np.zeros(4), np.float32(0.5), 4))
    _, grid, args = read_launch(tmp_path)
    assert grid == (1,) and type(args[2]) is np.float32 and args[2] == 0.5


def test_arguments_that_cannot_travel_are_named(tmp_path):
    with pytest.raises(ValueError, match=r"argument 3 \(dict\) cannot be sent"):
        write_launch(tmp_path, CELL, "scale", (1,), (np.zeros(4), np.zeros(4), {}, 4))


# A stand-in for ncu: the raw page runs the profiled process's launch on the interpreter and reports
# the output's sum as its "achieved occupancy"; the source pages report one hot line.
FAKE_NCU = '''#!{python}
import sys
argv = sys.argv[1:]
if "--import" in argv:
    print('"Line","Source","Warp Stall Sampling (All Samples)"')
    print('"4","ct.store(y, (i,), ct.load(x, (i,), (TILE,)) * factor)","42"')
elif "-o" in argv:
    open(argv[argv.index("-o") + 1] + ".ncu-rep", "w").close()
else:
    folder = argv[-1]
    assert argv[-3:-1] == ["-m", "tileworkbench.profile.ncu_child"], argv
    import tileworkbench.tile as ct
    from tileworkbench.profile.ncu_child import read_launch
    kernel, grid, args = read_launch(folder)
    ct.launch(None, grid, kernel, args)
    open({record!r}, "w").write(folder)
    print('"ID","Kernel Name","{occupancy}"')
    print('"","","%"')
    print('"0","scale","%s"' % float(args[1].sum()))
'''


def test_one_launch_is_profiled_in_a_process_that_rebuilds_it_and_no_files_stay(monkeypatch, tmp_path):
    record = tmp_path / "folder"
    fake = tmp_path / "ncu"
    fake.write_text(FAKE_NCU.format(python=sys.executable, record=str(record), occupancy=METRICS["achieved_occupancy"]))
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(device, "unavailable_reason", lambda: None)
    measured = profile_launch(CELL, "scale", (2,), (np.ones(8, np.float32), np.zeros(8, np.float32), 3.0, 4))
    assert measured.kernel == "scale" and measured.achieved_occupancy == 24.0   # 8 elements * 3.0
    assert measured.hot_lines == [("ct.store(y, (i,), ct.load(x, (i,), (TILE,)) * factor)", 42.0)]
    assert not os.path.exists(record.read_text())


def test_without_a_gpu_ncu_is_not_run_and_the_reason_is_given(monkeypatch, tmp_path):
    fake = tmp_path / "ncu"
    fake.write_text("#!/bin/sh\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(device, "unavailable_reason", lambda: "no CUDA device found")
    with pytest.raises(NcuUnavailable, match=r"needs a GPU.*no CUDA device found"):
        profile_launch(CELL, "scale", (1,), (np.zeros(4), np.zeros(4), 1.0, 4))


def _report():
    from tileworkbench.profile import LaunchReport, Work
    from tileworkbench.runtime.compiled import CompiledKernel
    from tileworkbench.runtime.cubin import Resources
    compiled = CompiledKernel("scale", "scale", "sm_90", b"", Resources(16, 0, 0, 0), 128)
    return LaunchReport(compiled, (2, 1, 1), Work(64, 32, 8))


def test_the_report_shows_measured_numbers_next_to_the_theoretical_ones():
    metrics = NcuMetrics("scale", {"achieved_occupancy": 87.5, "dram_throughput": 61.25, "l2_throughput": 40.0,
                                   "l2_hit_rate": 12.5, "load_requests": 10, "load_sectors": 40},
                         {"long_scoreboard": 3.5, "barrier": 0.25, "wait": 0.125, "misc": 0.01},
                         [("c = a + b", 120.0), ("i = bid", 3.0)])
    d = launch_report_data(_report(), metrics)
    m = d["measured"]
    assert m["achieved_occupancy"] == 87.5 and m["load_sectors_per_request"] == 4.0
    assert m["store_sectors_per_request"] is None
    assert [s["reason"] for s in m["stalls"]] == ["long_scoreboard", "barrier", "wait"]
    text = report_text(d)
    assert "Nsight Compute: achieved occupancy 87.5%" in text
    assert text.index("limited by") < text.index("achieved occupancy")   # below the theoretical numbers
    assert "DRAM 61.2% of peak  L2 40.0% of peak, hit rate 12.5%" in text
    assert "4.00 per global load request, - per store request" in text
    assert "long_scoreboard 3.50  barrier 0.25  wait 0.12" in text and "misc" not in text
    assert "120 samples: c = a + b" in text
    assert "Nsight Compute: achieved occupancy 87.5%" in report_svg(d)   # the picture the widget shows
    json.dumps(d)   # plain data, for the widget


def test_the_report_says_why_nothing_was_measured():
    d = launch_report_data(_report(), "Nsight Compute is not permitted to read the GPU's performance counters")
    assert d["measured"] == {"message": "Nsight Compute is not permitted to read the GPU's performance counters"}
    assert re.search(r"\n  measured +Nsight Compute is not permitted", report_text(d))
    assert launch_report_data(_report())["measured"] is None and "measured" not in report_text(launch_report_data(_report()))


def test_absent_ncu_is_found_absent(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(ncu, "find_ncu", lambda: None)
    with pytest.raises(NcuUnavailable, match="not installed"):
        profile_launch(CELL, "scale", (1,), (np.zeros(4), np.zeros(4), 1.0, 4))
