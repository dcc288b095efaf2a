"""Nsight Compute collection: a clear message where ncu is absent or not permitted, and the parsing of
its CSV pages."""
import pytest

from tileworkbench.profile import ncu
from tileworkbench.profile.ncu import METRICS, NcuUnavailable, collect, parse_raw, parse_source, unavailable_reason


def test_absent_ncu_says_so_and_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setattr(ncu, "DEFAULT_CUDA_ROOT", str(tmp_path))
    assert ncu.find_ncu() is None
    with pytest.raises(NcuUnavailable, match=r"Nsight Compute \(ncu\) is not installed here.*needs no GPU"):
        collect(["python", "-c", "pass"], kernel="k")


def test_ncu_on_path_is_found(monkeypatch, tmp_path):
    fake = tmp_path / "ncu"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert ncu.find_ncu() == str(fake)


def test_counters_not_permitted_names_the_fix(monkeypatch, tmp_path):
    fake = tmp_path / "ncu"   # what ncu prints when the driver restricts the counters to administrators
    fake.write_text("#!/bin/sh\necho '==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access "
                    "NVIDIA GPU Performance Counters on the target device 0.'\nexit 0\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(NcuUnavailable, match="not permitted.*NVreg_RestrictProfilingToAdminUsers=0"):
        collect(["true"], kernel="k")
    assert unavailable_reason("==PROF== Disconnected\n") is None


def test_raw_page_gives_metrics_and_stalls_per_launch():
    names = ["ID", "Kernel Name", METRICS["load_requests"], METRICS["load_sectors"],
             METRICS["achieved_occupancy"], "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
             "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"]
    units = ["", "", "", "sector", "%", "ratio", "ratio"]
    rows = [["0", "copy", "128", "512", "87.5", "0.25", "3.5"], ["1", "copy", "64", "2,048", "50", "0", "1"]]
    text = "==PROF== Connected to process\nprogram output\n" + "\n".join(
        ",".join(f'"{c}"' for c in r) for r in [names, units, *rows])
    first, second = parse_raw(text)
    assert first.kernel == "copy" and first.achieved_occupancy == 87.5
    assert first.load_sectors_per_request == 4.0 and second.load_sectors_per_request == 32.0
    assert list(first.stalls) == ["long_scoreboard", "barrier"] and first.stalls["barrier"] == 0.25
    assert first.store_sectors_per_request is None and first.dram_throughput is None


def test_source_page_gives_hot_lines_hottest_first():
    text = "\n".join(",".join(f'"{c}"' for c in r) for r in [
        ["#", "Source", "Warp Stall Sampling (All Samples)", "Warp Stall Sampling (Not-issued Samples)"],
        ["1", "i = ct.bid(0)", "0", "0"], ["2", "t = ct.load(x, (i,), (16,))", "120", "100"],
        ["3", "ct.store(y, (i,), t)", "30", "20"]])
    assert parse_source(text) == [("t = ct.load(x, (i,), (16,))", 120.0), ("ct.store(y, (i,), t)", 30.0)]
